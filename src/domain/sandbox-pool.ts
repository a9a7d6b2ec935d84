/**
 * SandboxPool sizing, as pure rules: how many agent Pods the pool needs, which Pods to create or
 * remove, and what its status says. No I/O and no clock: the pool's workflow passes the facts its
 * activities gathered (the pool, its agent Pods, each agent's own report, the Sandboxes naming
 * the pool) and `now`.
 *
 *   demand = active + pending
 *     active  = sandboxes the pool's agents report holding (the agents are the authority; this
 *               counts Fast-mode sandboxes whose record is not written yet, and stopped ones,
 *               which keep their slot until deleted)
 *     pending = Sandboxes naming the pool that need a slot and no agent of the pool holds
 *               (Pending, or their agent is gone) — not Failed/Expired/Lost, not being deleted
 *   need    = ceil((demand + bufferMin) / maxSandboxesPerPod)            (the original's formula)
 *   desired = need when the pool has fewer Pods; when it has more, it shrinks only if more than
 *             bufferMax slots are free, and then to the most Pods leaving at most bufferMax free
 *             (never below need); always clamped to [poolMin, poolMax].
 *
 * Scale from and to zero: a pool whose size for its load is 0 (poolMin 0, bufferMin 0) still
 * keeps one agent (within poolMax) for scaleToZeroAfterSeconds (default 300) after its last
 * demand — a sandbox, a pending record, or a create that found no Ready agent (the fast path's
 * and the Strong create's hint, stamped by the workflow's clock) — and the delay counts from
 * when that agent is Ready, so the create that asked is placed, and the next one within the
 * delay finds the agent there. Then it goes to 0.
 *
 * Scale-down removes idle agents only: an agent that reports no sandbox and that no Sandbox
 * record is assigned to. Not-ready Pods go first, then the newest. Busy agents are kept even
 * when the pool is above its size; the status says so. The pool's agents are the Pods it
 * controls (isPoolAgentPod); a Pod that only carries its labels is not one of them.
 */
import {
  AGENT_APP_LABEL,
  AGENT_APP_VALUE,
  AGENT_POOL_LABEL,
  SandboxPoolKind,
  type PoolCapacity,
  type SandboxPhase,
  type SandboxPoolStatus,
} from '../api/sandbox.js';
import { setCondition, type Condition } from './conditions.js';
import type { CapabilitiesSpec } from './sandbox-capabilities.js';

/** Set on every SandboxPool; removed once no sandbox uses the pool and its agent Pods are gone. */
export const POOL_FINALIZER = 'sandbox.fast.io/pool-protection';

export function poolWorkflowId(namespace: string, name: string): string {
  return `sandbox-pool/${namespace}/${name}`;
}

/**
 * The name of the pool's n-th agent Pod created by one workflow lineage (`tag`): deterministic,
 * so a create retried after a crash finds its Pod instead of making a second one.
 */
export function agentPodName(pool: string, tag: string, n: number): string {
  const base = pool.length > 40 ? pool.slice(0, 40).replace(/[-.]+$/, '') : pool;
  return `${base}-agent-${tag}-${n}`;
}

/**
 * Whether a Pod is one of the pool's agents: the SandboxPool with this UID is its controller.
 * Labels alone prove nothing (anyone who may create a Pod can set them), and the fast path sends
 * its agents their pool's credentials and tenants' sandboxes.
 */
export function isPoolAgentPod(
  owners: readonly { apiVersion?: string; kind?: string; uid?: string; controller?: boolean }[] | undefined,
  poolUid: string,
): boolean {
  return (owners ?? []).some(
    (o) =>
      o.controller === true &&
      o.apiVersion === SandboxPoolKind.apiVersion &&
      o.kind === SandboxPoolKind.kind &&
      o.uid === poolUid,
  );
}

/** One agent Pod of the pool (controlled by it) as the activities saw it. */
export interface PoolAgentFacts {
  pod: string;
  /** The Pod's UID: every write to it is pinned to it. */
  uid: string;
  /** Where its agent listens (`http://podIP:port`), when the Pod has an IP. */
  url?: string;
  /** metadata.creationTimestamp (RFC 3339). */
  createdAt: string;
  /** Running, Ready and with a Pod IP. */
  ready: boolean;
  /** deletionTimestamp set: already on its way out, not counted. */
  deleting: boolean;
  /** The agent answered GET /api/v1/agent/status. */
  answered: boolean;
  /** Why the agent's node cannot run the pool's runtimeType (its report), if so. */
  runtimeUnsupported?: string;
  /** Sandboxes the agent reports (0 when it did not answer). */
  allocated: number;
  /** Sandbox names (claimName) the agent reports. */
  claims: string[];
  /** The agent reports it is draining (refusing creates). */
  draining: boolean;
}

/** A Sandbox naming the pool (spec.poolRef). */
export interface PoolSandboxFacts {
  name: string;
  phase?: SandboxPhase;
  /** status.assignedPod, or the allocation annotation's assignedPod. */
  assignedPod?: string;
  deleting: boolean;
}

export interface PoolFacts {
  capacity: PoolCapacity;
  /**
   * When the pool last had demand (a sandbox, a pending record, a create that found no Ready
   * agent), by the workflow's clock, and the workflow's now: for scale to zero (demandFloor).
   */
  lastDemandAtMs?: number;
  nowMs?: number;
  maxSandboxesPerPod: number;
  generation?: number;
  /** The pool's deletionTimestamp is set. */
  terminating: boolean;
  agents: PoolAgentFacts[];
  sandboxes: PoolSandboxFacts[];
}

/** Phases whose sandbox needs no slot on an agent (unless an agent still reports it). */
const SLOTLESS: ReadonlySet<SandboxPhase | undefined> = new Set(['Failed', 'Expired', 'Lost']);

export interface PoolDemand {
  active: number;
  pending: number;
  /** Sandboxes still using the pool: held by an agent, or a record that needs or holds a slot. */
  live: number;
}

/** Sandboxes of the pool waiting for a slot (the `pending` of the demand), by name. */
export function pendingSandboxes(f: PoolFacts): string[] {
  const held = new Set(f.agents.filter((a) => a.answered).flatMap((a) => a.claims));
  return f.sandboxes.filter((s) => !held.has(s.name) && !SLOTLESS.has(s.phase) && !s.deleting).map((s) => s.name);
}

export function poolDemand(f: PoolFacts): PoolDemand {
  const held = new Set<string>();
  let active = 0;
  for (const a of f.agents) {
    if (!a.answered) continue;
    active += a.allocated;
    for (const c of a.claims) if (c) held.add(c);
  }
  let pending = 0;
  let liveRecords = 0;
  for (const s of f.sandboxes) {
    if (held.has(s.name)) continue;
    if (SLOTLESS.has(s.phase)) continue;
    liveRecords++;
    if (!s.deleting) pending++;
  }
  return { active, pending, live: active + liveRecords };
}

/** The refusal of every create in a pool whose poolMax is 0. */
export function poolMaxZero(namespace: string, pool: string): string {
  return `SandboxPool ${pool} in namespace ${namespace} has poolMax 0: it runs no agent, so it takes no sandboxes (raise spec.capacity.poolMax)`;
}

/** Default of `capacity.scaleToZeroAfterSeconds`. */
export const DEFAULT_SCALE_TO_ZERO_AFTER_SECONDS = 300;

/**
 * The agents kept whatever the load says (scale from and to zero): one until
 * scaleToZeroAfterSeconds after the last demand, then none. `until` is when that ends.
 */
export function demandFloor(
  capacity: PoolCapacity,
  lastDemandAtMs: number | undefined,
  nowMs: number,
): { floor: number; until?: number } {
  if (lastDemandAtMs === undefined) return { floor: 0 };
  const until = lastDemandAtMs + (capacity.scaleToZeroAfterSeconds ?? DEFAULT_SCALE_TO_ZERO_AFTER_SECONDS) * 1000;
  return nowMs < until ? { floor: 1, until } : { floor: 0 };
}

/**
 * When the pool's last demand is after this pass (by the workflow's clock): now when it has load
 * (a sandbox, a pending record), had load at the last pass (`hadLoad`: it went since, so the
 * delay counts from here), or keeps an agent for demand that is not Ready yet — the delay counts
 * from when the agent is up, so an agent slower to start than the delay is not removed before
 * the create that asked for it is placed.
 */
export function lastDemandAfter(f: PoolFacts, hadLoad: boolean): number | undefined {
  const now = f.nowMs;
  if (now === undefined) return f.lastDemandAtMs;
  const { active, pending } = poolDemand(f);
  if (active + pending > 0 || hadLoad) return now;
  const kept = demandFloor(f.capacity, f.lastDemandAtMs, now).floor > 0;
  if (kept && !f.agents.some((a) => a.ready && !a.deleting)) return now;
  return f.lastDemandAtMs;
}

/**
 * The pool's size for this demand and this many Pods now (see the module comment); `floor`: the
 * Pods kept for recent demand (demandFloor), counted as needed.
 */
export function desiredPods(
  capacity: PoolCapacity,
  perPod: number,
  demand: number,
  current: number,
  floor = 0,
): { desired: number; need: number; limited?: 'AtPoolMax' | 'AtPoolMin' } {
  const per = Math.max(1, perPod);
  const need = Math.max(floor, Math.ceil((demand + capacity.bufferMin) / per));
  let target: number;
  if (current < need) target = need;
  else if (current * per - demand > capacity.bufferMax)
    target = Math.max(need, Math.floor((demand + capacity.bufferMax) / per));
  else target = current;
  const desired = Math.min(capacity.poolMax, Math.max(capacity.poolMin, target));
  const limited = target > capacity.poolMax ? 'AtPoolMax' : target < capacity.poolMin ? 'AtPoolMin' : undefined;
  return { desired, need, ...(limited ? { limited } : {}) };
}

export interface PoolPlan {
  desired: number;
  demand: PoolDemand;
  /** Agent Pods to create now. */
  create: number;
  /** Idle agents to remove through the drain protocol (drain, re-check empty, delete). */
  drain: string[];
  /** Owned, not-Ready Pods whose agent does not answer and that no record is assigned to: deleted directly. */
  remove: string[];
  /** Agents left draining (by an earlier pass) that are no longer to be removed. */
  undrain: string[];
  /** Pods above the desired size that are kept because they are busy. */
  keptBusy: number;
  /** Terminating and nothing left: the finalizer may go once no agent Pod remains. */
  release: boolean;
  limited?: 'AtPoolMax' | 'AtPoolMin';
  need: number;
  /** One agent is kept for recent demand until then (scale to zero after it), when it matters. */
  keepUntilMs?: number;
}

const byRemovalPreference = (a: PoolAgentFacts, b: PoolAgentFacts) =>
  Number(a.ready) - Number(b.ready) || (a.createdAt < b.createdAt ? 1 : a.createdAt > b.createdAt ? -1 : 0);

export function planPool(f: PoolFacts): PoolPlan {
  const demand = poolDemand(f);
  const alive = f.agents.filter((a) => !a.deleting);
  const assigned = new Set(f.sandboxes.filter((s) => s.assignedPod).map((s) => s.assignedPod!));
  // An agent that does not answer can be removed only while its Pod is not Ready (starting, or
  // its container down): a Ready Pod whose agent is silent for a moment may hold a sandbox whose
  // record is not written yet, and only the agent could say.
  const idle = (a: PoolAgentFacts) =>
    a.allocated === 0 && a.claims.length === 0 && !assigned.has(a.pod) && (a.answered || !a.ready);
  const load = demand.active + demand.pending;
  // Recent demand keeps one agent only where the load alone would leave none.
  const kept = load === 0 && f.nowMs !== undefined ? demandFloor(f.capacity, f.lastDemandAtMs, f.nowMs) : { floor: 0 };
  const sized = desiredPods(f.capacity, f.maxSandboxesPerPod, load, alive.length, kept.floor);
  let desired = sized.desired;
  if (f.terminating) desired = 0;
  const surplus = Math.max(0, alive.length - desired);
  const candidates = alive.filter(idle).sort(byRemovalPreference);
  // A terminating pool keeps its busy agents until their sandboxes are gone; it never grows.
  const chosen = candidates.slice(0, surplus);
  const drain = chosen.filter((a) => a.answered).map((a) => a.pod);
  const remove = chosen.filter((a) => !a.answered).map((a) => a.pod);
  const leaving = new Set(chosen.map((a) => a.pod));
  const undrain = alive.filter((a) => a.draining && a.answered && !leaving.has(a.pod)).map((a) => a.pod);
  return {
    desired,
    demand,
    create: f.terminating ? 0 : Math.max(0, desired - alive.length),
    drain,
    remove,
    // On a terminating pool, agents stay undrained only if busy; idle ones are on their way out.
    undrain: f.terminating ? [] : undrain,
    keptBusy: Math.max(0, surplus - chosen.length),
    release: f.terminating && demand.live === 0 && f.agents.length === 0,
    need: sized.need,
    ...(sized.limited && !f.terminating ? { limited: sized.limited } : {}),
    // Said only where it decides: the load, bufferMin and poolMin alone would leave no agent.
    ...(kept.until !== undefined &&
    !f.terminating &&
    f.capacity.poolMax > 0 &&
    f.capacity.poolMin === 0 &&
    f.capacity.bufferMin === 0
      ? { keepUntilMs: kept.until }
      : {}),
  };
}

/** The pool's status after this pass (counts from the facts, the conditions from the plan). */
export function poolStatus(
  f: PoolFacts,
  plan: PoolPlan,
  existing: readonly Condition[] | undefined,
  now: Date,
): SandboxPoolStatus {
  const alive = f.agents.filter((a) => !a.deleting);
  const answered = alive.filter((a) => a.answered);
  const readyPods = alive.filter((a) => a.ready).length;
  const idleAgents = answered.filter((a) => a.allocated === 0).length;
  const { active, pending, live } = plan.demand;
  const kept =
    plan.keepUntilMs !== undefined
      ? `; one kept for recent demand until ${new Date(plan.keepUntilMs).toISOString()}, then scaled to zero`
      : '';
  const demandText = `${active} active and ${pending} pending sandboxes, bufferMin ${f.capacity.bufferMin}, ${f.maxSandboxesPerPod} per Pod${kept}`;
  let ready: Omit<Condition, 'lastTransitionTime'>;
  if (f.terminating)
    ready = {
      type: 'Ready',
      status: 'False',
      reason: 'Terminating',
      message:
        live > 0
          ? `being deleted: ${live} sandbox${live === 1 ? '' : 'es'} still use${live === 1 ? 's' : ''} the pool; no new ones are placed, and the pool is removed once they are gone`
          : `being deleted: no sandbox uses the pool; removing its ${alive.length} agent Pods`,
    };
  else if (answered.some((a) => a.runtimeUnsupported))
    ready = {
      type: 'Ready',
      status: 'False',
      reason: 'RuntimeUnsupported',
      message: answered.find((a) => a.runtimeUnsupported)!.runtimeUnsupported!,
    };
  else if (alive.length < plan.desired || readyPods < plan.desired)
    ready = {
      type: 'Ready',
      status: 'False',
      reason: 'ScalingUp',
      message: `${readyPods} of ${plan.desired} agent Pods ready (${demandText})`,
    };
  else if (plan.keptBusy > 0)
    ready = {
      type: 'Ready',
      status: 'True',
      reason: 'ScaleDownWaiting',
      message: `${alive.length} agent Pods, ${plan.desired} wanted (${demandText}); ${plan.keptBusy} kept: busy agents stay until idle`,
    };
  else if (alive.length > plan.desired)
    ready = {
      type: 'Ready',
      status: 'True',
      reason: 'ScalingDown',
      message: `removing idle agents: ${alive.length} agent Pods, ${plan.desired} wanted (${demandText})`,
    };
  else
    ready = {
      type: 'Ready',
      status: 'True',
      reason: 'Scaled',
      message: `${readyPods} agent Pods ready, ${plan.desired} wanted (${demandText})`,
    };
  const limited: Omit<Condition, 'lastTransitionTime'> =
    plan.limited === 'AtPoolMax'
      ? {
          type: 'ScalingLimited',
          status: 'True',
          reason: 'AtPoolMax',
          message: `the demand needs ${plan.need} agent Pods; poolMax is ${f.capacity.poolMax}`,
        }
      : plan.limited === 'AtPoolMin'
        ? {
            type: 'ScalingLimited',
            status: 'True',
            reason: 'AtPoolMin',
            message: `the demand needs fewer agent Pods; poolMin is ${f.capacity.poolMin}`,
          }
        : {
            type: 'ScalingLimited',
            status: 'False',
            reason: 'WithinRange',
            message: `the desired size is within [poolMin ${f.capacity.poolMin}, poolMax ${f.capacity.poolMax}]`,
          };
  const generation = f.generation;
  let conditions = setCondition(existing, { ...ready, ...(generation ? { observedGeneration: generation } : {}) }, now);
  conditions = setCondition(conditions, { ...limited, ...(generation ? { observedGeneration: generation } : {}) }, now);
  return {
    ...(generation !== undefined ? { observedGeneration: generation } : {}),
    currentPods: alive.length,
    readyPods,
    totalAgents: answered.length,
    idleAgents,
    busyAgents: answered.length - idleAgents,
    conditions,
  };
}

/**
 * The status of a pass whose write in the pool's namespace (its agent Secret, an agent Pod) the
 * apiserver refused for good: Ready=False, Forbidden, with the refusal and the grant it lacks.
 * The pool's workflow tries again on its next pass, so a RoleBinding added later is enough.
 */
export function poolRefusedStatus(
  status: SandboxPoolStatus,
  namespace: string,
  refusal: string,
  now: Date,
): SandboxPoolStatus {
  const message =
    `the fast path may not write this pool's agent Pods or their Secret in namespace ${namespace}: ${refusal}. ` +
    `It may only where a RoleBinding grants its ServiceAccount the ClusterRole durable-operators-fastpath-agent-pods ` +
    `(deploy/examples/sandbox-pool.yaml; with the chart, list the namespace in fastpath.agentPodNamespaces); tried again on every pass`;
  const generation = status.observedGeneration;
  const ready = { type: 'Ready', status: 'False' as const, reason: 'Forbidden', message };
  return {
    ...status,
    conditions: setCondition(
      status.conditions,
      { ...ready, ...(generation ? { observedGeneration: generation } : {}) },
      now,
    ),
  };
}

/** What an agent Pod is built from. */
export interface AgentPodInput {
  namespace: string;
  pool: string;
  poolUid: string;
  name: string;
  perPod: number;
  template: { metadata?: Record<string, unknown>; spec?: Record<string, unknown> };
  /** The pool's runtime settings, given to the agent as the environment it reads. */
  runtime?: PoolRuntime;
}

/** What the pool says about how its agents run sandboxes (runtimeType, sandboxResources, warmImages). */
export interface PoolRuntime {
  runtimeType?: string;
  sandboxResources?: { cpu?: string; memory?: string; pids?: number; ephemeralStorage?: string };
  warmImages?: { image: string; count: number }[];
  imagePullSecrets?: { name: string }[];
  sandboxSecurityContext?: { capabilities?: CapabilitiesSpec };
  egress?: { policy?: string; allow?: { cidr: string; ports?: number[] }[]; dnsServers?: string[] };
}

/** The pool as controller owner of what its workflow makes (agent Pods, their token Secret). */
export function poolOwner(pool: string, poolUid: string) {
  return {
    apiVersion: SandboxPoolKind.apiVersion,
    kind: SandboxPoolKind.kind,
    name: pool,
    uid: poolUid,
    controller: true,
  };
}

/**
 * The Secret holding the pool's agent token (key `token`) and its agents' TLS certificate, key
 * and CA (`tls.crt`, `tls.key`, `ca.crt`: src/fastpath/agent-pki.ts), which its agent Pods mount.
 * Named after the pool's UID too, so a pool recreated under the same name never finds the old one.
 */
export function agentTokenSecretName(pool: string, poolUid: string): string {
  return `${pool.slice(0, 200).replace(/[-.]+$/, '')}-agent-token-${poolUid.slice(0, 8)}`;
}

/** Where an agent Pod mounts its pool's Secret; DO_AGENT_TOKEN_FILE and DO_AGENT_TLS_*_FILE name the files in it. */
export const AGENT_TOKEN_DIR = '/etc/sandbox-agent/pool-token';

/** Where an agent finds the pool's image pull Secrets (one directory per Secret). */
export const PULL_SECRETS_DIR = '/etc/sandbox-agent/pull-secrets';

/** The pool's runtime settings as the agent's environment (the original's RUNTIME_TYPE, and the extensions). */
export function runtimeEnv(r: PoolRuntime | undefined): Record<string, string> {
  const res = r?.sandboxResources;
  const caps = r?.sandboxSecurityContext?.capabilities;
  return {
    RUNTIME_TYPE: r?.runtimeType ?? 'container',
    ...(res?.cpu ? { SANDBOX_DEFAULT_CPU: res.cpu } : {}),
    ...(res?.memory ? { SANDBOX_DEFAULT_MEMORY: res.memory } : {}),
    ...(res?.pids ? { SANDBOX_DEFAULT_PIDS: String(res.pids) } : {}),
    ...(res?.ephemeralStorage ? { SANDBOX_DEFAULT_EPHEMERAL_STORAGE: res.ephemeralStorage } : {}),
    ...(r?.warmImages?.length
      ? { SANDBOX_WARM_IMAGES: r.warmImages.map((w) => `${w.image}=${w.count}`).join(',') }
      : {}),
    // Always set, empty or not: only the pool's field (checked at admission) decides them, never the template.
    SANDBOX_CAPABILITIES_ADD: (caps?.add ?? []).join(','),
    SANDBOX_CAPABILITIES_DROP: (caps?.drop ?? []).join(','),
    ...(r?.egress ? { SANDBOX_EGRESS: JSON.stringify(r.egress) } : {}),
  };
}

interface ContainerLike {
  name?: string;
  env?: { name: string; value?: string; valueFrom?: unknown }[];
  [k: string]: unknown;
}

/**
 * The pool's agent Pod: the agentTemplate with the pool's labels (`app=sandbox-agent`,
 * `fast-sandbox.io/pool=<pool>`, which the template cannot override), the pool as its controller
 * owner, and in the agent container (the one named `agent`, else the first) AGENT_CAPACITY =
 * maxSandboxesPerPod, POD_NAME, POD_UID, POD_NAMESPACE and POD_IP from the downward API unless the
 * template sets them, and the pool's runtime settings (RUNTIME_TYPE, as the original, and the
 * sandbox defaults, warm images and capabilities), which the pool's fields decide over the template. The pool's
 * own Secret is mounted (token and TLS files, named by DO_AGENT_TOKEN_FILE and
 * DO_AGENT_TLS_*_FILE); the agent serves HTTPS only, so HTTP probes get scheme HTTPS and a
 * template's `--insecure-plain-http` is dropped.
 */
export function agentPod(input: AgentPodInput): Record<string, unknown> {
  const meta = (input.template.metadata ?? {}) as {
    labels?: Record<string, string>;
    annotations?: Record<string, string>;
  };
  const spec = structuredClone(input.template.spec ?? {}) as { containers?: ContainerLike[] };
  const containers = spec.containers?.length
    ? spec.containers
    : [{ name: 'agent', image: 'durable-operators:dev', args: ['agent'] }];
  const target = containers.find((c) => c.name === 'agent') ?? containers[0]!;
  const env = [...(target.env ?? [])];
  const setEnv = (name: string, v: Omit<NonNullable<ContainerLike['env']>[number], 'name'>) => {
    if (!env.some((e) => e.name === name)) env.push({ name, ...v });
  };
  setEnv('AGENT_CAPACITY', { value: String(input.perPod) });
  setEnv('POD_NAME', { valueFrom: { fieldRef: { fieldPath: 'metadata.name' } } });
  setEnv('POD_UID', { valueFrom: { fieldRef: { fieldPath: 'metadata.uid' } } });
  setEnv('POD_NAMESPACE', { valueFrom: { fieldRef: { fieldPath: 'metadata.namespace' } } });
  setEnv('POD_IP', { valueFrom: { fieldRef: { fieldPath: 'status.podIP' } } });
  // The node's address: never reachable from a sandbox.
  setEnv('HOST_IP', { valueFrom: { fieldRef: { fieldPath: 'status.hostIP' } } });
  const secrets = input.runtime?.imagePullSecrets ?? [];
  const pulls = secrets.length ? { SANDBOX_PULL_SECRETS_DIR: PULL_SECRETS_DIR } : {};
  const token = {
    DO_AGENT_TOKEN_FILE: `${AGENT_TOKEN_DIR}/token`,
    DO_AGENT_TLS_CERT_FILE: `${AGENT_TOKEN_DIR}/tls.crt`,
    DO_AGENT_TLS_KEY_FILE: `${AGENT_TOKEN_DIR}/tls.key`,
    DO_AGENT_TLS_CA_FILE: `${AGENT_TOKEN_DIR}/ca.crt`,
  };
  for (const [name, value] of Object.entries({ ...runtimeEnv(input.runtime), ...pulls, ...token })) {
    const i = env.findIndex((e) => e.name === name);
    if (i >= 0) env.splice(i, 1);
    env.push({ name, value });
  }
  // The pool's own token (never one the template names: agents of another pool would accept it).
  const s0 = spec as { volumes?: { name?: string; [k: string]: unknown }[] };
  s0.volumes = [
    ...(s0.volumes ?? []).filter((v) => v.name !== 'pool-agent-token'),
    {
      name: 'pool-agent-token',
      secret: { secretName: agentTokenSecretName(input.pool, input.poolUid), defaultMode: 0o400 },
    },
  ];
  target.volumeMounts = [
    ...((target.volumeMounts as { name?: string }[] | undefined) ?? []).filter((m) => m.name !== 'pool-agent-token'),
    { name: 'pool-agent-token', mountPath: AGENT_TOKEN_DIR, readOnly: true },
  ];
  // The agent serves HTTPS only: never plain HTTP (a template cannot opt in), probes over HTTPS.
  for (const k of ['command', 'args'] as const) {
    const list = target[k];
    if (Array.isArray(list)) target[k] = list.filter((a) => a !== '--insecure-plain-http');
  }
  for (const k of ['readinessProbe', 'livenessProbe', 'startupProbe'] as const) {
    const probe = target[k] as { httpGet?: Record<string, unknown> } | undefined;
    if (probe?.httpGet) probe.httpGet = { ...probe.httpGet, scheme: 'HTTPS' };
  }
  if (secrets.length) {
    const s = spec as { volumes?: unknown[] };
    s.volumes = [
      ...(s.volumes ?? []),
      ...secrets.map((x, i) => ({ name: `pull-secret-${i}`, secret: { secretName: x.name, defaultMode: 0o400 } })),
    ];
    target.volumeMounts = [
      ...((target.volumeMounts as unknown[] | undefined) ?? []),
      ...secrets.map((x, i) => ({
        name: `pull-secret-${i}`,
        mountPath: `${PULL_SECRETS_DIR}/${x.name}`,
        readOnly: true,
      })),
    ];
  }
  target.env = env;
  spec.containers = containers;
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: {
      name: input.name,
      namespace: input.namespace,
      labels: { ...meta.labels, [AGENT_APP_LABEL]: AGENT_APP_VALUE, [AGENT_POOL_LABEL]: input.pool },
      ...(meta.annotations ? { annotations: meta.annotations } : {}),
      ownerReferences: [poolOwner(input.pool, input.poolUid)],
    },
    spec,
  };
}

/** At most this many waiting sandboxes are told per pass that agents were added. */
export const MAX_PENDING_HINTS = 100;

/**
 * New agents answer (more than at the last pass): the pool's waiting sandboxes are told, so they
 * are placed now rather than at their own retry. `lastAnswering` is undefined on a run's first
 * pass, which tells nobody.
 */
export function sandboxesToTell(
  f: PoolFacts,
  lastAnswering: number | undefined,
): { tell: string[]; answering: number } {
  const answering = f.agents.filter((a) => a.answered && !a.deleting).length;
  const grew = lastAnswering !== undefined && answering > lastAnswering;
  return { tell: grew ? pendingSandboxes(f).slice(0, MAX_PENDING_HINTS) : [], answering };
}

/** While the pool is changing size, a pass at least this often; and never more than one per this. */
export const POOL_SETTLING_MS = 1_000;

/**
 * How long the pool's workflow waits for a hint after a pass that changed nothing (after its
 * POOL_SETTLING_MS pause): sooner while its size changes, and no later than when the agent kept
 * for recent demand is due to go.
 */
export function poolWaitMs(
  ready: Pick<Condition, 'status' | 'reason'> | undefined,
  keepUntilMs: number | undefined,
  nowMs: number,
  everyMs: number,
): number {
  const settling = ready?.status === 'False' || ready?.reason === 'ScalingDown';
  const base = (settling ? POOL_SETTLING_MS * 3 : everyMs) - POOL_SETTLING_MS;
  const untilZero = keepUntilMs !== undefined ? keepUntilMs - nowMs + 100 : base;
  return Math.max(1, Math.min(base, untilZero));
}

/**
 * Whether a Sandbox record's event changes its pool's demand as only the record can tell: a
 * record no agent holds yet (no placement: created with kubectl, or its annotation removed)
 * appearing or starting its deletion. A placed record's sandbox is on an agent, whose report
 * (the fast path's registry) hints the pool when it appears there and when it goes.
 */
export function recordChangesPoolDemand(e: { appeared: boolean; deletionStarted: boolean; placed: boolean }): boolean {
  return (e.appeared || e.deletionStarted) && !e.placed;
}
