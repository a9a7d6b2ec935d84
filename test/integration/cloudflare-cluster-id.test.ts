/**
 * The default cluster id in the ownership markers (DO_CLUSTER_ID unset): derived from the UID of
 * the cluster's kube-system namespace, so two clusters sharing a Cloudflare account and both left
 * at the default never take each other's items for their own. Real Temporal, kube-apiserver and
 * etcd; Cloudflare is the emulator, read only through the official SDK.
 */
import { describe, expect, it } from 'vitest';
import { CLOUDFLARE_API_VERSION } from '../../src/api/cloudflare.js';
import type { CloudflareConfig } from '../../src/config.js';
import { sourceWorkflowId, syncWorkflowId } from '../../src/domain/cloudflare/targets.js';
import { cloudflareSourceWorkflow, sourceChangedSignal } from '../../src/workflows/cloudflare/contract.js';
import { eventually, temporal, uniq } from '../support/env.js';
import { cloudflareSuite, entrypointRules, hexId, sourceObject, zoneRecords } from '../support/cloudflare.js';

const account = hexId();
const creds = uniq('cf-cid-acct');
const zoneName = `${uniq('cid')}.example`;
/** The worker's settings at its next start (a test restarts it as another cluster's). */
const configOverrides: Partial<CloudflareConfig> = { debounceMs: 200, clusterId: '' };
const suite = cloudflareSuite({
  taskQueue: 'cf-cid',
  namespace: 'cf-cid',
  account: { id: account, name: 'cluster-id' },
  zone: zoneName,
  credentials: { name: creds },
  configOverrides, // DO_CLUSTER_ID unset
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

describe('ownership after a restore (issue 33, N12)', () => {
  it('a new cluster that gets the SyncStates back keeps the cluster id they were written with: no duplicate, the rule still ours', async () => {
    const PHASE = 'http_request_firewall_custom';
    // The old cluster: its derived id was this (DO_CLUSTER_ID unset there too).
    const oldId = 'k-0a1b2c3d4e5f';
    await suite.stopWorker();
    configOverrides.clusterId = oldId;
    await suite.startWorker();
    const name = uniq('restored');
    const ruleset = (expression: string) =>
      sourceObject(
        'ZoneRuleset',
        name,
        { zone: zoneName, phase: PHASE, credentialsRef: { name: creds }, rules: [{ expression, action: 'block' }] },
        suite.namespace,
      );
    await k.apply(ruleset('ip.src eq 192.0.2.81'));
    const marker = `[managed-by:${oldId}:ZoneRuleset/${suite.namespace}/${name}]`;
    await eventually('written with the old id', async () =>
      (await entrypointRules(suite.fx.cf, suite.zoneId, PHASE)).some((r) => r.description === marker),
    );

    // The restore: the same sources and SyncStates in a cluster whose kube-system UID differs,
    // with a new Temporal (no workflow of before), the cluster id left unset.
    await suite.stopWorker();
    const c = await temporal();
    const ref = { kind: 'ZoneRuleset', namespace: suite.namespace, name };
    const target = { resourceType: 'ZoneRuleset' as const, accountId: account, zoneId: suite.zoneId, phase: PHASE };
    for (const id of [sourceWorkflowId(ref), syncWorkflowId(target)])
      await c.workflow.getHandle(id).terminate('test: a restore into a new cluster');
    configOverrides.clusterId = '';
    await suite.startWorker();
    await k.apply(ruleset('ip.src eq 192.0.2.82'));
    await c.workflow.signalWithStart(cloudflareSourceWorkflow, {
      workflowId: sourceWorkflowId(ref),
      taskQueue: suite.taskQueue,
      args: [{ ref }],
      signal: sourceChangedSignal,
      signalArgs: [{ event: 'test' }],
    });
    await eventually('the change written', async () =>
      (await entrypointRules(suite.fx.cf, suite.zoneId, PHASE)).some((r) => r.expression === 'ip.src eq 192.0.2.82'),
    );
    const rules = await entrypointRules(suite.fx.cf, suite.zoneId, PHASE);
    expect(rules.map((r) => [r.description, r.expression])).toEqual([[marker, 'ip.src eq 192.0.2.82']]);

    await k.delete({ apiVersion: CLOUDFLARE_API_VERSION, kind: 'ZoneRuleset', namespace: suite.namespace, name });
    await eventually('removed: it was still ours', async () =>
      (await entrypointRules(suite.fx.cf, suite.zoneId, PHASE)).every((r) => r.description !== marker),
    );
    expect(await entrypointRules(suite.fx.cf, suite.zoneId, PHASE)).toEqual([]);
  });
});
