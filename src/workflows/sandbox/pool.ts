/**
 * One workflow per SandboxPool (`sandbox-pool/<namespace>/<name>`): keeps the pool's agent Pods
 * at the size src/domain/sandbox-pool.ts decides from fresh facts, and its status filled. Started
 * and hinted by the watcher (the pool changed; a Sandbox of the pool appeared or is being
 * deleted) and by the fast path (an agent's report changed); hints only wake it, every pass reads
 * everything again. Without hints it looks every 10 s.
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
 * The workflow is an entity run (../entity.ts): `PoolRun` holds the state and the pass, the
 * decisions are src/domain/sandbox-pool.ts's.
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
  defineQuery,
  defineSignal,
  getExternalWorkflowHandle,
  patched,
  setCurrentDetails,
  setHandler,
  uuid4,
} from '@temporalio/workflow';
import { sandboxWorkflowId } from '../../domain/sandbox.js';
import {
  POOL_SETTLING_MS,
  agentPodName,
  lastDemandAfter,
  planPool,
  poolDemand,
  poolRefusedStatus,
  poolStatus,
  poolWaitMs,
  sandboxesToTell,
  type PoolPlan,
} from '../../domain/sandbox-pool.js';
import type { AgentTlsVersion, PoolRead } from '../../activities/sandbox/pools.js';
import { EntityRun, runEntity, type Next } from '../entity.js';
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
/** Runs from before it kept an agent for recent demand (scale from zero) plan without it. */
const SCALE_FROM_ZERO = 'pool-scale-from-zero';
/** Patch: the agents' TLS Secret is written again when its window or CA changes. */
const AGENT_TLS_SECRET = 'agent-tls-secret';
/** Runs from before it reported a refused write on the pool's status failed with the refusal. */
const WRITE_REFUSED = 'pool-write-refused-status';
/** Patch: continue-as-new by the entity kit's rule (at a quiet moment); runs from before continue when suggested. */
const CONTINUE_WHEN_QUIET = 'pool-continue-when-quiet';

/**
 * The apiserver's refusal of a write for good: a 403 that outlived an RBAC rollout's retries
 * (src/activities/kubernetes/errors.ts), from a missing RoleBinding or a ValidatingAdmissionPolicy.
 */
function refusedForGood(err: unknown): string | undefined {
  if (!(err instanceof ActivityFailure) || !(err.cause instanceof ApplicationFailure)) return undefined;
  return err.cause.type === 'Kubernetes403' ? err.cause.message : undefined;
}

type PoolFound = Extract<PoolRead, { status: 'ok' }>;
type PoolRef = { namespace: string; name: string; uid: string };

export class PoolRun extends EntityRun<string, SandboxPoolInput> {
  readonly state: PoolState = { message: 'starting' };
  private readonly tag: string;
  private next: number;
  private agentTls?: AgentTlsVersion;
  private lastDemandAtMs?: number;
  private hadLoad = false;
  /** Agents answering at the last pass (none yet: the first pass tells nobody). */
  private lastAnswering?: number;
  /** This pass's refused write in the pool's namespace (no RoleBinding there, or a policy). */
  private refusal?: string;

  constructor(private readonly input: SandboxPoolInput) {
    super();
    this.tag = input.tag ?? uuid4().replaceAll('-', '').slice(0, 5);
    this.next = input.next ?? 0;
    this.agentTls = input.agentTls;
    this.lastDemandAtMs = input.lastDemandAtMs;
  }

  /** `poolDemand`: a hint that is also demand, stamped by the workflow's clock. */
  demand(): void {
    this.hint();
    this.lastDemandAtMs = Date.now();
  }

  private say(message: string): void {
    this.state.message = message;
    setCurrentDetails(message);
  }

  /** A write in the pool's namespace; refused for good, it is said on the status and the pass goes on. */
  private async refusable<T>(write: () => Promise<T>, otherwise: T): Promise<T> {
    if (this.refusal !== undefined) return otherwise; // refused once this pass: said sooner, tried again next pass
    try {
      return await write();
    } catch (err) {
      const refused = refusedForGood(err);
      if (refused === undefined || !patched(WRITE_REFUSED)) throw err;
      this.refusal ??= refused;
      return otherwise;
    }
  }

  /** Read → finalizer → Secret → tell waiting sandboxes → plan → act → status. */
  async reconcile(): Promise<Next<string>> {
    const { namespace, name } = this.input;
    this.needsReconcile = false;
    this.refusal = undefined;
    const read = await poolSteps.readPoolFacts({ namespace, name });
    if (read.status === 'gone') {
      this.say(`SandboxPool ${namespace}/${name} is gone`);
      return { done: this.state.message };
    }
    const ref = { namespace, name, uid: read.uid };
    if (!read.facts.terminating && !read.finalized)
      if ((await poolSteps.setPoolFinalizer({ ...ref, present: true })).status === 'gone') return { again: true };
    await this.renewAgentSecret(read, ref);
    await this.tellWaitingSandboxes(read);
    const plan = this.plan(read);
    const keptAfterDrain = await this.resize(read, ref, plan);
    const computed = poolStatus(
      read.facts,
      { ...plan, keptBusy: plan.keptBusy + keptAfterDrain },
      read.conditions,
      new Date(),
    );
    const status =
      this.refusal === undefined ? computed : poolRefusedStatus(computed, namespace, this.refusal, new Date());
    if ((await poolSteps.writePoolStatus({ ...ref, status })).status === 'gone') return { again: true };
    const ready = status.conditions?.find((c) => c.type === 'Ready');
    this.say(`${ready?.reason}: ${ready?.message}`);
    if (plan.release) {
      if ((await poolSteps.setPoolFinalizer({ ...ref, present: false })).status === 'ok')
        this.say(`SandboxPool ${namespace}/${name} deleted: no sandbox used it, its agent Pods are gone`);
      return { done: this.state.message };
    }
    // At most one pass a second however many hints arrive; sooner passes while the size changes.
    const every = this.input.everyMs ?? DEFAULT_EVERY_MS;
    const acted = plan.create > 0 || plan.remove.length > 0 || plan.drain.length > 0;
    return {
      sleepMs: POOL_SETTLING_MS,
      waitMs: acted ? 0 : () => poolWaitMs(ready, plan.keepUntilMs, Date.now(), every),
    };
  }

  /** The agents' Secret, written again when its certificate's window or CA changed. */
  private async renewAgentSecret(read: PoolFound, ref: PoolRef): Promise<void> {
    // A read without agentTls (a history from before agent TLS) writes nothing: its replay has no write.
    const tls = read.agentTls;
    const { agentTls } = this;
    if (tls && (agentTls?.window !== tls.window || agentTls.ca !== tls.ca) && patched(AGENT_TLS_SECRET))
      this.agentTls = await this.refusable(() => poolSteps.writeAgentSecret(ref), agentTls);
  }

  /** A hint to each sandbox waiting for room once new agents answer (each verifies with a fresh read). */
  private async tellWaitingSandboxes(read: PoolFound): Promise<void> {
    const { tell, answering } = sandboxesToTell(read.facts, this.lastAnswering);
    for (const sandbox of tell)
      await getExternalWorkflowHandle(sandboxWorkflowId(this.input.namespace, sandbox))
        .signal(sandboxChangedSignal, { event: 'PoolGrew' })
        .catch(() => undefined); // no workflow (yet): the watcher starts it
    this.lastAnswering = answering;
  }

  /** The pool's size for this pass's facts (src/domain/sandbox-pool.ts), shown by the state query. */
  private plan(read: PoolFound): PoolPlan {
    const { facts } = read;
    const timed = { ...facts, lastDemandAtMs: this.lastDemandAtMs, nowMs: Date.now() };
    this.lastDemandAtMs = lastDemandAfter(timed, this.hadLoad);
    const load = poolDemand(facts);
    this.hadLoad = load.active + load.pending > 0;
    // Asked each pass (not once per run): a run from before the patch plans with it from its
    // first pass after the upgrade, not only after its next continue-as-new.
    const plan = planPool(patched(SCALE_FROM_ZERO) ? { ...timed, lastDemandAtMs: this.lastDemandAtMs } : facts);
    const { demand, ...rest } = plan;
    this.state.desired = plan.desired;
    this.state.plan = { ...rest, ...demand };
    return plan;
  }

  /** Creates the missing agent Pods and removes surplus idle agents (the drain protocol); returns the agents kept after a drain. */
  private async resize(read: PoolFound, ref: PoolRef, plan: PoolPlan): Promise<number> {
    const { namespace } = ref;
    const { facts } = read;
    if (plan.create > 0) {
      const names = Array.from({ length: plan.create }, () => agentPodName(ref.name, this.tag, this.next++));
      const pods = { names, perPod: facts.maxSandboxesPerPod, template: read.template, runtime: read.runtime };
      await this.refusable(() => poolSteps.createAgentPods({ ...ref, ...pods }), []);
    }
    const byPod = new Map(facts.agents.map((a) => [a.pod, a]));
    for (const pod of plan.remove) {
      // Not answering and nothing assigned: it cannot hold a sandbox; no agent to drain.
      if ((await poolSteps.sandboxesAssignedTo({ namespace, pod })) === 0)
        await this.refusable(
          () => poolSteps.deleteAgentPod({ namespace, pod, uid: byPod.get(pod)!.uid, pool: ref }),
          false,
        );
    }
    let keptAfterDrain = 0;
    for (const pod of plan.drain) {
      const agent = { namespace, pod, uid: byPod.get(pod)!.uid, url: byPod.get(pod)!.url! };
      const drained = await poolSteps.drainAgent(agent);
      if (drained.status !== 'ok') continue; // no longer answering: the next pass sees it
      const assigned = await poolSteps.sandboxesAssignedTo({ namespace, pod });
      if (drained.allocated === 0 && assigned === 0)
        await this.refusable(() => poolSteps.deleteAgentPod({ ...agent, pool: ref }), false);
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
    return keptAfterDrain;
  }

  /** Runs from before the kit continued as new whenever Temporal suggested it. */
  protected override continuesAsBefore(): boolean {
    return true;
  }

  protected onKitRule(): boolean {
    return patched(CONTINUE_WHEN_QUIET);
  }

  carry(): SandboxPoolInput {
    const { lastDemandAtMs, agentTls } = this;
    return {
      ...this.input,
      tag: this.tag,
      next: this.next,
      ...(lastDemandAtMs !== undefined ? { lastDemandAtMs } : {}),
      ...(agentTls && { agentTls }),
    };
  }
}

export async function sandboxPoolWorkflow(input: SandboxPoolInput): Promise<string> {
  const run = new PoolRun(input);
  setHandler(poolChangedSignal, () => run.hint());
  setHandler(poolDemandSignal, () => run.demand());
  setHandler(poolStateQuery, () => run.state);
  return runEntity(run);
}
