/**
 * The seed's three scenarios end to end: real Temporal, kube-apiserver and etcd; Cloudflare is
 * the emulator, read and seeded only through the official SDK. The watcher starts each source's
 * workflow, the sources register with their target's sync workflow, and that one workflow
 * GET-merge-writes the shared Cloudflare object.
 */
import Cloudflare from 'cloudflare';
import { describe, expect, it } from 'vitest';
import { CLOUDFLARE_API_VERSION, CLOUDFLARE_GROUP, type CloudflareSyncState } from '../../src/api/cloudflare.js';
import { TUNNEL_BINDING_VERSION } from '../../src/api/cloudflare-tunnels.js';
import { tokenId } from '../emulators/cloudflare/auth.js';
import { cloudflareSourceWorkflow, sourceChangedSignal } from '../../src/workflows/cloudflare/contract.js';
import { sourceWorkflowId, syncStateName, syncWorkflowId } from '../../src/domain/cloudflare/targets.js';
import { eventually, replayAndRecord, temporal, uniq } from '../support/env.js';
import {
  createCredentials,
  cloudflareSuite,
  entrypointRules,
  hexId,
  includeList,
  requestMark,
  requestsSince,
  sourceObject,
} from '../support/cloudflare.js';

const PHASE = 'http_request_firewall_custom';
const defaultAccount = hexId();
const defaultCredentials = uniq('cf-default');
const suite = cloudflareSuite({
  taskQueue: 'cf-agg',
  namespace: 'cf',
  account: { id: defaultAccount, name: 'default account' },
  credentials: { name: defaultCredentials, isDefault: true },
  configOverrides: { debounceMs: 200 },
});
const { k, namespace, readyOf } = suite;
const source = sourceObject;

describe('scenario 1: several DeviceSettingsPolicy feed one split-tunnel include list', () => {
  it('keeps both entries, keeps an entry added outside the operator, and removes only the deleted policy', async () => {
    const account = hexId();
    const creds = uniq('cf-acct');
    await suite.fx.admin.seed({ accounts: [{ id: account }] });
    await createCredentials(k, { name: creds, namespace, accountId: account });
    const external = { address: '172.16.0.0/12', description: 'Added by an admin in the dashboard' };
    await suite.fx.cf.zeroTrust.devices.policies.default.includes.update({ account_id: account, body: [external] });

    const aws = uniq('aws-vpc-proxy');
    const office = uniq('office-network');
    const policy = (entry: { address: string; description: string }) => ({
      splitTunnelMode: 'include',
      splitTunnelInclude: [entry],
      cloudflare: { credentialsRef: { name: creds } },
    });
    await k.apply(source('DeviceSettingsPolicy', aws, policy({ address: '10.0.0.0/8', description: 'AWS VPC' })));
    await k.apply(
      source('DeviceSettingsPolicy', office, policy({ address: '192.168.1.0/24', description: 'Office Network' })),
    );

    const both = await eventually('both policies in the include list', async () => {
      const list = await includeList(suite.fx.cf, account);
      return list.length === 3 ? list : undefined;
    });
    expect(both[0]).toEqual(external); // untouched, in place
    expect(both).toContainEqual({
      address: '10.0.0.0/8',
      description: `AWS VPC [managed-by:default:DeviceSettingsPolicy/${aws}]`,
    });
    expect(both).toContainEqual({
      address: '192.168.1.0/24',
      description: `Office Network [managed-by:default:DeviceSettingsPolicy/${office}]`,
    });
    // Each source says so on its own status.
    for (const name of [aws, office])
      await eventually(`${name} Ready`, async () => (await readyOf('DeviceSettingsPolicy', name))?.status === 'True');

    // One SyncState for the (account, include) target, listing both sources.
    const stateName = syncStateName({ resourceType: 'DeviceSettingsPolicy', accountId: account, list: 'include' });
    const state = await eventually('SyncState', () =>
      k.get<CloudflareSyncState>({ apiVersion: CLOUDFLARE_API_VERSION, kind: 'CloudflareSyncState', name: stateName }),
    );
    expect(state.spec.sources?.map((s) => s.ref.name).sort()).toEqual([aws, office].sort());
    expect(state.status?.syncStatus).toBe('Synced');

    await k.delete({ apiVersion: CLOUDFLARE_API_VERSION, kind: 'DeviceSettingsPolicy', name: office });
    const after = await eventually('office-network removed', async () => {
      const list = await includeList(suite.fx.cf, account);
      return list.length === 2 ? list : undefined;
    });
    expect(after).toEqual([
      external,
      { address: '10.0.0.0/8', description: `AWS VPC [managed-by:default:DeviceSettingsPolicy/${aws}]` },
    ]);
    // The finalizer was released only after Cloudflare reflected the removal.
    await eventually(
      'office-network object gone',
      async () => !(await k.get({ apiVersion: CLOUDFLARE_API_VERSION, kind: 'DeviceSettingsPolicy', name: office })),
    );
    await k.delete({ apiVersion: CLOUDFLARE_API_VERSION, kind: 'DeviceSettingsPolicy', name: aws });
    await eventually('only the external entry left', async () => {
      const list = await includeList(suite.fx.cf, account);
      return list.length === 1 && list[0]!.address === external.address;
    });
    // With no source left, the target's workflow deletes its SyncState and ends.
    await eventually(
      'the SyncState deleted',
      async () => !(await k.get({ apiVersion: CLOUDFLARE_API_VERSION, kind: 'CloudflareSyncState', name: stateName })),
      { timeoutMs: 120_000 },
    );
    await replayAndRecord(
      sourceWorkflowId({ kind: 'DeviceSettingsPolicy', name: office }),
      'cloudflare-source-deleted',
    );
    await replayAndRecord(
      syncWorkflowId({ resourceType: 'DeviceSettingsPolicy', accountId: account, list: 'include' }),
      'cloudflare-sync-emptied',
    );
  });
});

describe('scenarios 2 and 3: ZoneRulesets of two teams share one phase, next to a manual rule', () => {
  it('puts both teams rules next to the manual one, removes only team A on delete, never touches the manual rule', async () => {
    const zoneName = `${uniq('z')}.example.com`;
    const { zones } = await suite.fx.admin.seed({ zones: [{ name: zoneName, account_id: defaultAccount }] });
    const zoneId = zones[0]!.id;
    const manual = { action: 'block', expression: 'ip.src eq 203.0.113.7', description: 'Manual rule by admin' };
    await suite.fx.cf.rulesets.phases.update(PHASE as never, { zone_id: zoneId, rules: [manual as never] });
    const [manualRule] = await entrypointRules(suite.fx.cf, zoneId, PHASE);

    const teamA = uniq('waf-rules-team-a');
    const teamB = uniq('waf-rules-team-b');
    const ruleset = (cidr: string) => ({
      zone: zoneName,
      phase: PHASE,
      rules: [{ expression: `ip.src in {${cidr}}`, action: 'block' }],
    });
    await k.apply(source('ZoneRuleset', teamA, ruleset('1.2.3.0/24'), namespace));
    await k.apply(source('ZoneRuleset', teamB, ruleset('5.6.7.0/24'), namespace));

    const rules = await eventually('both teams in the entrypoint', async () => {
      const r = await entrypointRules(suite.fx.cf, zoneId, PHASE);
      return r.length === 3 ? r : undefined;
    });
    expect(rules[0]).toEqual(manualRule); // same id, version, fields: never modified
    expect(rules.map((r) => r.description)).toEqual([
      'Manual rule by admin',
      `[managed-by:default:ZoneRuleset/${namespace}/${teamA}]`,
      `[managed-by:default:ZoneRuleset/${namespace}/${teamB}]`,
    ]);
    for (const name of [teamA, teamB])
      await eventually(`${name} Ready`, async () => (await readyOf('ZoneRuleset', name, namespace))?.status === 'True');

    // Re-aggregation on demand: one GET, and no write since nothing changed.
    const workflowId = syncWorkflowId({ resourceType: 'ZoneRuleset', accountId: defaultAccount, zoneId, phase: PHASE });
    await suite.fx.admin.clearRequests();
    await (await temporal()).workflow.getHandle(workflowId).signal('reaggregate');
    const calls = await eventually('the re-aggregation GET', async () => {
      const log = await suite.fx.admin.requests({ path: `/zones/${zoneId}/rulesets` });
      return log.length ? log : undefined;
    });
    await new Promise((r) => setTimeout(r, 1500));
    const after = await suite.fx.admin.requests({ path: `/zones/${zoneId}/rulesets` });
    expect(after.filter((r) => r.method === 'GET').length).toBeGreaterThanOrEqual(calls.length);
    expect(after.filter((r) => r.method !== 'GET')).toEqual([]);

    await k.delete({ apiVersion: CLOUDFLARE_API_VERSION, kind: 'ZoneRuleset', namespace, name: teamA });
    const left = await eventually('team A removed', async () => {
      const r = await entrypointRules(suite.fx.cf, zoneId, PHASE);
      return r.length === 2 ? r : undefined;
    });
    expect(left[0]).toEqual(manualRule);
    expect(left[1]!.description).toBe(`[managed-by:default:ZoneRuleset/${namespace}/${teamB}]`);
    expect(left[1]!.expression).toBe('ip.src in {5.6.7.0/24}');

    await k.delete({ apiVersion: CLOUDFLARE_API_VERSION, kind: 'ZoneRuleset', namespace, name: teamB });
    await eventually('only the manual rule left', async () => {
      const r = await entrypointRules(suite.fx.cf, zoneId, PHASE);
      return r.length === 1 && r[0]!.id === manualRule!.id ? r : undefined;
    });
    expect((await entrypointRules(suite.fx.cf, zoneId, PHASE))[0]).toEqual(manualRule);
  });
});

describe('one identity per target: sources of one target naming different credentials', () => {
  it("writes only with the target's own credentials; a later team's read-only token shows CredentialsConflict and never breaks the first team", async () => {
    const zoneName = `${uniq('id')}.example.com`;
    const { zones } = await suite.fx.admin.seed({ zones: [{ name: zoneName, account_id: defaultAccount }] });
    const zoneId = zones[0]!.id;
    const writer = uniq('cf-writer');
    const reader = uniq('cf-reader');
    const readOnlyToken = `cf-ro-${hexId()}`;
    await suite.fx.admin.addToken({ token: readOnlyToken, readOnly: true });
    await createCredentials(k, { name: writer, namespace, accountId: defaultAccount });
    await createCredentials(k, { name: reader, namespace, accountId: defaultAccount, token: readOnlyToken });
    // The emulator refuses the read-only token's writes as Cloudflare does, through the SDK.
    const readOnly = new Cloudflare({ apiToken: readOnlyToken, baseURL: suite.fx.emulator.baseURL, maxRetries: 0 });
    await expect(readOnly.rulesets.phases.update(PHASE as never, { zone_id: zoneId, rules: [] })).rejects.toMatchObject(
      { status: 403 },
    );

    const teamB = uniq('team-b');
    const teamA = uniq('team-a');
    const ruleset = (credentials: string, cidrs: string[]) => ({
      zone: zoneName,
      phase: PHASE,
      credentialsRef: { name: credentials },
      rules: cidrs.map((c) => ({ expression: `ip.src in {${c}}`, action: 'block' })),
    });
    await k.apply(source('ZoneRuleset', teamB, ruleset(writer, ['5.6.7.0/24']), namespace));
    await eventually('team B Ready', async () => (await readyOf('ZoneRuleset', teamB, namespace))?.status === 'True');
    const mark = await requestMark(suite.fx.admin);

    await k.apply(source('ZoneRuleset', teamA, ruleset(reader, ['1.2.3.0/24']), namespace));
    const conflict = await eventually('team A shows CredentialsConflict', async () => {
      const c = await readyOf('ZoneRuleset', teamA, namespace);
      return c?.reason === 'CredentialsConflict' ? c : undefined;
    });
    expect(conflict.status).toBe('False');
    expect(conflict.message).toContain(`CloudflareCredentials ${writer}`);
    expect(conflict.message).toContain(reader);

    // Team B keeps syncing, with its own credentials, and nothing of A is written.
    await k.apply(source('ZoneRuleset', teamB, ruleset(writer, ['5.6.7.0/24', '9.9.9.0/24']), namespace));
    const rules = await eventually("team B's edit written", async () => {
      const r = await entrypointRules(suite.fx.cf, zoneId, PHASE);
      return r.length === 2 ? r : undefined;
    });
    expect(rules.map((r) => r.description)).toEqual([
      `[managed-by:default:ZoneRuleset/${namespace}/${teamB}]`,
      `[managed-by:default:ZoneRuleset/${namespace}/${teamB}]`,
    ]);
    await eventually('team B Ready at its new generation', async () => {
      const c = await readyOf('ZoneRuleset', teamB, namespace);
      return c?.status === 'True' && c.reason === 'Synced';
    });
    const writes = (await requestsSince(suite.fx.admin, mark)).filter((r) => r.method !== 'GET');
    expect(writes.length).toBeGreaterThan(0);
    expect(writes.filter((r) => r.tokenId === tokenId(readOnlyToken))).toEqual([]);
    expect(writes.every((r) => r.status < 400)).toBe(true);
    const state = await k.get<CloudflareSyncState>({
      apiVersion: CLOUDFLARE_API_VERSION,
      kind: 'CloudflareSyncState',
      name: syncStateName({ resourceType: 'ZoneRuleset', accountId: defaultAccount, zoneId, phase: PHASE }),
    });
    expect(state?.spec.credentialsRef?.name).toBe(writer);

    for (const name of [teamA, teamB])
      await k.delete({ apiVersion: CLOUDFLARE_API_VERSION, kind: 'ZoneRuleset', namespace, name });
    await eventually(
      'no managed rule left',
      async () => (await entrypointRules(suite.fx.cf, zoneId, PHASE)).length === 0,
    );
  });
});

describe("the original's inline credentials", () => {
  it('a legacy cloudflare.secret is refused with a reason, never written with the default credentials; an accountId that is the default one is honoured', async () => {
    const otherAccount = hexId();
    const name = uniq('legacy-policy');
    const entry = { address: '10.77.0.0/16', description: 'legacy' };
    const policy = (cloudflare: Record<string, unknown>) =>
      source('DeviceSettingsPolicy', name, { splitTunnelMode: 'include', splitTunnelInclude: [entry], cloudflare });
    await k.apply(policy({ secret: 'cf-secret', accountId: otherAccount }));
    const refused = await eventually('LegacyCredentials', async () => {
      const c = await readyOf('DeviceSettingsPolicy', name);
      return c?.reason === 'LegacyCredentials' ? c : undefined;
    });
    expect(refused.status).toBe('False');
    expect(refused.message).toContain('spec.cloudflare.secret');
    expect(refused.message).toContain(defaultCredentials);
    const mine = async () =>
      (await includeList(suite.fx.cf, defaultAccount)).filter((e) => e.address === entry.address);
    expect(await mine()).toEqual([]); // nothing in the default account

    await k.apply(policy({ accountId: defaultAccount }));
    await eventually('honoured once it names the default account', async () => (await mine()).length === 1);
    await k.delete({ apiVersion: CLOUDFLARE_API_VERSION, kind: 'DeviceSettingsPolicy', name });
    await eventually('removed', async () => (await mine()).length === 0);
  });
});

describe('a source whose workflow starts over', () => {
  it('is Ready=True again shortly after its workflow is restarted (continue-as-new or a new run), not left Syncing', async () => {
    const zoneName = `${uniq('restart')}.example.com`;
    const { zones } = await suite.fx.admin.seed({ zones: [{ name: zoneName, account_id: defaultAccount }] });
    const zoneId = zones[0]!.id;
    const name = uniq('restarted');
    await k.apply(
      source(
        'ZoneRuleset',
        name,
        { zone: zoneName, phase: PHASE, rules: [{ expression: 'ip.src in {7.7.7.0/24}', action: 'block' }] },
        namespace,
      ),
    );
    await eventually('Ready', async () => (await readyOf('ZoneRuleset', name, namespace))?.reason === 'Synced');
    // A new run of the source's workflow, as after a continue-as-new or a terminate and the
    // watcher's next hint: it registers again, and the target's unchanged result must reach it.
    const c = await temporal();
    const ref = { kind: 'ZoneRuleset', namespace, name };
    await new Promise((r) => setTimeout(r, 1100)); // transition times have a second's resolution
    const restartedAt = Math.floor(Date.now() / 1000) * 1000;
    await c.workflow.getHandle(sourceWorkflowId(ref)).terminate('test: start the source over');
    await c.workflow.signalWithStart(cloudflareSourceWorkflow, {
      workflowId: sourceWorkflowId(ref),
      taskQueue: suite.taskQueue,
      args: [{ ref }],
      signal: sourceChangedSignal,
      signalArgs: [{ event: 'test' }],
    });
    // The new run shows `Syncing` once registered, then the target's result: Ready since then.
    await eventually(
      'Ready=True Synced again, after the new run registered',
      async () => {
        const r = (await readyOf('ZoneRuleset', name, namespace)) as
          (Awaited<ReturnType<typeof readyOf>> & { lastTransitionTime?: string }) | undefined;
        return r?.status === 'True' && r.reason === 'Synced' && Date.parse(r.lastTransitionTime ?? '') >= restartedAt;
      },
      { timeoutMs: 20_000 },
    );
    await k.delete({ apiVersion: CLOUDFLARE_API_VERSION, kind: 'ZoneRuleset', namespace, name });
    await eventually('removed', async () => (await entrypointRules(suite.fx.cf, zoneId, PHASE)).length === 0);
  });
});

describe('an idle target costs its observation, not its sources', () => {
  it('a source that hears nothing registers again without a zone lookup or a sync: no Cloudflare call, still Ready', async () => {
    const zoneName = `${uniq('idle')}.example.com`;
    const { zones } = await suite.fx.admin.seed({ zones: [{ name: zoneName, account_id: defaultAccount }] });
    const zoneId = zones[0]!.id;
    const name = uniq('idle');
    await k.apply(
      source(
        'ZoneRuleset',
        name,
        { zone: zoneName, phase: PHASE, rules: [{ expression: 'ip.src in {8.8.8.0/24}', action: 'block' }] },
        namespace,
      ),
    );
    await eventually('Ready', async () => (await readyOf('ZoneRuleset', name, namespace))?.reason === 'Synced');
    // Its workflow again, re-registering after 2 s of silence instead of the observation interval
    // (5 min here): each silence is what every idle source does once per interval.
    const c = await temporal();
    const ref = { kind: 'ZoneRuleset', namespace, name };
    const workflowId = sourceWorkflowId(ref);
    await c.workflow.getHandle(workflowId).terminate('test: a short silence');
    await c.workflow.signalWithStart(cloudflareSourceWorkflow, {
      workflowId,
      taskQueue: suite.taskQueue,
      args: [{ ref, reregisterMs: 2_000 }],
      signal: sourceChangedSignal,
      signalArgs: [{ event: 'test' }],
    });
    const registrations = async () =>
      ((await c.workflow.getHandle(workflowId).fetchHistory()).events ?? []).filter(
        (e) => e.activityTaskScheduledEventAttributes?.activityType?.name === 'registerCloudflareSource',
      ).length;
    await eventually('registered by the new run', async () => (await registrations()) >= 1);
    await new Promise((r) => setTimeout(r, 1_000)); // its first registration's sync and zone lookup done
    const objectRef = { apiVersion: CLOUDFLARE_API_VERSION, kind: 'ZoneRuleset', namespace, name };
    type Watched = { metadata: { resourceVersion: string }; status?: { conditions?: Array<Record<string, string>> } };
    const settled = await eventually('Synced again after the new run', async () => {
      const o = (await k.get(objectRef)) as Watched | undefined;
      const r = o?.status?.conditions?.find((c) => c.type === 'Ready');
      return r?.reason === 'Synced' ? { rv: o!.metadata.resourceVersion, since: r.lastTransitionTime } : undefined;
    });
    const mark = await requestMark(suite.fx.admin);
    const before = await registrations();
    await new Promise((r) => setTimeout(r, 9_000));
    // It did register again (each silence) …
    expect(await registrations()).toBeGreaterThanOrEqual(before + 2);
    // … without a status write: Ready never went False, `kubectl wait` and alerts see nothing (N7).
    const after = (await k.get(objectRef)) as Watched;
    expect(after.status?.conditions?.find((c) => c.type === 'Ready')?.lastTransitionTime).toBe(settled.since);
    expect(after.metadata.resourceVersion).toBe(settled.rv);
    // … and Cloudflare saw nothing of it: no zone lookup, no GET of the entrypoint.
    const calls = [
      ...(await requestsSince(suite.fx.admin, mark, { path: '^/zones$' })),
      ...(await requestsSince(suite.fx.admin, mark, { path: `^/zones/${zoneId}/` })),
    ];
    expect(calls.map((r) => `${r.method} ${r.path}`)).toEqual([]);
    expect(await readyOf('ZoneRuleset', name, namespace)).toMatchObject({ status: 'True', reason: 'Synced' });
    await k.delete({ apiVersion: CLOUDFLARE_API_VERSION, kind: 'ZoneRuleset', namespace, name });
    await eventually('removed', async () => (await entrypointRules(suite.fx.cf, zoneId, PHASE)).length === 0);
  });
});

describe('a source workflow that continues as new', () => {
  it('continues at a silence past its history bound, carrying its registration: Ready stays as written, no status write', async () => {
    const zoneName = `${uniq('continued')}.example.com`;
    const { zones } = await suite.fx.admin.seed({ zones: [{ name: zoneName, account_id: defaultAccount }] });
    const zoneId = zones[0]!.id;
    const name = uniq('continued');
    await k.apply(
      source(
        'ZoneRuleset',
        name,
        { zone: zoneName, phase: PHASE, rules: [{ expression: 'ip.src in {6.6.6.0/24}', action: 'block' }] },
        namespace,
      ),
    );
    await eventually('Ready', async () => (await readyOf('ZoneRuleset', name, namespace))?.reason === 'Synced');
    // Its workflow again, with a silence each second and a bound of 30 events: every few silences
    // it continues as new, as a long-lived source does when Temporal suggests it.
    const c = await temporal();
    const ref = { kind: 'ZoneRuleset', namespace, name };
    const workflowId = sourceWorkflowId(ref);
    await c.workflow.getHandle(workflowId).terminate('test: a short history bound');
    const first = await c.workflow.signalWithStart(cloudflareSourceWorkflow, {
      workflowId,
      taskQueue: suite.taskQueue,
      args: [{ ref, reregisterMs: 1_000, continueAfterEvents: 30 }],
      signal: sourceChangedSignal,
      signalArgs: [{ event: 'test' }],
    });
    const runOf = async (runId: string) => (await c.workflow.getHandle(workflowId, runId).describe()).status.name;
    await eventually(
      'the first run continued as new',
      async () => (await runOf(first.signaledRunId)) === 'CONTINUED_AS_NEW',
    );
    const objectRef = { apiVersion: CLOUDFLARE_API_VERSION, kind: 'ZoneRuleset', namespace, name };
    type Watched = { metadata: { resourceVersion: string }; status?: { conditions?: Array<Record<string, string>> } };
    const settled = await eventually('Synced', async () => {
      const o = (await k.get(objectRef)) as Watched | undefined;
      const r = o?.status?.conditions?.find((c) => c.type === 'Ready');
      return r?.reason === 'Synced' ? { rv: o!.metadata.resourceVersion } : undefined;
    });
    // Another run continues as new (a silence repeats the registration): the status stays untouched.
    const second = (await c.workflow.getHandle(workflowId).describe()).runId;
    await eventually('the next run continued as new', async () => (await runOf(second)) === 'CONTINUED_AS_NEW');
    await new Promise((r) => setTimeout(r, 2_500)); // a silence or two of the run after it
    const after = (await k.get(objectRef)) as Watched;
    expect(after.metadata.resourceVersion).toBe(settled.rv);
    expect(after.status?.conditions?.find((c) => c.type === 'Ready')?.reason).toBe('Synced');
    // The first run's continue-as-new is the kit's (its marker), and replays.
    const history = await c.workflow.getHandle(workflowId, first.signaledRunId).fetchHistory();
    const patches = (history.events ?? []).flatMap((e) => {
      const data = e.markerRecordedEventAttributes?.details?.['patch-data']?.payloads?.[0]?.data;
      return data ? [Buffer.from(data).toString()] : [];
    });
    expect(patches.join()).toContain('"source-continue-when-quiet"');
    await replayAndRecord(workflowId, 'cloudflare-source-continued', first.signaledRunId);
    await k.delete({ apiVersion: CLOUDFLARE_API_VERSION, kind: 'ZoneRuleset', namespace, name });
    await eventually('removed', async () => (await entrypointRules(suite.fx.cf, zoneId, PHASE)).length === 0);
  });
});

describe('deleting a source while its target has no workflow', () => {
  it("starts the target for the removal: the deleted source's rule goes, the other source's rule stays", async () => {
    const zoneName = `${uniq('stopped')}.example.com`;
    const { zones } = await suite.fx.admin.seed({ zones: [{ name: zoneName, account_id: defaultAccount }] });
    const zoneId = zones[0]!.id;
    const [gone, stays] = [uniq('gone'), uniq('stays')];
    const ruleset = (cidr: string) => ({
      zone: zoneName,
      phase: PHASE,
      rules: [{ expression: `ip.src in {${cidr}}`, action: 'block' }],
    });
    await k.apply(source('ZoneRuleset', gone, ruleset('8.8.0.0/16'), namespace));
    await k.apply(source('ZoneRuleset', stays, ruleset('9.9.0.0/16'), namespace));
    await eventually(
      'both rules written',
      async () => (await entrypointRules(suite.fx.cf, zoneId, PHASE)).length === 2,
    );
    // No workflow for the target (the upgrade procedure in docs/operations.md terminates them all).
    const target = { resourceType: 'ZoneRuleset' as const, accountId: defaultAccount, zoneId, phase: PHASE };
    await (await temporal()).workflow.getHandle(syncWorkflowId(target)).terminate('test: no target workflow');

    await k.delete({ apiVersion: CLOUDFLARE_API_VERSION, kind: 'ZoneRuleset', namespace, name: gone });
    await eventually(
      'the deleted source released',
      async () => !(await k.get({ apiVersion: CLOUDFLARE_API_VERSION, kind: 'ZoneRuleset', namespace, name: gone })),
    );
    const left = await entrypointRules(suite.fx.cf, zoneId, PHASE);
    expect(left.map((r) => r.expression)).toEqual(['ip.src in {9.9.0.0/16}']);
    expect(left[0]!.description).toBe(`[managed-by:default:ZoneRuleset/${namespace}/${stays}]`);

    await k.delete({ apiVersion: CLOUDFLARE_API_VERSION, kind: 'ZoneRuleset', namespace, name: stays });
    await eventually('removed', async () => (await entrypointRules(suite.fx.cf, zoneId, PHASE)).length === 0);
  });
});

describe('an orphaned binding on a shared tunnel (issue 33, N6b)', () => {
  it('its rules stay while Cloudflare has them, are not written back once removed by hand, and never hold a hostname against a live source', async () => {
    const zoneName = `${uniq('orphans')}.example.com`;
    await suite.fx.admin.seed({ zones: [{ name: zoneName, account_id: defaultAccount }] });
    const t = uniq('shared');
    const tunnelRef = { apiVersion: CLOUDFLARE_API_VERSION, kind: 'Tunnel', namespace, name: t };
    await k.apply(
      source('Tunnel', t, { newTunnel: { name: uniq('cf-shared') }, cloudflare: { domain: zoneName } }, namespace),
    );
    const tunnelId = await eventually(
      'the tunnel',
      async () => ((await k.get(tunnelRef)) as { status?: { tunnelId?: string } } | undefined)?.status?.tunnelId,
    );
    type Rule = { hostname?: string; service: string };
    const rules = async () =>
      (
        (await suite.fx.cf.zeroTrust.tunnels.cloudflared.configurations.get(tunnelId, {
          account_id: defaultAccount,
        })) as { config?: { ingress?: Rule[] } | null }
      ).config?.ingress ?? [];
    for (const svc of ['left', 'taken', 'later'])
      await k.apply({
        apiVersion: 'v1',
        kind: 'Service',
        metadata: { name: svc, namespace },
        spec: { ports: [{ port: 80, targetPort: 80 }] },
      });
    const bindingRef = (name: string) => ({
      apiVersion: `${CLOUDFLARE_GROUP}/${TUNNEL_BINDING_VERSION}`,
      kind: 'TunnelBinding',
      namespace,
      name,
    });
    const binding = (name: string, subjects: unknown[], annotations?: Record<string, string>) => ({
      apiVersion: `${CLOUDFLARE_GROUP}/${TUNNEL_BINDING_VERSION}`,
      kind: 'TunnelBinding',
      metadata: { name, namespace, ...(annotations ? { annotations } : {}) },
      subjects,
      tunnelRef: { kind: 'Tunnel', name: t },
    });
    const [left, taken] = [`left.${zoneName}`, `taken.${zoneName}`];
    const orphan = uniq('orphan');
    await k.apply(
      binding(orphan, [{ name: 'left' }, { name: 'taken' }], { 'cloudflare-operator.io/deletion-policy': 'Orphan' }),
    );
    await eventually('both rules in the tunnel', async () => {
      const hosts = (await rules()).map((r) => r.hostname);
      return hosts.includes(left) && hosts.includes(taken);
    });
    await k.delete(bindingRef(orphan));
    await eventually('the orphan released', async () => !(await k.get(bindingRef(orphan))));
    expect((await rules()).map((r) => r.hostname)).toEqual(expect.arrayContaining([left, taken]));

    // Someone removes one of its rules in Cloudflare; a later binding wants the other's hostname.
    await suite.fx.cf.zeroTrust.tunnels.cloudflared.configurations.update(tunnelId, {
      account_id: defaultAccount,
      config: { ingress: (await rules()).filter((r) => r.hostname !== left) } as never,
    });
    const later = uniq('later');
    await k.apply(binding(later, [{ name: 'later', spec: { fqdn: taken } }]));
    const now = await eventually('the later binding holds the hostname', async () => {
      const r = await rules();
      return r.find((x) => x.hostname === taken)?.service.includes('//later.') ? r : undefined;
    });
    expect(now.map((r) => r.hostname)).not.toContain(left);
    await new Promise((r) => setTimeout(r, 1_000));
    expect((await rules()).map((r) => r.hostname)).not.toContain(left);

    await k.delete(bindingRef(later));
    await k.delete(tunnelRef);
    await eventually('the Tunnel deleted', async () => !(await k.get(tunnelRef)), { timeoutMs: 60_000 });
  });
});
