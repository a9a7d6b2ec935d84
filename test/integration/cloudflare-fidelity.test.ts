/**
 * What the user sees when Cloudflare answers as it really does (issue 33, the emulator's fidelity):
 * CloudflareCredentials with `authType: globalAPIKey` drive the SDK with `X-Auth-Key` and
 * `X-Auth-Email` (E4), and a key Cloudflare refuses is named on the source; a record the zone's
 * plan does not take (tags on a Free zone, E10) is named on its DNSRecord; an AccessGroup's rules
 * go out as Cloudflare's schema has them and read back unchanged (E8). Real Temporal,
 * kube-apiserver and etcd; Cloudflare is the emulator, read only through the official SDK.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { CLOUDFLARE_API_VERSION, type CloudflareSyncState } from '../../src/api/cloudflare.js';
import { syncStateName } from '../../src/domain/cloudflare/targets.js';
import { cloudflareSuite, createCredentials, hexId, secret, sourceObject, zoneRecords } from '../support/cloudflare.js';
import { eventually, uniq } from '../support/env.js';

const account = hexId();
const OBSERVE_MS = 2_000;
const zoneName = `${uniq('fid')}.example`;
const suite = cloudflareSuite({
  taskQueue: 'cf-fidelity',
  namespace: 'cf-fidelity',
  account: { id: account, name: 'fidelity' },
  zone: zoneName,
  configOverrides: { debounceMs: 200, observeIntervalMs: OBSERVE_MS },
});
const { k } = suite;

const email = 'ops@example.com';
/** A Global API Key in Cloudflare's pre-2026 format (37 lowercase hex). */
const globalKey = secret(hexId().slice(0, 32) + hexId().slice(0, 5));
const keyId = `global-key-${hexId().slice(0, 8)}`;
const credentialsMade: string[] = [];

/** A Secret with the key (and the email, unless left out) and CloudflareCredentials of authType globalAPIKey. */
async function globalKeyCredentials(name: string, data: Record<string, string>): Promise<void> {
  await k.apply({
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: { name: `${name}-key`, namespace: suite.namespace },
    stringData: data,
  } as never);
  credentialsMade.push(name);
  await k.apply({
    apiVersion: CLOUDFLARE_API_VERSION,
    kind: 'CloudflareCredentials',
    metadata: { name },
    spec: {
      accountId: account,
      authType: 'globalAPIKey',
      secretRef: { name: `${name}-key`, namespace: suite.namespace },
      allowedNamespaces: ['*'],
    },
  });
}
afterAll(async () => {
  for (const name of credentialsMade)
    await k.delete({ apiVersion: CLOUDFLARE_API_VERSION, kind: 'CloudflareCredentials', name }).catch(() => undefined);
});

const dnsRecord = (name: string, credentials: string, content: string) =>
  sourceObject(
    'DNSRecord',
    name,
    { name, type: 'A', content, cloudflare: { credentialsRef: { name: credentials }, domain: zoneName } },
    suite.namespace,
  );
const recordRef = (name: string) => ({
  apiVersion: CLOUDFLARE_API_VERSION,
  kind: 'DNSRecord',
  name,
  namespace: suite.namespace,
});
const ready = (kind: string, name: string) => suite.readyOf(kind, name, suite.namespace);

describe('Global API Key credentials (E4)', () => {
  it('write with X-Auth-Key and X-Auth-Email; a key with the wrong email, or without one, is named on the source', async () => {
    await suite.fx.admin.addToken({ token: globalKey, email, id: keyId });
    const good = uniq('gk-good');
    const wrongEmail = uniq('gk-wrong');
    const noEmail = uniq('gk-noemail');
    await globalKeyCredentials(good, { CLOUDFLARE_API_KEY: globalKey, CLOUDFLARE_EMAIL: email });
    await globalKeyCredentials(wrongEmail, { CLOUDFLARE_API_KEY: globalKey, CLOUDFLARE_EMAIL: 'intruder@example.com' });
    await globalKeyCredentials(noEmail, { CLOUDFLARE_API_KEY: globalKey });
    await suite.fx.admin.clearRequests();

    const app = uniq('app');
    await k.apply(dnsRecord(app, good, '192.0.2.10'));
    await eventually('the record written', async () =>
      (await zoneRecords(suite.fx.cf, suite.zoneId)).some((r) => r.name === `${app}.${zoneName}`),
    );
    await eventually('Synced', async () => (await ready('DNSRecord', app))?.reason === 'Synced');
    const writes = await suite.fx.admin.requests({ method: 'POST', path: '/dns_records' });
    expect(writes.length).toBeGreaterThan(0);
    expect(new Set(writes.map((r) => r.tokenId))).toEqual(new Set([keyId]));

    const refused = uniq('refused');
    await k.apply(dnsRecord(refused, wrongEmail, '192.0.2.11'));
    const auth = await eventually('the pair refused', async () => {
      const r = await ready('DNSRecord', refused);
      return r?.reason === 'CloudflareAuth' ? r : undefined;
    });
    expect(auth.message).toContain('[9103] Unknown X-Auth-Key or X-Auth-Email');
    expect(auth.message).not.toContain(globalKey);

    const missing = uniq('missing');
    await k.apply(dnsRecord(missing, noEmail, '192.0.2.12'));
    const secretRefused = await eventually('the missing email named', async () => {
      const r = await ready('DNSRecord', missing);
      return r?.reason === 'CredentialsSecretInvalid' ? r : undefined;
    });
    expect(secretRefused.message).toContain('has no key CLOUDFLARE_EMAIL');
    expect((await zoneRecords(suite.fx.cf, suite.zoneId)).map((r) => r.name)).toEqual([`${app}.${zoneName}`]);

    for (const name of [app, refused, missing]) await k.delete(recordRef(name));
    await eventually(
      'the written record gone with its DNSRecord',
      async () => !(await k.get(recordRef(app))) && (await zoneRecords(suite.fx.cf, suite.zoneId)).length === 0,
    );
  });
});

describe("DNS limits of the zone's plan (E10)", () => {
  it('a DNSRecord with tags on a Free zone shows Cloudflare’s refusal; without them it is written', async () => {
    const creds = uniq('cf-fid-token');
    await createCredentials(k, { name: creds, namespace: suite.namespace, accountId: account });
    const tagged = uniq('tagged');
    const spec = { name: tagged, type: 'TXT', content: 'hello', tags: ['team:web'] };
    const apply = (s: Record<string, unknown>) =>
      k.apply(
        sourceObject(
          'DNSRecord',
          tagged,
          { ...s, cloudflare: { credentialsRef: { name: creds }, domain: zoneName } },
          suite.namespace,
        ),
      );
    await apply(spec);
    const refused = await eventually('refused', async () => {
      const r = await ready('DNSRecord', tagged);
      return r?.status === 'False' && r.reason !== 'Syncing' ? r : undefined;
    });
    expect(refused.message).toContain("[9104] DNS record tags are not available on the zone's plan.");
    expect((await zoneRecords(suite.fx.cf, suite.zoneId)).some((r) => r.name === `${tagged}.${zoneName}`)).toBe(false);

    const { tags: _tags, ...untagged } = spec;
    await apply(untagged);
    await eventually('written without tags', async () =>
      (await zoneRecords(suite.fx.cf, suite.zoneId)).some((r) => r.name === `${tagged}.${zoneName}`),
    );
    await eventually('Synced', async () => (await ready('DNSRecord', tagged))?.reason === 'Synced');
    await k.delete(recordRef(tagged));
    await eventually('gone', async () => !(await k.get(recordRef(tagged))));
  });
});

describe('Access rules as Cloudflare stores them (E8)', () => {
  it('an AccessGroup with GitHub, Azure and bare-IP rules is written in Cloudflare’s schema and stays in sync across observations', async () => {
    const creds = uniq('cf-fid-access');
    await createCredentials(k, { name: creds, namespace: suite.namespace, accountId: account });
    const name = uniq('ag');
    const groupRef = { apiVersion: CLOUDFLARE_API_VERSION, kind: 'AccessGroup', name };
    await k.apply(
      sourceObject('AccessGroup', name, {
        include: [
          { github: { name: 'acme', identityProviderId: 'idp-gh', teams: ['ops'] } },
          { azure: { id: 'grp', identityProviderId: 'idp-az' } },
        ],
        exclude: [{ ipRanges: { ip: ['198.51.100.7', '2001:db8::1'] } }],
        cloudflare: { credentialsRef: { name: creds } },
      }),
    );
    await eventually('Synced', async () => (await suite.readyOf('AccessGroup', name))?.reason === 'Synced');
    const group = (await suite.fx.cf.zeroTrust.access.groups.list({ account_id: account })).result.find(
      (g) => g.name === name,
    );
    expect(group).toMatchObject({
      include: [
        { 'github-organization': { name: 'acme', identity_provider_id: 'idp-gh', team: 'ops' } },
        { azureAD: { id: 'grp', identity_provider_id: 'idp-az' } },
      ],
      exclude: [{ ip: { ip: '198.51.100.7/32' } }, { ip: { ip: '2001:db8::1/128' } }],
    });

    // Observations read the group back: what Cloudflare stored is what the operator wants.
    await suite.fx.admin.clearRequests();
    const state = () =>
      k.get<CloudflareSyncState>({
        apiVersion: CLOUDFLARE_API_VERSION,
        kind: 'CloudflareSyncState',
        name: syncStateName({ resourceType: 'AccessGroup', accountId: account, name }),
      });
    await eventually('observed twice', async () => {
      const reads = await suite.fx.admin.requests({ method: 'GET', path: `/access/groups/${group!.id}` });
      return reads.length >= 2;
    });
    const drifted = (await state())?.status?.conditions?.find((c) => c.type === 'Drifted');
    expect(drifted?.status ?? 'False').toBe('False');
    expect(await suite.fx.admin.requests({ method: 'PUT', path: '/access/groups/' })).toEqual([]);

    await k.delete(groupRef);
    await eventually('gone', async () => !(await k.get(groupRef)));
  });
});
