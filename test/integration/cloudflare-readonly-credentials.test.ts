/**
 * One team's read-only token never breaks the others (issue 23, D1). Two targets of one account —
 * a DNSRecord in each of two zones — written with different CloudflareCredentials; one token may
 * read DNS but not edit it (Cloudflare answers its writes 403/10000). The target of the read-only
 * credentials shows the failure on its source, naming the permission to grant, and tries again
 * on its observations only (a few calls per interval, never a hot loop) until the permission is
 * granted; meanwhile the other target syncs, changes and is deleted as if nothing were wrong.
 */
import { expect, it } from 'vitest';
import { tokenId } from '../emulators/cloudflare/auth.js';
import {
  createCredentials,
  cloudflareSuite,
  hexId,
  requestMark,
  requestsSince,
  sourceObject,
  zoneRecords,
} from '../support/cloudflare.js';
import { eventually, testConfig, uniq } from '../support/env.js';
import { logger } from '../../src/log.js';
import { connectRenewingWorker } from '../../src/temporal/connection.js';
import { CloudflareAccountWorkers } from '../../src/workers/cloudflare-accounts.js';

const account = hexId();
const writer = uniq('cf-ro-writer');
const reader = uniq('cf-ro-reader');
const zoneA = `${uniq('ro-a')}.example`;
const zoneB = `${uniq('ro-b')}.example`;
const readOnlyToken = `cf-dns-read-${hexId()}`;
const OBSERVE_MS = 3_000;
const suite = cloudflareSuite({
  taskQueue: 'cf-readonly',
  namespace: 'cf-readonly',
  account: { id: account, name: 'read-only' },
  zone: zoneA,
  credentials: { name: writer },
  configOverrides: { debounceMs: 200, observeIntervalMs: OBSERVE_MS },
});
const { k } = suite;

const dnsRecord = (name: string, zone: string, credentials: string, content: string) =>
  sourceObject(
    'DNSRecord',
    name,
    { name, type: 'A', content, cloudflare: { credentialsRef: { name: credentials }, domain: zone } },
    suite.namespace,
  );

it("a target whose credentials cannot write shows the missing permission and retries on its observations; another team's target syncs and is deleted", async () => {
  const { admin, cf } = suite.fx;
  const { zones } = await admin.seed({ zones: [{ name: zoneB, account_id: account }] });
  const zoneBId = zones[0]!.id;
  await admin.addToken({ token: readOnlyToken, permissions: ['zone:read', 'dns:read'] });
  await createCredentials(k, { name: reader, namespace: suite.namespace, accountId: account, token: readOnlyToken });
  const content = async (zoneId: string, fqdn: string) =>
    (await zoneRecords(cf, zoneId)).find((r) => r.name === fqdn)?.content;
  const ready = (name: string) => suite.readyOf('DNSRecord', name, suite.namespace);

  const blocked = uniq('blocked');
  const fine = uniq('fine');
  await k.apply(dnsRecord(blocked, zoneB, reader, '192.0.2.1'));
  await k.apply(dnsRecord(fine, zoneA, writer, '192.0.2.1'));

  const refused = await eventually('the read-only target shows the refusal', async () => {
    const c = await ready(blocked);
    return c?.status === 'False' && c.reason !== 'Syncing' ? c : undefined;
  });
  expect(refused.reason).toBe('CloudflareAuth');
  expect(refused.message).toContain('[10000] Authentication error');
  expect(refused.message).toContain('DNS Edit'); // the permission to grant, by Cloudflare's name
  expect(refused.message).not.toContain(readOnlyToken);

  // The other team's target: written, changed and deleted while the first stays refused.
  await eventually(
    'the other record written',
    async () => (await content(suite.zoneId, `${fine}.${zoneA}`)) === '192.0.2.1',
  );
  await eventually('the other record Ready', async () => (await ready(fine))?.reason === 'Synced');
  await k.apply(dnsRecord(fine, zoneA, writer, '192.0.2.2'));
  await eventually('its change written', async () => (await content(suite.zoneId, `${fine}.${zoneA}`)) === '192.0.2.2');
  await k.delete({ ...dnsRecord(fine, zoneA, writer, ''), name: fine, namespace: suite.namespace });
  await eventually('its deletion complete: record and object gone', async () => {
    const gone = (await content(suite.zoneId, `${fine}.${zoneA}`)) === undefined;
    return gone && !(await k.get({ ...dnsRecord(fine, zoneA, writer, ''), name: fine, namespace: suite.namespace }));
  });

  // Retries of the refused target: on its observations, not in a loop.
  const mark = await requestMark(admin);
  const windowMs = 4 * OBSERVE_MS;
  await new Promise((r) => setTimeout(r, windowMs));
  const calls = (await requestsSince(admin, mark)).filter((r) => r.tokenId === tokenId(readOnlyToken));
  const refusals = calls.filter((r) => r.status === 403);
  console.log(`read-only token over ${windowMs} ms: ${calls.length} call(s), ${refusals.length} refused`);
  expect(refusals.length).toBeGreaterThanOrEqual(1); // it still tries
  expect(calls.length).toBeLessThanOrEqual(3 * (windowMs / OBSERVE_MS + 1)); // a read and a write per observation, at most
  expect((await ready(blocked))?.reason).toBe('CloudflareAuth');

  // Granted the permission, it is written on its next try, with nothing changed on the object.
  await admin.addToken({ token: readOnlyToken, permissions: ['zone:read', 'dns:edit'] });
  await eventually(
    'written once granted',
    async () => (await content(zoneBId, `${blocked}.${zoneB}`)) === '192.0.2.1',
    {
      timeoutMs: 5 * OBSERVE_MS,
    },
  );
  await eventually('Ready once granted', async () => (await ready(blocked))?.reason === 'Synced');
  await k.delete({ ...dnsRecord(blocked, zoneB, reader, ''), name: blocked, namespace: suite.namespace });
  await eventually('its record removed', async () => (await content(zoneBId, `${blocked}.${zoneB}`)) === undefined);
}, 180_000);

it('credentials created while a worker runs: their account is served when their event arrives, not at a later check', async () => {
  const cfg = testConfig(suite.taskQueue, { cloudflare: suite.cloudflareConfig() });
  const connection = await connectRenewingWorker(cfg.temporal);
  const log = logger.child({ test: true });
  log.level = 'warn';
  // It checks its accounts again only in ten minutes: what it serves meanwhile comes from its watch.
  const workers = new CloudflareAccountWorkers({ connection, cfg, kube: k, log, pollMs: 10 * 60_000 });
  await workers.start();
  try {
    const late = hexId();
    expect(workers.accounts()).not.toContain(late);
    await createCredentials(k, { name: uniq('cf-late-creds'), namespace: suite.namespace, accountId: late });
    await eventually('the new account served', async () => workers.accounts().includes(late), { timeoutMs: 20_000 });
  } finally {
    await workers.stop();
    await connection.close();
  }
});
