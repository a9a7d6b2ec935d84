/**
 * The janitor and agent loss. Fast mode's documented trade-off: a sandbox whose record the
 * apiserver refuses (here a ValidatingAdmissionPolicy refusing names `orphan-*`) runs unrecorded
 * until the janitor removes it — after the orphan timeout, not before, and nothing else is
 * touched. Strong mode's counterpart: a record whose agent lost the sandbox becomes Failed with
 * the reason; one whose agent Pod crashed becomes Lost (failurePolicy Manual, the default) once
 * the recovery timeout (default 60 s) has passed — test/integration/sandbox-agent-lost.test.ts
 * covers the policies and the timeout. And the other side of the registry's hints: a sandbox its
 * own run deletes gets none once its removal started (one landing on the run's last task makes
 * Temporal refuse that task, UnhandledCommand), from any replica.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SandboxKind, type Sandbox } from '../../src/api/sandbox.js';
import { sandboxWorkflowId } from '../../src/domain/sandbox.js';
import { janitorWorkflowId } from '../../src/fastpath/janitor.js';
import { janitorStateQuery } from '../../src/workflows/sandbox/contract.js';
import { eventually, replayAndRecord, temporal, uniq } from '../support/env.js';
import { SandboxStack, sandboxImage } from '../support/fastpath.js';
import { agentFetch } from '../support/agent-tls.js';

let stack: SandboxStack;
const policy = uniq('deny-orphans');

// Ignores SIGTERM (sandbox-init forwards it): an agent-side delete keeps it terminating for the
// grace (2 s: four polls of the registry, so it reports `terminating` for certain).
const spec = { image: sandboxImage(), poolRef: 'pool-a', command: ['/bin/sh', '-c', "trap '' TERM; sleep 3600"] };

beforeAll(async () => {
  stack = await new SandboxStack({
    agents: 2,
    capacity: 4,
    orphanTimeout: '3s',
    janitorInterval: '2s',
    killGraceMs: 2_000,
  }).start();
  await stack.kube.create({
    apiVersion: 'admissionregistration.k8s.io/v1',
    kind: 'ValidatingAdmissionPolicy',
    metadata: { name: policy },
    spec: {
      failurePolicy: 'Fail',
      matchConstraints: {
        resourceRules: [
          { apiGroups: ['sandbox.fast.io'], apiVersions: ['*'], operations: ['CREATE'], resources: ['sandboxes'] },
        ],
      },
      validations: [
        { expression: "!object.metadata.name.startsWith('orphan-')", message: 'test policy: orphan-* is refused' },
      ],
    },
  });
  await stack.kube.create({
    apiVersion: 'admissionregistration.k8s.io/v1',
    kind: 'ValidatingAdmissionPolicyBinding',
    metadata: { name: policy },
    spec: {
      policyName: policy,
      validationActions: ['Deny'],
      matchResources: { namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': stack.namespace } } },
    },
  });
  // The policy takes effect once the apiserver has loaded it: wait until a dry run is refused.
  await eventually('the policy refuses orphan-*', async () => {
    try {
      await stack.kube.objects.create(
        {
          apiVersion: SandboxKind.apiVersion,
          kind: SandboxKind.kind,
          metadata: { name: 'orphan-probe', namespace: stack.namespace },
          spec,
        },
        undefined,
        'All',
      );
      return false;
    } catch {
      return true;
    }
  });
}, 240_000);

afterAll(async () => {
  await stack?.kube
    .delete({ apiVersion: 'admissionregistration.k8s.io/v1', kind: 'ValidatingAdmissionPolicyBinding', name: policy })
    .catch(() => undefined);
  await stack?.kube
    .delete({ apiVersion: 'admissionregistration.k8s.io/v1', kind: 'ValidatingAdmissionPolicy', name: policy })
    .catch(() => undefined);
  await stack?.stop();
});

const holds = async (sandboxId: string) =>
  (await stack.agentReports()).some((r) => r.sandboxes.some((s) => s.sandboxId === sandboxId));

describe('Fast mode: a refused record leaves an orphan the janitor removes', () => {
  it('removes it after the orphan timeout, touching nothing else', async () => {
    const keep = await stack.grpc.call<{ sandboxId: string }>('CreateSandbox', {
      namespace: stack.namespace,
      name: uniq('kept'),
      ...spec,
    });
    const name = uniq('orphan');
    const answeredAt = Date.now();
    const orphan = await stack.grpc.call<{ sandboxId: string; agentPod: string }>('CreateSandbox', {
      namespace: stack.namespace,
      name,
      ...spec,
    });
    // The caller got an answer (Fast: agent first) and the agent runs it…
    expect(await holds(orphan.sandboxId)).toBe(true);
    // …but its record was refused; the workflow says so and why.
    const client = await temporal();
    const result = await client.workflow.getHandle(sandboxWorkflowId(stack.namespace, name)).result();
    expect(result).toMatch(/record was refused.*test policy: orphan-\* is refused.*janitor/s);
    expect(await stack.sandbox(name)).toBeUndefined();
    await replayAndRecord(sandboxWorkflowId(stack.namespace, name), 'sandbox-fast-record-refused');

    await eventually('orphan removed from its agent', async () => !(await holds(orphan.sandboxId)), {
      timeoutMs: 60_000,
      intervalMs: 250,
    });
    const removedAfterMs = Date.now() - answeredAt;
    // Not before the timeout (3 s): a sandbox whose record is still on its way is spared.
    expect(removedAfterMs).toBeGreaterThanOrEqual(3_000);
    // The recorded sandbox is untouched.
    expect(await holds(keep.sandboxId)).toBe(true);

    // The janitor says what it removed and why: one long-lived workflow (not a run per pass), its
    // state and its Web UI details.
    const janitor = client.workflow.getHandle(janitorWorkflowId(stack.sandboxTaskQueue));
    const state = await janitor.query(janitorStateQuery);
    const removedLine = new RegExp(
      `removed sandbox ${orphan.sandboxId} from agent ${stack.namespace}/${orphan.agentPod}: no Sandbox`,
    );
    expect(state.recent.join('\n')).toMatch(removedLine);
    expect(state.passes).toBeGreaterThan(1);
    expect((await janitor.describe()).status.name).toBe('RUNNING');
    const runs = [];
    for await (const run of client.workflow.list({ query: `WorkflowId = '${janitor.workflowId}'` })) runs.push(run);
    expect(runs.map((r) => r.status.name)).toEqual(['RUNNING']);
    // What the Web UI shows as "Current details" (its built-in metadata query).
    const meta = await janitor.query<{ currentDetails: string }>('__temporal_workflow_metadata');
    expect(meta.currentDetails).toMatch(removedLine);
    expect(meta.currentDetails).toMatch(/orphans removed/);
  }, 120_000);
});

describe('agent loss', () => {
  async function endsWith(name: string, reason: string, phase = 'Failed', timeoutMs?: number) {
    return eventually(
      `Sandbox ${name} ${phase} (${reason})`,
      async () => {
        const sb = await stack.sandbox(name);
        if (sb?.status?.phase === phase && sb.status.conditions?.[0]?.reason === reason) return sb;
        // Thrown so a timeout says what the record showed last.
        throw new Error(
          `${sb?.status?.phase} ${sb?.status?.conditions?.[0]?.reason}: ${sb?.status?.conditions?.[0]?.message}`,
        );
      },
      { timeoutMs },
    );
  }

  it('Strong: a record whose agent no longer has the sandbox becomes Failed with the reason', async () => {
    const name = uniq('lost');
    const res = await stack.grpc.call<{ sandboxId: string; agentPod: string }>('CreateSandbox', {
      namespace: stack.namespace,
      name,
      consistencyMode: 'STRONG',
      ...spec,
    });
    await eventually('Running', async () => (await stack.sandbox(name))?.status?.phase === 'Running');
    // Behind the fast path's back, the agent loses it.
    const agent = stack.fleet.agents.find((a) => a.podName === res.agentPod)!;
    await agentFetch(stack.agentKey)(`${agent.url}/api/v1/agent/delete`, {
      method: 'POST',
      headers: { authorization: `Bearer ${stack.token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ sandboxId: res.sandboxId }),
    });
    const sb = await endsWith(name, 'AgentLostSandbox');
    expect(sb.status?.conditions?.[0]?.message).toContain(res.sandboxId);
  });

  it('a crashed agent Pod: its sandboxes become Lost (AgentLost) after the recovery timeout, the others keep running', async () => {
    const names = [uniq('crash'), uniq('crash'), uniq('crash'), uniq('crash')];
    const placed: Record<string, string> = {};
    for (const name of names) {
      const r = await stack.grpc.call<{ agentPod: string }>('CreateSandbox', {
        namespace: stack.namespace,
        name,
        ...spec,
      });
      placed[name] = r.agentPod;
      await eventually('Running', async () => (await stack.sandbox(name))?.status?.phase === 'Running');
    }
    const victim = placed[names[0]!]!;
    await stack.fleet.crash(victim);
    for (const name of names) {
      if (placed[name] === victim) await endsWith(name, 'AgentLost', 'Lost', 180_000);
    }
    for (const name of names)
      if (placed[name] !== victim) expect((await stack.sandbox(name))?.status?.phase).toBe('Running');
    // A Lost sandbox can still be deleted: nothing to remove on a dead agent, the finalizer goes.
    const dead = names.find((n) => placed[n] === victim)!;
    await stack.kube.delete({
      apiVersion: SandboxKind.apiVersion,
      kind: SandboxKind.kind,
      namespace: stack.namespace,
      name: dead,
    });
    await eventually(
      `Sandbox ${dead} gone`,
      async () =>
        !(await stack.kube.get<Sandbox>({
          apiVersion: SandboxKind.apiVersion,
          kind: SandboxKind.kind,
          namespace: stack.namespace,
          name: dead,
        })),
    );
  }, 300_000);
});

describe('a sandbox its own run deletes', () => {
  it('gets no agent hint from any replica once its removal started, and no task of its end is refused', async () => {
    // Two replicas, as deployed: each registry polls the agents, only one runs the delete step.
    const second = await stack.startSecondReplica();
    try {
      const name = uniq('deleted');
      await stack.grpc.call('CreateSandbox', { namespace: stack.namespace, name, consistencyMode: 'STRONG', ...spec });
      await eventually('Running', async () => (await stack.sandbox(name))?.status?.phase === 'Running');
      await stack.grpc.call('DeleteSandbox', { sandboxName: name, namespace: stack.namespace });
      const handle = (await temporal()).workflow.getHandle(sandboxWorkflowId(stack.namespace, name));
      expect(await handle.result()).toMatch(/deleted/);
      const events = (await handle.fetchHistory()).events ?? [];
      // The removal starts in the workflow task that runs the local activity removing the sandbox
      // from its agent (`removeSandbox`, which waits out its 2 s terminating; `removeFromAgent` on
      // runs from before patch sandbox-lean-life-3, `deleteOnAgent` before sandbox-lean-life): a
      // signal that came during that task is recorded after its completion, so hints count from
      // that task's completion on.
      const removalMarker = events.findIndex((e) => {
        const a = e.markerRecordedEventAttributes;
        if (a?.markerName !== 'core_local_activity') return false;
        const data = a.details?.data?.payloads?.[0]?.data;
        const type = data ? (JSON.parse(Buffer.from(data).toString()) as { activity_type?: string }).activity_type : '';
        return type === 'removeSandbox' || type === 'removeFromAgent' || type === 'deleteOnAgent';
      });
      expect(removalMarker).toBeGreaterThan(0);
      const removing = events.slice(0, removalMarker).findLastIndex((e) => e.workflowTaskCompletedEventAttributes);
      expect(removing).toBeGreaterThan(0);
      const hints = events
        .slice(removing)
        .filter((e) => e.workflowExecutionSignaledEventAttributes?.signalName === 'agentReported')
        .map((e) => {
          const data = e.workflowExecutionSignaledEventAttributes!.input?.payloads?.[0]?.data;
          const seen = data ? (JSON.parse(Buffer.from(data).toString()) as { phase: string }) : undefined;
          return `event ${String(e.eventId)}: agentReported ${seen?.phase ?? ''}`;
        });
      expect(hints).toEqual([]);
      expect(events.filter((e) => e.workflowTaskFailedEventAttributes).map((e) => String(e.eventId))).toEqual([]);
    } finally {
      await second.fastpath.close();
    }
  }, 120_000);
});
