/**
 * The default cluster id in the ownership markers (DO_CLUSTER_ID unset): derived from the UID of
 * the cluster's kube-system namespace, so two clusters sharing a Cloudflare account and both left
 * at the default never take each other's items for their own. Real Temporal, kube-apiserver and
 * etcd; Cloudflare is the emulator, read only through the official SDK.
 */
import { describe, expect, it } from 'vitest';
import { eventually, uniq } from '../support/env.js';
import { cloudflareSuite, hexId, sourceObject, zoneRecords } from '../support/cloudflare.js';

const account = hexId();
const creds = uniq('cf-cid-acct');
const zoneName = `${uniq('cid')}.example`;
const suite = cloudflareSuite({
  taskQueue: 'cf-cid',
  namespace: 'cf-cid',
  account: { id: account, name: 'cluster-id' },
  zone: zoneName,
  credentials: { name: creds },
  configOverrides: { debounceMs: 200, clusterId: '' }, // DO_CLUSTER_ID unset
});
const { k } = suite;

describe('the default cluster id', () => {
  it("is this cluster's kube-system UID, not a shared `default`: a record made by another cluster at `default` is never taken", async () => {
    const name = uniq('app');
    // Another cluster left at the old default made this record for a DNSRecord of the same name.
    await suite.fx.cf.dns.records.create({
      zone_id: suite.zoneId,
      type: 'TXT',
      name: `${name}.${zoneName}`,
      content: '"theirs"',
      ttl: 1,
      comment: `[managed-by:default:DNSRecord/${suite.namespace}/${name}]`,
    });
    await k.apply(
      sourceObject(
        'DNSRecord',
        name,
        { name, type: 'TXT', content: '"ours"', cloudflare: { credentialsRef: { name: creds }, domain: zoneName } },
        suite.namespace,
      ),
    );
    const uid = (await k.core.readNamespace({ name: 'kube-system' })).metadata!.uid!.replaceAll('-', '');
    const ours = await eventually('our record', async () =>
      (await zoneRecords(suite.fx.cf, suite.zoneId)).find((r) => r.content === '"ours"'),
    );
    expect(ours.comment).toBe(`[managed-by:k-${uid.slice(0, 12)}:DNSRecord/${suite.namespace}/${name}]`);
    const theirs = (await zoneRecords(suite.fx.cf, suite.zoneId)).filter((r) => r.content === '"theirs"');
    expect(theirs, 'the other cluster’s record kept').toHaveLength(1);
  });
});
