/**
 * Changes go ahead of periodic observations (issue 23, D7). A target's workflow is its one
 * writer, so while a periodic observation of it runs (its calls waiting for the API budget behind
 * other observations, or Cloudflare slow to answer), a change to one of its sources could only be
 * written once the observation was done. Here Cloudflare holds the observation's read for 30 s:
 * the change is still written within seconds — the observation is cancelled (its call aborted,
 * nothing of it recorded) and the change synced — and observations go on afterwards.
 */
import { expect, it } from 'vitest';
import { CLOUDFLARE_API_VERSION, type CloudflareSyncState } from '../../src/api/cloudflare.js';
import { syncStateName, syncWorkflowId, type SyncTarget } from '../../src/domain/cloudflare/targets.js';
import {
  cloudflareSuite,
  hexId,
  requestMark,
  requestsSince,
  sourceObject,
  zoneRecords,
} from '../support/cloudflare.js';
import { eventually, replayAndRecord, uniq } from '../support/env.js';

const account = hexId();
const creds = uniq('cf-change-first');
const zoneName = `${uniq('change-first')}.example`;
const OBSERVE_MS = 3_000;
const HOLD_MS = 30_000;
const suite = cloudflareSuite({
  taskQueue: 'cf-change-first',
  namespace: 'cf-change-first',
  account: { id: account, name: 'change first' },
  zone: zoneName,
  credentials: { name: creds },
  configOverrides: { debounceMs: 200, observeIntervalMs: OBSERVE_MS },
});
const { k } = suite;

const dnsRecord = (name: string, content: string) =>
  sourceObject(
    'DNSRecord',
    name,
    { name, type: 'A', content, cloudflare: { credentialsRef: { name: creds }, domain: zoneName } },
    suite.namespace,
  );

it('a change is written within seconds while an observation of its target is held, and observations go on', async () => {
  const { admin } = suite.fx;
  const name = uniq('app');
  const fqdn = `${name}.${zoneName}`;
  const content = async () => (await zoneRecords(suite.fx.cf, suite.zoneId)).find((r) => r.name === fqdn)?.content;
  const reads = `^/zones/${suite.zoneId}/dns_records$`;
  await k.apply(dnsRecord(name, '192.0.2.1'));
  await eventually('the record in Cloudflare', async () => (await content()) === '192.0.2.1');
  await eventually(
    'Ready Synced',
    async () => (await suite.readyOf('DNSRecord', name, suite.namespace))?.reason === 'Synced',
  );
  // Idle now: the next read of the record set is a periodic observation's. Cloudflare holds it.
  const idle = await requestMark(admin);
  await eventually('an observation', async () => (await requestsSince(admin, idle, { path: reads })).length > 0, {
    timeoutMs: 20_000,
  });
  const fault = await admin.addFault({ method: 'GET', path: reads, latencyMs: HOLD_MS, times: 1 });
  await eventually(
    'the next observation held',
    async () => (await admin.faults()).find((f) => f.id === fault.id)?.hits === 1,
    { timeoutMs: 20_000, intervalMs: 100 },
  );

  const changedAt = Date.now();
  await k.apply(dnsRecord(name, '192.0.2.2'));
  await eventually('the change in Cloudflare', async () => (await content()) === '192.0.2.2', {
    timeoutMs: HOLD_MS + 30_000,
    intervalMs: 100,
  });
  const changeToWrite = Date.now() - changedAt;
  console.log(`change to write while an observation is held: ${changeToWrite} ms`);

  // The observation comes back on its interval, and the cancelled one left no failure behind.
  const after = await requestMark(admin);
  await eventually(
    'observed again',
    async () => (await requestsSince(admin, after, { method: 'GET', path: reads })).length >= 2,
    { timeoutMs: 4 * OBSERVE_MS },
  );
  const target: SyncTarget = {
    resourceType: 'DNSRecord',
    accountId: account,
    zoneId: suite.zoneId,
    zone: zoneName,
    name: fqdn,
    type: 'A',
  };
  const state = (await k.get({
    apiVersion: CLOUDFLARE_API_VERSION,
    kind: 'CloudflareSyncState',
    name: syncStateName(target),
  })) as CloudflareSyncState | undefined;
  expect(state?.status).toMatchObject({ syncStatus: 'Synced', retryCount: 0 });
  expect(await suite.readyOf('DNSRecord', name, suite.namespace)).toMatchObject({ status: 'True', reason: 'Synced' });

  // The target's history (with the change during the observation) replays on today's code.
  await k.delete({ ...dnsRecord(name, ''), name, namespace: suite.namespace });
  await eventually('the record removed', async () => (await content()) === undefined);
  await replayAndRecord(syncWorkflowId(target), 'cloudflare-sync-change-during-observation');

  // Before: the change waited for the held observation (≥ 30 s).
  expect(changeToWrite).toBeLessThan(8_000);
}, 180_000);
