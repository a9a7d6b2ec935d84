/**
 * The sandbox fast path's decisions, pure: what a create asks for and whether it is valid, what
 * the Sandbox record looks like, how an agent's phase maps to the Sandbox's, what the janitor
 * removes, when a sandbox expires, when a reset is asked for, and what a lost agent leads to.
 * Workflows and activities share these; nothing here does I/O.
 */
import type { AgentPhase, AgentStatusReport } from '../agent/api.js';
import {
  ALLOCATION_ANNOTATION,
  CREATE_TIMESTAMP_ANNOTATION,
  CREATED_BY_LABEL,
  SANDBOX_FINALIZER,
  type FailurePolicy,
  type Sandbox,
  type SandboxAllocation,
  type SandboxPhase,
  type SandboxStatus,
} from '../api/sandbox.js';

/** The tenant a sandbox belongs to (the fast path's caller); a tenant sees only its own. */
export const TENANT_LABEL = 'sandbox.fast.io/tenant';

export type ConsistencyMode = 'fast' | 'strong';

/** A create, as the fast path received it (gRPC or HTTP), normalised. */
export interface SandboxCreateSpec {
  image: string;
  poolRef: string;
  exposedPorts: number[];
  command: string[];
  args: string[];
  envs: Record<string, string>;
  workingDir: string;
}

/** Why a create or another call is refused; each maps to one gRPC status and one HTTP status. */
export type RefusalCode =
  | 'InvalidArgument'
  | 'NotFound'
  | 'AlreadyExists'
  | 'ResourceExhausted'
  | 'FailedPrecondition'
  | 'Unavailable'
  | 'Internal';

export interface Refusal {
  code: RefusalCode;
  message: string;
  /** The Ready condition's reason when it is not the usual one (e.g. CreateContainerConfigError). */
  reason?: string;
}

export const refusal = (code: RefusalCode, message: string): Refusal => ({ code, message });

/**
 * The reason of a refusal for want of a Ready agent in the pool (poolMin 0, or every agent gone):
 * the pool's workflow is told and starts one; Strong waits for it, Fast answers UNAVAILABLE with
 * a retry hint, a kubectl-created Sandbox stays Pending with this reason.
 */
export const NO_READY_AGENT = 'NoReadyAgent';
/** The reason of a refusal by a pool whose poolMax is 0: it runs no agent, ever. */
export const POOL_MAX_ZERO = 'PoolMaxZero';
/** How long a Strong create waits for a pool scaling up from zero by default (`--fastpath-scale-up-timeout`). */
export const DEFAULT_SCALE_UP_WAIT_MS = 60_000;
/** The retry hint of a Fast create refused for want of a Ready agent (gRPC RetryInfo, HTTP Retry-After). */
export const SCALE_UP_RETRY_AFTER_SECONDS = 2;

const DNS_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
const DNS_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;

/** The first thing wrong with a create, named as the client spelled it; undefined when valid. */
export function invalidCreate(spec: SandboxCreateSpec, namespace: string, name: string): string | undefined {
  if (!spec.image) return 'image is required';
  if (!spec.poolRef) return 'pool_ref is required';
  if (!DNS_SUBDOMAIN.test(spec.poolRef) || spec.poolRef.length > 253)
    return `pool_ref ${JSON.stringify(spec.poolRef)} is not a valid object name`;
  if (!DNS_LABEL.test(namespace) || namespace.length > 63)
    return `namespace ${JSON.stringify(namespace)} is not a valid namespace name`;
  if (!DNS_SUBDOMAIN.test(name) || name.length > 253)
    return `name ${JSON.stringify(name)} is not a valid object name (lower-case letters, digits, '-' and '.')`;
  const seen = new Set<number>();
  for (const p of spec.exposedPorts) {
    if (!Number.isInteger(p) || p < 1 || p > 65535) return `exposed_ports: ${p} is not a port (an integer 1–65535)`;
    if (seen.has(p)) return `exposed_ports: port ${p} is listed twice`;
    seen.add(p);
  }
  for (const k of Object.keys(spec.envs))
    if (k === '' || k.includes('=')) return `envs: ${JSON.stringify(k)} is not a variable name`;
  return undefined;
}

/** Two creates with one name are the same create when these agree (env order does not matter). */
export function createFingerprint(spec: SandboxCreateSpec): string {
  const env = Object.entries(spec.envs).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return JSON.stringify([
    spec.image,
    spec.poolRef,
    [...spec.exposedPorts].sort((a, b) => a - b),
    spec.command,
    spec.args,
    env,
    spec.workingDir,
  ]);
}

/** What a sandbox name's workflow knows when a create arrives (its update validator's facts). */
export interface CreateArrival {
  namespace: string;
  name: string;
  /** The name is being deleted, or its run is ending. */
  closing: boolean;
  /** This run's create failed and the run is ending. */
  failedEnding: boolean;
  /** The create this incarnation answered (this run or, carried over continue-as-new, an earlier one). */
  answered?: { fingerprint: string; tenant?: string };
  /** The incarnation has a record (created with kubectl, or recorded by an earlier run). */
  recorded: boolean;
  call: { fingerprint: string; tenant?: string };
}

/**
 * Why a create by name is refused; undefined when it is the incarnation's first create or a retry
 * of the one it answered (same tenant, same spec). `Terminating` tells the fast path to wait for
 * the ending run and try the next one. Another tenant's name is refused like any taken name, never
 * answered with that tenant's sandbox (its ID, agent and endpoints) nor told how its spec differs.
 */
export function createConflict(
  a: CreateArrival,
): { reason: 'Terminating' | 'AlreadyExists'; message: string } | undefined {
  const where = `${a.namespace}/${a.name}`;
  if (a.closing)
    return { reason: 'Terminating', message: `Sandbox ${where} is being deleted; create it again once it is gone` };
  if (a.failedEnding)
    return {
      reason: 'Terminating',
      message: `the previous create of ${where} failed and its run is ending; create it again`,
    };
  const taken = `a Sandbox named ${a.name} already exists in namespace ${a.namespace}`;
  if (a.answered && a.answered.tenant !== a.call.tenant) return { reason: 'AlreadyExists', message: taken };
  if (a.answered && a.answered.fingerprint !== a.call.fingerprint)
    return { reason: 'AlreadyExists', message: `${taken} with another spec` };
  if (!a.answered && a.recorded) return { reason: 'AlreadyExists', message: taken };
  return undefined;
}

/** One workflow per Sandbox name; its runs are the name's incarnations (a recreate is a new run). */
export function sandboxWorkflowId(namespace: string, name: string): string {
  return `sandbox/${namespace}/${name}`;
}

/**
 * The request ID of a record's `Deleting` hint: whoever sends it first (the fast path's
 * DeleteSandbox, the watcher), Temporal records it once per run.
 */
export function deletionHintRequestId(uid: string): string {
  return `sandbox-deleting/${uid}`;
}

/** `ip:port` for every exposed port, as the original reports endpoints. */
export function endpointsOf(ip: string, ports: readonly number[]): string[] {
  return ports.map((p) => `${ip}:${p}`);
}

/** The agent's phase as the Sandbox's (the original's mapping; `terminating` → Terminating). */
export function phaseFromAgent(phase: AgentPhase): SandboxPhase {
  switch (phase) {
    case 'running':
      return 'Running';
    case 'creating':
      return 'Bound';
    case 'terminating':
      return 'Terminating';
    case 'stopped':
    case 'failed':
      return 'Failed';
  }
}

/**
 * Why a sandbox ended, when its runtime knows more than its exit code: over its memory limit, or
 * killed by its agent for a writable layer past its ephemeral-storage limit.
 */
export const RUNTIME_END_REASONS = ['OOMKilled', 'EphemeralStorageExceeded'] as const;
export type RuntimeEndReason = (typeof RUNTIME_END_REASONS)[number];

/** The Ready condition's reason for a sandbox that ended on its agent: the runtime's when it says why. */
export function failureReason(seen: { phase: string; reason?: string }): string {
  if (seen.phase === 'stopped') return 'Stopped';
  return (RUNTIME_END_REASONS as readonly string[]).includes(seen.reason ?? '') ? seen.reason! : 'ProcessFailed';
}

/** The Sandbox spec fields for a create (ports, command… omitted when empty, as kubectl would). */
export function sandboxSpecOf(spec: SandboxCreateSpec): Sandbox['spec'] {
  return {
    image: spec.image,
    poolRef: spec.poolRef,
    ...(spec.command.length ? { command: spec.command } : {}),
    ...(spec.args.length ? { args: spec.args } : {}),
    ...(Object.keys(spec.envs).length
      ? { envs: Object.entries(spec.envs).map(([name, value]) => ({ name, value })) }
      : {}),
    ...(spec.workingDir ? { workingDir: spec.workingDir } : {}),
    ...(spec.exposedPorts.length ? { exposedPorts: spec.exposedPorts } : {}),
  };
}

/** What a create needs from a Sandbox object (kubectl-created sandboxes are scheduled from it). */
export function createSpecOf(sb: Pick<Sandbox, 'spec'>): SandboxCreateSpec {
  const envs: Record<string, string> = {};
  for (const e of sb.spec.envs ?? []) if (e.value !== undefined) envs[e.name] = e.value;
  return {
    image: sb.spec.image,
    poolRef: sb.spec.poolRef,
    exposedPorts: sb.spec.exposedPorts ?? [],
    command: sb.spec.command ?? [],
    args: sb.spec.args ?? [],
    envs,
    workingDir: sb.spec.workingDir ?? '',
  };
}

export interface RecordInput {
  namespace: string;
  name: string;
  spec: SandboxCreateSpec;
  mode: ConsistencyMode;
  allocation: SandboxAllocation;
  /** Unix nanoseconds as a decimal string (the original's createTimestamp). */
  createTimestampNanos: string;
  tenant?: string;
}

/**
 * The Sandbox a fast-path create writes: the allocation annotation (moved to status by the
 * hand-off), the create timestamp, created-by and tenant labels, and the cleanup finalizer so
 * its deletion always reaches the agent.
 */
export function sandboxRecord(r: RecordInput): Sandbox {
  return {
    apiVersion: 'sandbox.fast.io/v1alpha1',
    kind: 'Sandbox',
    metadata: {
      namespace: r.namespace,
      name: r.name,
      labels: {
        [CREATED_BY_LABEL]: `fastpath-${r.mode}`,
        ...(r.tenant !== undefined ? { [TENANT_LABEL]: r.tenant } : {}),
      },
      annotations: {
        [ALLOCATION_ANNOTATION]: JSON.stringify(r.allocation),
        [CREATE_TIMESTAMP_ANNOTATION]: r.createTimestampNanos,
      },
      finalizers: [SANDBOX_FINALIZER],
    },
    spec: sandboxSpecOf(r.spec),
  };
}

/** Status phases in which the sandbox should be on an agent. */
export const PLACED_PHASES: ReadonlySet<SandboxPhase | undefined> = new Set(['Bound', 'Running']);

export interface RecordedSandbox {
  namespace: string;
  name: string;
  uid: string;
  phase?: SandboxPhase;
  assignedPod?: string;
  sandboxId?: string;
  /** The agent a not-yet-handed-off allocation annotation names (its sandbox ID is not recorded yet). */
  pendingAgent?: string;
}

export interface OrphanVerdict {
  agent: string;
  namespace: string;
  sandboxId: string;
  claimName: string;
  claimUid: string;
  ageSeconds: number;
  why: string;
}

/**
 * Whether the name's running workflow still holds this very sandbox: the janitor spares it. A
 * late record is not a refused one, and a record written between the janitor's re-read and its
 * question is no orphan either (the run has moved past `recording` by then). Not when the run
 * gave it up (`unrecorded`: the record was refused, the janitor's to remove; `done`). Another
 * sandbox ID is an older incarnation's, and no run means nothing will record it.
 */
export function runStillHolds(run: { stage: string; sandboxId?: string } | undefined, sandboxId: string): boolean {
  return !!run && run.sandboxId === sandboxId && run.stage !== 'unrecorded' && run.stage !== 'done';
}

/**
 * Whether a DeleteSandbox that found no record is for the name's running workflow: a Fast create
 * whose record is not written yet (`creating`, `recording`). The run is told and deletes the
 * sandbox — before its record, or the record once written. Strong writes its record before it
 * answers, so a delete finds that record or there is nothing to delete.
 */
export function deleteReachesCreation(run: { stage: string; mode?: ConsistencyMode } | undefined): boolean {
  return run?.mode === 'fast' && (run.stage === 'creating' || run.stage === 'recording');
}

/**
 * Whether a Fast create's run, told of a deletion between its answer and its record, records
 * nothing and removes the sandbox from its agent.
 */
export function deletesBeforeRecord(run: {
  deletionRequested: boolean;
  fastCreate: boolean;
  placed: boolean;
  recorded: boolean;
}): boolean {
  return run.deletionRequested && run.fastCreate && run.placed && !run.recorded;
}

/**
 * Whether the run deletes the record it has just written: its Fast create was deleted (the fast
 * path's delete reached it, see deleteReachesCreation) while the record was on its way, and the
 * record is not being deleted already.
 */
export function deletesOwnRecord(run: {
  creationDeleted: boolean;
  recordedHere: boolean;
  recordDeleting: boolean;
}): boolean {
  return run.creationDeleted && run.recordedHere && !run.recordDeleting;
}

/**
 * Fast mode's orphans on one agent: sandboxes no Sandbox record covers, older than the orphan
 * timeout (by the agent's own `createdAt`, so a sandbox whose record is still being written is
 * spared). A record covers a sandbox when it names the sandbox's ID (status or pending
 * allocation on this agent), or, for sandboxes created with a claim UID (Strong, kubectl), has that UID.
 */
export function orphansOn(
  agentNamespace: string,
  report: Pick<AgentStatusReport, 'agentId' | 'sandboxStatuses'>,
  records: readonly RecordedSandbox[],
  nowSeconds: number,
  orphanTimeoutSeconds: number,
): OrphanVerdict[] {
  const byName = new Map<string, RecordedSandbox>();
  for (const r of records) if (r.namespace === agentNamespace) byName.set(r.name, r);
  const out: OrphanVerdict[] = [];
  for (const s of report.sandboxStatuses) {
    if (s.phase === 'terminating') continue;
    // An agent's clock and ours may disagree a little; the seed's caveat. Ages are the agent's.
    // Whole seconds, createdAt rounded down by the agent: only an age above the timeout proves
    // the sandbox has been unrecorded for at least the timeout.
    const age = nowSeconds - s.createdAt;
    if (age <= orphanTimeoutSeconds) continue;
    const r = byName.get(s.claimName);
    // A Lost record keeps its last assignment for the user to read, not a runtime: a sandbox its
    // agent brings back after it was declared Lost is removed like any other orphan.
    const covered =
      r !== undefined &&
      r.phase !== 'Lost' &&
      (r.assignedPod === report.agentId || r.pendingAgent === report.agentId) &&
      (r.sandboxId === s.sandboxId ||
        (!r.sandboxId && r.pendingAgent === report.agentId) ||
        (s.claimUid !== '' && s.claimUid === r.uid));
    if (covered) continue;
    const why =
      r === undefined
        ? `no Sandbox ${agentNamespace}/${s.claimName || '?'} records it`
        : `Sandbox ${agentNamespace}/${s.claimName} records another sandbox (${r.sandboxId ?? r.uid})`;
    out.push({
      agent: report.agentId,
      namespace: agentNamespace,
      sandboxId: s.sandboxId,
      claimName: s.claimName,
      claimUid: s.claimUid,
      ageSeconds: age,
      why: `${why}; ${age}s old (orphan timeout ${orphanTimeoutSeconds}s)`,
    });
  }
  return out;
}

export interface LostVerdict {
  namespace: string;
  name: string;
  agent: string;
  sandboxId: string;
  /** `missing`: the agent reports and no longer holds it; `agent-gone`: the agent is not among those reporting. */
  why: 'missing' | 'agent-gone';
}

/**
 * Records that say Bound/Running on an agent that no longer holds their sandbox: one that reports
 * without it (`missing`), or one that does not report at all — Pod gone, not Ready or stale
 * (`agent-gone`). Each is a hint to the sandbox's workflow, which verifies with a fresh read and
 * applies the failure policy after the recovery timeout. `reports` (keyed by `<namespace>/<pod>`)
 * holds every agent that reported in this scan.
 */
export function lostRecords(
  records: readonly RecordedSandbox[],
  reports: ReadonlyMap<string, ReadonlySet<string>>,
): LostVerdict[] {
  const out: LostVerdict[] = [];
  for (const r of records) {
    if (!PLACED_PHASES.has(r.phase) || !r.assignedPod || !r.sandboxId) continue;
    const held = reports.get(`${r.namespace}/${r.assignedPod}`);
    if (held?.has(r.sandboxId)) continue;
    out.push({
      namespace: r.namespace,
      name: r.name,
      agent: r.assignedPod,
      sandboxId: r.sandboxId,
      why: held ? 'missing' : 'agent-gone',
    });
  }
  return out;
}

/** An agent the janitor may ask to reap its node's containers of dead agents. */
export interface ReaperCandidate {
  namespace: string;
  node: string;
  pod: string;
  /** Its last report's runtime (`containerd/runc`…); only containerd keeps containers beyond their agent. */
  runtime?: string;
}

/**
 * One agent per namespace and node (the first by name, so passes agree): it removes the node's
 * containers of its namespace's agents that are gone (review N4). Agents of another runtime, or
 * on no known node, are never asked.
 */
export function reapersOf(agents: readonly ReaperCandidate[]): ReaperCandidate[] {
  const chosen = new Map<string, ReaperCandidate>();
  for (const a of [...agents].sort((x, y) => x.pod.localeCompare(y.pod))) {
    if (!a.node || !a.runtime?.startsWith('containerd')) continue;
    const key = `${a.namespace}\u0000${a.node}`;
    if (!chosen.has(key)) chosen.set(key, a);
  }
  return [...chosen.values()];
}

// ---- lifecycle: expiry and reset ----

/**
 * An RFC 3339 time as nanoseconds since the epoch, so two revisions that differ below the
 * millisecond still compare as different; undefined when it does not parse.
 */
export function rfc3339Nanos(s: string | undefined): bigint | undefined {
  if (!s) return undefined;
  const fraction = /^[^.]*T[^.]*\.(\d+)/.exec(s)?.[1] ?? '';
  const ms = Date.parse(fraction ? s.replace(`.${fraction}`, '') : s);
  if (Number.isNaN(ms)) return undefined;
  return BigInt(ms) * 1_000_000n + BigInt(fraction.slice(0, 9).padEnd(9, '0') || '0');
}

/** When the sandbox expires (milliseconds since the epoch); undefined without a (valid) spec.expireTime. */
export function expiresAtMs(sb: Pick<Sandbox, 'spec'>): number | undefined {
  const at = sb.spec.expireTime ? Date.parse(sb.spec.expireTime) : NaN;
  return Number.isNaN(at) ? undefined : at;
}

/**
 * A reset is asked for when spec.resetRevision is a later time than the last one accepted
 * (an equal time in another spelling, or an earlier one, is not a new request).
 */
export function resetRequested(sb: Pick<Sandbox, 'spec' | 'status'>): boolean {
  const wanted = rfc3339Nanos(sb.spec.resetRevision);
  if (wanted === undefined) return false;
  const accepted = rfc3339Nanos(sb.status?.acceptedResetRevision);
  return accepted === undefined || wanted > accepted;
}

export type LifecycleStep = { step: 'expire'; at: string } | { step: 'reset'; revision: string } | undefined;

/**
 * What the sandbox's lifecycle asks of its workflow now. Expiry wins over a reset: a sandbox
 * past its expireTime is not restarted (it would expire again at once), and an Expired sandbox
 * stays Expired until its expireTime is moved later (or removed) *and* a newer reset asks for a
 * fresh start — so neither an extension alone nor a reset alone brings back a runtime.
 */
export function lifecycleStep(sb: Pick<Sandbox, 'spec' | 'status'>, nowMs: number): LifecycleStep {
  const expiresAt = expiresAtMs(sb);
  if (expiresAt !== undefined && nowMs >= expiresAt)
    return sb.status?.phase === 'Expired' ? undefined : { step: 'expire', at: sb.spec.expireTime! };
  if (resetRequested(sb)) return { step: 'reset', revision: sb.spec.resetRevision! };
  return undefined;
}

/**
 * How long the workflow may wait for a hint before it must look again: until the expiry or the
 * end of an agent's recovery timeout (its durable timers), at most `resyncMs`. At least 1 ms, so
 * a wait is never a busy loop.
 */
export function nextLookInMs(sb: Pick<Sandbox, 'spec' | 'status'>, nowMs: number, resyncMs: number): number {
  const expiresAt = sb.status?.phase === 'Expired' ? undefined : expiresAtMs(sb);
  const deadlines = [expiresAt, recoveryDeadlineMs(sb)].filter((t): t is number => t !== undefined);
  if (deadlines.length === 0) return resyncMs;
  return Math.max(1, Math.min(resyncMs, ...deadlines.map((t) => t - nowMs)));
}

// ---- agent loss: failure policy and recovery timeout ----

/** The Ready reason while the workflow waits for a vanished agent; its lastTransitionTime is when it noticed. */
export const AGENT_UNREACHABLE = 'AgentUnreachable';
/** The Ready reason once the recovery timeout has passed (phase Lost, or Pending for AutoRecreate). */
export const AGENT_LOST = 'AgentLost';

/** The CRD's defaults, for a record written before they existed or by a client that omits them. */
export const DEFAULT_FAILURE_POLICY: FailurePolicy = 'Manual';
export const DEFAULT_RECOVERY_TIMEOUT_SECONDS = 60;

export const failurePolicyOf = (sb: Pick<Sandbox, 'spec'>): FailurePolicy =>
  sb.spec.failurePolicy ?? DEFAULT_FAILURE_POLICY;

export function recoveryTimeoutMs(sb: Pick<Sandbox, 'spec'>): number {
  const s = sb.spec.recoveryTimeoutSeconds;
  return (s !== undefined && Number.isInteger(s) && s >= 1 ? s : DEFAULT_RECOVERY_TIMEOUT_SECONDS) * 1000;
}

/** When the workflow noticed the agent gone (ms), from the record's AgentUnreachable condition. */
export function agentGoneSinceMs(sb: Pick<Sandbox, 'status'>): number | undefined {
  const c = sb.status?.conditions?.find((x) => x.type === 'Ready');
  if (c?.reason !== AGENT_UNREACHABLE || !PLACED_PHASES.has(sb.status?.phase)) return undefined;
  const at = Date.parse(c.lastTransitionTime ?? '');
  return Number.isNaN(at) ? undefined : at;
}

/** The end of the recovery timeout the record is in, if it is in one. */
export function recoveryDeadlineMs(sb: Pick<Sandbox, 'spec' | 'status'>): number | undefined {
  const since = agentGoneSinceMs(sb);
  return since === undefined ? undefined : since + recoveryTimeoutMs(sb);
}

export type AgentLossStep =
  /** Within the recovery timeout: keep the assignment, record when the loss was noticed, wait. */
  | { step: 'wait'; sinceMs: number; untilMs: number }
  /** AutoRecreate, timeout passed: the sandbox is placed again (another agent, a new sandbox ID). */
  | { step: 'recreate'; sinceMs: number }
  /** Manual, timeout passed: phase Lost, the last assignment kept for the user to read. */
  | { step: 'lost'; sinceMs: number };

/**
 * What a fresh observation "the sandbox's agent is gone" asks for. The recovery timeout runs from
 * when the loss was first noticed (kept in the record, so it survives the workflow's
 * continue-as-new); an agent back before its end keeps its sandboxes, and only after it does the
 * failure policy apply. A record not yet marked starts its timeout now.
 */
export function agentLossStep(sb: Pick<Sandbox, 'spec' | 'status'>, nowMs: number): AgentLossStep {
  const sinceMs = agentGoneSinceMs(sb) ?? nowMs;
  const untilMs = sinceMs + recoveryTimeoutMs(sb);
  if (nowMs < untilMs) return { step: 'wait', sinceMs, untilMs };
  return { step: failurePolicyOf(sb) === 'AutoRecreate' ? 'recreate' : 'lost', sinceMs };
}

/** A status patch (JSON merge patch): `null` removes a field. */
export type SandboxStatusPatch = { [K in keyof SandboxStatus]?: SandboxStatus[K] | null };

/** The assignment removed from status: expired, reset or recreated before it is placed again. */
export const UNASSIGNED = {
  assignedPod: null,
  nodeName: null,
  sandboxID: null,
  endpoints: null,
} as const satisfies SandboxStatusPatch;
