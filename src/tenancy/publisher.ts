/**
 * The tenant-service role: writes, reads and deletes tenant configuration in etcd, with exactly
 * the keys and value shapes readers parse, after validation. Used by the `tenants` CLI and by
 * `dev` to seed a demo tenant.
 *
 * A tenant is written in one etcd transaction, so readers see all of its keys change at one
 * revision (never a new meta with an old domain). Concurrent writers of the same tenant are
 * detected through the meta key's mod revision and the write is retried on the fresh state.
 */
import type { Etcd3 } from 'etcd3';
import { documentEntries, documentFromEntry, validateTenantDocument, type TenantView } from './document.js';
import { listPrefix } from './etcd.js';
import {
  DEFAULT_TENANT_PREFIX,
  RESOLVER_KEY,
  classifyKey,
  keyOf,
  normalizePrefix,
  tenantKeyPrefix,
  type ResolverConfig,
} from './model.js';
import { parseResolverConfig, validateResolverConfig, type SkippedItem } from './parse.js';
import { buildSnapshot, type RejectedValue } from './snapshot.js';

export class TenantValidationError extends Error {
  override readonly name = 'TenantValidationError';
  constructor(
    what: string,
    readonly errors: readonly string[],
  ) {
    super(`invalid ${what}:\n  ${errors.join('\n  ')}`);
  }
}

export interface PublishResult {
  /** The etcd revision of the write; a provider has it once `waitForRevision(revision)` resolves. */
  revision: number;
  /** Relative keys written and deleted. */
  written: string[];
  deleted: string[];
}

export interface TenantReading {
  tenant: TenantView;
  /** Keys of this tenant readers would skip as malformed. */
  rejected: RejectedValue[];
}

export type ResolverReading =
  | { state: 'unset' }
  /** `skipped`: parts readers ignore (an unknown httpType …), while the rest is in force. */
  | { state: 'valid'; config: ResolverConfig; skipped: readonly SkippedItem[] }
  | { state: 'invalid'; raw: string; reason: string };

const MAX_ATTEMPTS = 3;

export class TenantPublisher {
  readonly prefix: string;

  constructor(
    private readonly client: Etcd3,
    prefix: string = DEFAULT_TENANT_PREFIX,
  ) {
    this.prefix = normalizePrefix(prefix);
  }

  /**
   * Creates or replaces a tenant: writes every key of the document that differs, deletes the
   * tenant's configuration keys the document no longer has (keys outside the layout are left
   * alone), all in one transaction. Throws TenantValidationError on an invalid document.
   */
  async putTenant(input: unknown): Promise<PublishResult> {
    const validated = validateTenantDocument(input);
    if (!validated.ok) throw new TenantValidationError('tenant', validated.errors);
    const doc = validated.value;
    const desired = new Map(documentEntries(doc));
    const metaKey = keyOf({ kind: 'meta', tenantId: doc.id });
    for (let attempt = 1; attempt <= MAX_ATTEMPTS; attempt++) {
      const existing = await this.readTenantKeys(doc.id);
      const written: string[] = [];
      const deleted: string[] = [];
      const ops = [];
      for (const [key, value] of desired) {
        // The meta key is always written: its mod revision is what concurrent writers compare.
        if (key !== metaKey && existing.get(key)?.value === value) continue;
        ops.push(this.client.put(this.prefix + key).value(value));
        written.push(key);
      }
      for (const key of existing.keys()) {
        if (desired.has(key) || classifyKey(key) === undefined) continue;
        ops.push(this.client.delete().key(this.prefix + key));
        deleted.push(key);
      }
      const res = await this.client
        .if(this.prefix + metaKey, 'Mod', '==', existing.get(metaKey)?.modRevision ?? 0)
        .then(...ops)
        .commit();
      if (res.succeeded) return { revision: Number(res.header.revision), written, deleted };
    }
    throw new Error(`tenant ${doc.id} kept changing while being written (${MAX_ATTEMPTS} attempts); try again`);
  }

  /** The tenant as readers see it, or undefined when it has no keys. */
  async getTenant(id: number): Promise<TenantReading | undefined> {
    const keys = await this.readTenantKeys(id);
    if (keys.size === 0) return undefined;
    const { snapshot, rejected } = buildSnapshot(
      [...keys].map(([key, kv]) => [key, kv.value] as const),
      { revision: 0 },
    );
    const entry = snapshot.tenant(id);
    return entry
      ? { tenant: documentFromEntry(entry), rejected: [...rejected] }
      : { tenant: { id }, rejected: [...rejected] };
  }

  /** Every tenant with any key, by ascending ID. */
  async listTenants(): Promise<TenantView[]> {
    const listing = await listPrefix(this.client, `${this.prefix}tenants/`);
    const { snapshot } = buildSnapshot(
      listing.kvs.map((kv) => [`tenants/${kv.key}`, kv.value] as const),
      { revision: listing.revision },
    );
    return snapshot.entryIds.map((id) => documentFromEntry(snapshot.tenant(id)!));
  }

  /** Deletes every key under `tenants/{id}/`; returns how many there were. */
  async deleteTenant(id: number): Promise<{ revision: number; deleted: number }> {
    const res = await this.client
      .delete()
      .prefix(this.prefix + tenantKeyPrefix(id))
      .exec();
    return { revision: Number(res.header.revision), deleted: Number(res.deleted) };
  }

  /**
   * Validates and publishes `common/resolver`. `createdAt` is kept from the config it replaces;
   * `updatedAt` is now. Throws TenantValidationError when invalid.
   */
  async setResolverConfig(
    input: Partial<ResolverConfig>,
    now = new Date(),
  ): Promise<ResolverConfig & { revision: number }> {
    const previous = await this.getResolverConfig();
    const stamp = now.toISOString();
    const candidate = {
      ...input,
      id: input.id ?? (previous.state === 'valid' ? previous.config.id : 0),
      createdAt: previous.state === 'valid' && previous.config.createdAt ? previous.config.createdAt : stamp,
      updatedAt: stamp,
    };
    const validated = validateResolverConfig(candidate);
    if (!validated.ok) throw new TenantValidationError('resolver config', [validated.reason]);
    const res = await this.client
      .put(this.prefix + RESOLVER_KEY)
      .value(JSON.stringify(validated.value))
      .exec();
    return { ...validated.value, revision: Number(res.header.revision) };
  }

  async getResolverConfig(): Promise<ResolverReading> {
    const raw = await this.client.get(this.prefix + RESOLVER_KEY).string();
    if (raw === null) return { state: 'unset' };
    const parsed = parseResolverConfig(raw);
    if (!parsed.ok) return { state: 'invalid', raw, reason: parsed.reason };
    return { state: 'valid', config: parsed.value, skipped: parsed.skipped ?? [] };
  }

  /** Relative key → value and mod revision, for one tenant. */
  private async readTenantKeys(id: number): Promise<Map<string, { value: string; modRevision: number }>> {
    const tenantPrefix = tenantKeyPrefix(id);
    const listing = await listPrefix(this.client, this.prefix + tenantPrefix);
    return new Map(listing.kvs.map((kv) => [tenantPrefix + kv.key, { value: kv.value, modRevision: kv.modRevision }]));
  }
}
