/**
 * Zero Trust identity providers: the target is (account, provider name); its one item is the
 * provider, owned by the ID the SyncState remembers (./owned-by-id.ts). The client secret is
 * read from its Secret when the provider is written, and only a digest of it is kept
 * (`status.resultData.secretDigest`), so a rotated Secret is noticed and written — Cloudflare
 * never answers the secret back. The digest is keyed (HMAC) by a key the worker alone holds: the
 * SyncState is cluster-scoped and widely readable, and an unkeyed hash there would let its
 * readers test guesses of the secret (issue 23, D25).
 */
import { createHmac } from 'node:crypto';
import type Cloudflare from 'cloudflare';
import { desiredOwnedObjects } from '../../../domain/cloudflare/aggregate.js';
import { identityProviderCodec, type IdentityProviderItem } from '../../../domain/cloudflare/items.js';
import type { SyncTarget } from '../../../domain/cloudflare/targets.js';
import type { TargetAdapter, TargetContext } from './adapter.js';
import { unlessNotFound } from '../errors.js';
import { readOwnedById, writeOwnedById, type OwnedObjectCalls } from './owned-by-id.js';

type ProviderTarget = Extract<SyncTarget, { resourceType: 'AccessIdentityProvider' }>;

/** The SDK's provider bodies (a union per provider type; ours is checked by the kind's schema), and its list filter (the API also takes `name`). */
type ProviderParams = Parameters<Cloudflare['zeroTrust']['identityProviders']['create']>[0];
type ProviderListParams = Parameters<Cloudflare['zeroTrust']['identityProviders']['list']>[0];

interface LiveProvider {
  id?: string;
  name?: string;
  type?: string;
  config?: Record<string, unknown>;
  scim_config?: Record<string, unknown>;
}

const item = (p: LiveProvider): IdentityProviderItem => ({
  id: p.id,
  name: p.name ?? '',
  type: p.type ?? '',
  config: p.config ?? {},
  ...(p.scim_config ? { scim_config: p.scim_config } : {}),
});

/**
 * A keyed digest of a secret: enough to notice a rotation, useless to recover or test the value
 * without the key. The `hmac-sha256:` prefix tells it from the former unkeyed 16-hex digest, which
 * never equals it: a provider recorded with that one is written once more, then carries this.
 */
const digest = (key: Buffer, secret: string) =>
  `hmac-sha256:${createHmac('sha256', key).update(secret).digest('hex').slice(0, 32)}`;

function calls(cf: Cloudflare, t: ProviderTarget, ctx: TargetContext): OwnedObjectCalls<IdentityProviderItem> {
  const api = cf.zeroTrust.identityProviders;
  const account = { account_id: t.accountId };
  /** The write body, with the client secret read from its Secret now; returns its digest too. */
  const body = async (p: IdentityProviderItem) => {
    const secret = p.secret_ref ? await ctx.secret(p.secret_ref) : undefined;
    return {
      digest: secret === undefined ? null : digest(await ctx.digestKey(), secret),
      params: {
        ...account,
        name: p.name,
        type: p.type,
        config: { ...p.config, ...(secret !== undefined ? { client_secret: secret } : {}) },
        ...(p.scim_config ? { scim_config: p.scim_config } : {}),
      },
    };
  };
  return {
    get: async (id) => {
      const p = await unlessNotFound(api.get(id, account));
      return p && item(p as LiveProvider);
    },
    async named(name) {
      const out: IdentityProviderItem[] = [];
      for await (const p of api.list({ ...account, name } as ProviderListParams))
        if ((p as LiveProvider).name === name) out.push(item(p as LiveProvider));
      return out;
    },
    async create(p) {
      const b = await body(p);
      const created = await api.create(b.params as ProviderParams);
      await ctx.remember({ secretDigest: b.digest });
      return created.id!;
    },
    async update(id, p) {
      const b = await body(p);
      await api.update(id, b.params as ProviderParams);
      await ctx.remember({ secretDigest: b.digest });
    },
    remove: async (id) => void (await unlessNotFound(api.delete(id, account))),
  };
}

export const identityProviderAdapter: TargetAdapter<IdentityProviderItem> = {
  codec: identityProviderCodec,
  desired: (sources, clusterId) => desiredOwnedObjects<IdentityProviderItem>(sources, clusterId),
  // The digest of the Secret's value as it is now: a rotation makes the desired item differ.
  complete: (desired, ctx) =>
    Promise.all(
      desired.map(async (d) =>
        d.item.secret_ref
          ? {
              ...d,
              item: {
                ...d.item,
                secret_digest: digest(await ctx.digestKey(), await ctx.secret(d.item.secret_ref)),
              },
            }
          : d,
      ),
    ),
  async read(cf, target, ctx) {
    const t = target as ProviderTarget;
    const live = await readOwnedById(t.name, ctx, calls(cf, t, ctx));
    // Ours carries the digest of the secret it was last written with.
    const secretDigest = ctx.data.secretDigest;
    return {
      ...live,
      items: live.items.map((p) => (p.marker && secretDigest ? { ...p, secret_digest: secretDigest } : p)),
    };
  },
  async write(cf, target, plan, live, ctx) {
    const t = target as ProviderTarget;
    const id = await writeOwnedById(plan, live, identityProviderCodec, ctx, calls(cf, t, ctx));
    return id ? { cloudflareId: id } : {};
  },
};
