/**
 * One workflow per SandboxPool (`sandbox-pool/<namespace>/<name>`): keeps the pool's agent Pods
 * at the size src/domain/sandbox-pool.ts decides from fresh facts, and its status filled. Started
 * and hinted by the watcher (the pool changed; a Sandbox of the pool appeared or is being
 * deleted) and by the fast path (an agent's report changed); hints only wake it, every pass reads
 * everything again. Without hints it looks every 10 s, as the original's requeue did.
 *
 * A pass: read → add the pool-protection finalizer → write the agents' Secret when its
 * certificate's window or CA changed (src/fastpath/agent-pki.ts: every 10 days, after a key
 * rotation, and once when the workflow starts; continue-as-new carries what it wrote) → create the
 * missing Pods (deterministic names, so a retried create finds its Pod) → remove surplus idle
 * agents → undrain agents wanted again → write status. Removing an agent is the drain protocol,
 * with the agent as the authority on what it holds: drain it (from then on it refuses new
 * sandboxes, so no fast-path replica can place one there however stale its table), read its count
 * in the drain's answer and the Sandbox records assigned to it, and delete its Pod only if both
 * are zero — else undrain it. A crash between drain and delete leaves a draining agent the next
 * pass either removes or undrains.
 *
 * Scale from zero: a create that finds no Ready agent in the pool sends the `poolDemand` hint
 * (the fast path for either mode, a Strong create again while it waits). A create is a request,
 * not an object anyone can read back, so the hint is the demand: the workflow stamps it with its
 * own clock and what it can do is bounded — one agent, within poolMax, never for a pool being
 * deleted, kept scaleToZeroAfterSeconds once Ready — while every other fact is read afresh.
 *
 * Deletion: the finalizer keeps a pool that sandboxes still use. While it is Terminating no new
 * sandbox is placed in it (the fast path refuses creates, the registry gives its agents no room),
 * idle agents are removed, busy ones kept, and the status says how many sandboxes remain; once
 * none does, the last agents go and the finalizer is removed.
 *
 * A write in the pool's namespace that the apiserver refuses for good (no RoleBinding lets the
 * fast path write there, or an admission policy refuses it) does not end the workflow: the pass
 * stops writing, says so on the pool (Ready=False, Forbidden, with the refusal) and the next pass
 * tries again, so a binding added later is enough and the pool can still be deleted.
 */
import {
  ActivityFailure,
  ApplicationFailure,
  allHandlersFinished,
  condition,
  continueAsNew,
  defineQuery,
  getExternalWorkflowHandle,
  defineSignal,
  patched,
  setCurrentDetails,
  setHandler,
  sleep,
  uuid4,
  workflowInfo,
} from '@temporalio/workflow';
import { sandboxWorkflowId } from '../../domain/sandbox.js';
import {
  agentPodName,
  lastDemandAfter,
  pendingSandboxes,
  planPool,
  poolDemand,
  poolRefusedStatus,
  poolStatus,
  type PoolPlan,
} from '../../domain/sandbox-pool.js';
import type { AgentTlsVersion } from '../../activities/sandbox/pools.js';
import { poolSteps } from './activity-options.js';
import { sandboxChangedSignal } from './messages.js';

export interface SandboxPoolInput {
  namespace: string;
  name: string;
  /** Carried across continue-as-new: the lineage's Pod name tag and the next Pod number. */
  tag?: string;
  next?: number;
  /** How often the pool is looked at without hints (default 10 s). */
  everyMs?: number;
  /** Carried across continue-as-new: when the pool last had demand (scale to zero after it). */
  lastDemandAtMs?: number;
  /** Carried across continue-as-new: the agent certificate last written into the pool's Secret. */
  agentTls?: AgentTlsVersion;
}

/** What changed (shown in history; the workflow reads everything again anyway). */
export interface PoolChange {
  event: string;
}
/** Hint: the pool, one of its Sandboxes or one of its agents changed. Verified by a fresh read. */
export const poolChangedSignal = defineSignal<[PoolChange?]>('poolChanged');

/** Who asked for a slot the pool had no Ready agent for (shown in history). */
export interface PoolDemand {
  /** The sandbox's name. */
  sandbox: string;
  mode: 'fast' | 'strong';
}
/** Hint: a create found no Ready agent in the pool (scale from zero). Bounded: see the module comment. */
export const poolDemandSignal = defineSignal<[PoolDemand]>('poolDemand');

export interface PoolState {
  desired?: number;
  plan?: Omit<PoolPlan, 'demand'> & { active: number; pending: number; live: number };
  message: string;
}
export const poolStateQuery = defineQuery<PoolState>('poolState');

const DEFAULT_EVERY_MS = 10_000;
/** At most this many waiting sandboxes are hinted per pass when agents were added. */
const MAX_PENDING_HINTS = 100;
/** While the pool is changing size, look again this soon. */
const SETTLING_MS = 1_000;
/** Runs from before it kept an agent for recent demand (scale from zero) plan without it. */
const SCALE_FROM_ZERO = 'pool-scale-from-zero';
/** Patch: the agents' TLS Secret is written again when its window or CA changes. */
const AGENT_TLS_SECRET = 'agent-tls-secret';
/** Runs from before it reported a refused write on the pool's status failed with the refusal. */
const WRITE_REFUSED = 'pool-write-refused-status';

/**
 * The apiserver's refusal of a write for good: a 403 that outlived an RBAC rollout's retries
 * (src/activities/kubernetes/errors.ts), from a missing RoleBinding or a ValidatingAdmissionPolicy.
 */
function refusedForGood(err: unknown): string | undefined {
  if (!(err instanceof ActivityFailure) || !(err.cause instanceof ApplicationFailure)) return undefined;
  return err.cause.type === 'Kubernetes403' ? err.cause.message : undefined;
}

export async function sandboxPoolWorkflow(input: SandboxPoolInput): Promise<string> {
  const { namespace, name } = input;
  const tag = input.tag ?? uuid4().replaceAll('-', '').slice(0, 5);
  let next = input.next ?? 0;
  let agentTls = input.agentTls;
  const every = input.everyMs ?? DEFAULT_EVERY_MS;
  const state: PoolState = { message: 'starting' };
  let hinted = false;
  let lastDemandAtMs = input.lastDemandAtMs;
  let hadLoad = false;
  setHandler(poolChangedSignal, () => void (hinted = true));
  setHandler(poolDemandSignal, () => {
    hinted = true;
    lastDemandAtMs = Date.now();
  });
  setHandler(poolStateQuery, () => state);
  const say = (message: string) => {
    state.message = message;
    setCurrentDetails(message);
  };

  let lastAnswering = Number.MAX_SAFE_INTEGER; // the first pass tells nobody
  /** This pass's refused write in the pool's namespace (no RoleBinding there, or a policy). */
  let refusal: string | undefined;
  /** A write in the pool's namespace; refused for good, it is said on the status and the pass goes on. */
  const refusable = async <T>(write: () => Promise<T>, otherwise: T): Promise<T> => {
    if (refusal !== undefined) return otherwise; // refused once this pass: said sooner, tried again next pass
    try {
      return await write();
    } catch (err) {
      const refused = refusedForGood(err);
      if (refused === undefined || !patched(WRITE_REFUSED)) throw err;
      refusal ??= refused;
      return otherwise;
    }
  };
  for (;;) {
    hinted = false;
    refusal = undefined;
    const read = await poolSteps.readPoolFacts({ namespace, name });
    if (read.status === 'gone') {
      say(`SandboxPool ${namespace}/${name} is gone`);
      await condition(allHandlersFinished);
      return state.message;
    }
    const { uid, facts } = read;
    const ref = { namespace, name, uid };
    if (!facts.terminating && !read.finalized)
      if ((await poolSteps.setPoolFinalizer({ ...ref, present: true })).status === 'gone') continue;
    // Histories recorded before agent TLS have no agentTls in their reads: nothing to replay here.
    const tls = read.agentTls;
    if (tls && (agentTls?.window !== tls.window || agentTls.ca !== tls.ca) && patched(AGENT_TLS_SECRET))
      agentTls = await refusable(() => poolSteps.writeAgentSecret(ref), agentTls);

    // New agents answer: the pool's waiting sandboxes are told, so they are placed now rather
    // than at their own retry (a hint; each verifies with a fresh read).
    const answering = facts.agents.filter((a) => a.answered && !a.deleting).length;
    if (answering > lastAnswering)
      for (const sandbox of pendingSandboxes(facts).slice(0, MAX_PENDING_HINTS))
        await getExternalWorkflowHandle(sandboxWorkflowId(namespace, sandbox))
          .signal(sandboxChangedSignal, { event: 'PoolGrew' })
          .catch(() => undefined); // no workflow (yet): the watcher starts it
    lastAnswering = answering;

    const timed = { ...facts, lastDemandAtMs, nowMs: Date.now() };
    lastDemandAtMs = lastDemandAfter(timed, hadLoad);
    const load = poolDemand(facts);
    hadLoad = load.active + load.pending > 0;
    // Asked each pass (not once per run): a run from before the patch plans with it from its
    // first pass after the upgrade, not only after its next continue-as-new.
    const plan = planPool(patched(SCALE_FROM_ZERO) ? { ...timed, lastDemandAtMs } : facts);
    const { demand, ...rest } = plan;
    state.desired = plan.desired;
    state.plan = { ...rest, ...demand };
    let acted = false;

    if (plan.create > 0) {
      const names = Array.from({ length: plan.create }, () => agentPodName(name, tag, next++));
      await refusable(
        () =>
          poolSteps.createAgentPods({
            ...ref,
            names,
            perPod: facts.maxSandboxesPerPod,
            template: read.template,
            runtime: read.runtime,
          }),
        [],
      );
      acted = true;
    }
    const byPod = new Map(facts.agents.map((a) => [a.pod, a]));
    for (const pod of plan.remove) {
      // Not answering and nothing assigned: it cannot hold a sandbox; no agent to drain.
      if ((await poolSteps.sandboxesAssignedTo({ namespace, pod })) === 0)
        await refusable(() => poolSteps.deleteAgentPod({ namespace, pod, uid: byPod.get(pod)!.uid, pool: ref }), false);
      acted = true;
    }
    let keptAfterDrain = 0;
    for (const pod of plan.drain) {
      const a = byPod.get(pod)!;
      const agent = { namespace, pod, uid: a.uid, url: a.url! };
      const drained = await poolSteps.drainAgent(agent);
      acted = true;
      if (drained.status !== 'ok') continue; // no longer answering: the next pass sees it
      const assigned = await poolSteps.sandboxesAssignedTo({ namespace, pod });
      if (drained.allocated === 0 && assigned === 0)
        await refusable(() => poolSteps.deleteAgentPod({ ...agent, pool: ref }), false);
      else {
        // Something landed before the drain: it stays, and takes sandboxes again.
        keptAfterDrain++;
        await poolSteps.undrainAgent(agent);
      }
    }
    for (const pod of plan.undrain) {
      const a = byPod.get(pod)!;
      await poolSteps.undrainAgent({ namespace, pod, uid: a.uid, url: a.url! });
    }

    const computed = poolStatus(
      facts,
      { ...plan, keptBusy: plan.keptBusy + keptAfterDrain },
      read.conditions,
      new Date(),
    );
    const status = refusal === undefined ? computed : poolRefusedStatus(computed, namespace, refusal, new Date());
    if ((await poolSteps.writePoolStatus({ ...ref, status })).status === 'gone') continue;
    const ready = status.conditions?.find((c) => c.type === 'Ready');
    say(`${ready?.reason}: ${ready?.message}`);

    if (plan.release) {
      if ((await poolSteps.setPoolFinalizer({ ...ref, present: false })).status === 'ok')
        say(`SandboxPool ${namespace}/${name} deleted: no sandbox used it, its agent Pods are gone`);
      await condition(allHandlersFinished);
      return state.message;
    }

    // At most one pass a second however many hints arrive; sooner passes while the size changes.
    await sleep(SETTLING_MS);
    const settling = ready?.status === 'False' || ready?.reason === 'ScalingDown';
    // The agent kept for recent demand goes when its time is up, not up to `every` later.
    const base = (settling ? SETTLING_MS * 3 : every) - SETTLING_MS;
    const untilZero = plan.keepUntilMs !== undefined ? plan.keepUntilMs - Date.now() + 100 : base;
    if (!acted) await condition(() => hinted, Math.max(1, Math.min(base, untilZero)));
    if (workflowInfo().continueAsNewSuggested) {
      await condition(allHandlersFinished);
      return continueAsNew<typeof sandboxPoolWorkflow>({
        ...input,
        tag,
        next,
        ...(lastDemandAtMs !== undefined ? { lastDemandAtMs } : {}),
        ...(agentTls && { agentTls }),
      });
    }
  }
}
