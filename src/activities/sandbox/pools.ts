/**
 * Activities of a SandboxPool's workflow (src/workflows/sandbox/pool.ts): read the facts (the
 * pool, its agent Pods, each agent's own fresh report, the Sandboxes naming the pool), create
 * agent Pods, drain and undrain agents, delete an agent Pod, write the pool's status and its
 * finalizer. They decide nothing: src/domain/sandbox-pool.ts does, in the workflow.
 *
 * They run in the fast-path process (the sandbox task queue), which holds the agents' token.
 * Every write is pinned to a UID: a Pod or pool recreated under the same name is never touched.
 */
import type { V1Pod } from '@kubernetes/client-node';
import type { AgentStatusReport } from '../../agent/api.js';
import {
  AGENT_APP_LABEL,
  AGENT_APP_VALUE,
  AGENT_POOL_LABEL,
  SandboxKind,
  SandboxPoolKind,
  parseAllocation,
  type Sandbox,
  type SandboxPool,
  type SandboxPoolStatus,
} from '../../api/sandbox.js';
import { mapLimited } from '../../concurrency.js';
import type { Condition } from '../../domain/conditions.js';
import { poolScaledDownEvent, poolScaledUpEvent } from '../../domain/events.js';
import { GONE, ok, type Found } from '../../domain/results.js';
import {
  POOL_FINALIZER,
  agentPod,
  agentTokenSecretName,
  isPoolAgentPod,
  poolOwner,
  type PoolAgentFacts,
  type PoolRuntime,
  type PoolFacts,
  type PoolSandboxFacts,
} from '../../domain/sandbox-pool.js';
import type { AgentClient } from '../../fastpath/agent-client.js';
import type { AgentCredentials } from '../../fastpath/agent-credentials.js';
import { windowStart, type AgentPki } from '../../fastpath/agent-pki.js';
import { agentUrl } from '../../fastpath/registry.js';
import { isAlreadyExists, statusCode, apiMessage, type KubeClient } from '../../kube/client.js';
import { isRetriedActivity, type EventRecorder } from '../../kube/events.js';
import { getObject, listAll, patchStatusUnlessGone } from '../kubernetes/calls.js';
import { kubeFailure } from '../kubernetes/errors.js';

export interface PoolRef {
  namespace: string;
  name: string;
}

export type PoolRead =
  | { status: 'gone' }
  | {
      status: 'ok';
      uid: string;
      finalized: boolean;
      template: SandboxPool['spec']['agentTemplate'];
      runtime: PoolRuntime;
      conditions?: Condition[];
      facts: PoolFacts;
      /** What the pool's agent Secret must hold now: its certificate's window and CA (changes with the key). */
      agentTls: AgentTlsVersion;
    };

/** Which certificate an agent Secret holds: the window it was issued for, and the CA's name. */
export interface AgentTlsVersion {
  window: number;
  ca: string;
}

export interface AgentPodRef {
  namespace: string;
  pod: string;
  uid: string;
}

/** An agent to drain: its Pod and where it listens (from the pass's read; a Pod's IP never changes). */
export interface AgentCallRef extends AgentPodRef {
  url: string;
}

/** What a drain or undrain found: the agent's own count right after the change. */
export type DrainResult =
  { status: 'ok'; allocated: number; claims: string[] } | { status: 'unreachable'; message: string };

const poolRef = (r: PoolRef) => ({
  apiVersion: SandboxPoolKind.apiVersion,
  kind: SandboxPoolKind.kind,
  plural: SandboxPoolKind.plural,
  namespace: r.namespace,
  name: r.name,
});
const podRef = (namespace: string, name: string) => ({ apiVersion: 'v1', kind: 'Pod', namespace, name });

function isReady(pod: V1Pod): boolean {
  return (
    pod.status?.phase === 'Running' &&
    !!pod.status.podIP &&
    (pod.status.conditions ?? []).some((c) => c.type === 'Ready' && c.status === 'True')
  );
}

export function createSandboxPoolActivities(
  kube: KubeClient,
  agents: AgentClient,
  credentials: AgentCredentials,
  pki: AgentPki,
  events: EventRecorder,
) {
  /** The pool's agent Secret: its token, and its agents' certificate, key and CA (TLS, src/fastpath/agent-pki.ts). */
  async function agentSecretData(pool: PoolRef & { uid: string }, now: number): Promise<Record<string, string>> {
    const identity = { namespace: pool.namespace, name: pool.name, uid: pool.uid };
    const tls = await pki.agentTls(identity, now);
    return {
      token: credentials.tokenOf(identity),
      'tls.crt': tls.cert,
      'tls.key': tls.key,
      'ca.crt': tls.ca,
    };
  }

  const tlsVersion = async (now: number): Promise<AgentTlsVersion> => ({
    window: windowStart(now),
    ca: await pki.caName(),
  });

  /** Creates the pool's agent Secret; false when one of that name exists already. */
  async function createAgentSecret(r: PoolRef & { uid: string }, now: number): Promise<boolean> {
    const secret = agentTokenSecretName(r.name, r.uid);
    try {
      await kube.create({
        apiVersion: 'v1',
        kind: 'Secret',
        metadata: {
          name: secret,
          namespace: r.namespace,
          labels: { [AGENT_POOL_LABEL]: r.name },
          ownerReferences: [poolOwner(r.name, r.uid)],
        },
        type: 'Opaque',
        stringData: await agentSecretData(r, now),
      });
      return true;
    } catch (err) {
      // The name carries the pool's UID: one that exists is this pool's, written by an earlier attempt.
      if (!isAlreadyExists(err)) throw kubeFailure(err, `create the agent Secret ${r.namespace}/${secret}`);
      return false;
    }
  }

  async function setDrain(r: AgentCallRef, on: boolean): Promise<DrainResult> {
    try {
      const report = await agents.drain(r.url, on);
      return {
        status: 'ok',
        allocated: report.allocated,
        claims: report.sandboxStatuses.map((s) => s.claimName ?? ''),
      };
    } catch (err) {
      const status = (err as { status?: number }).status;
      // 401/5xx: the agent is there and refused; retried. Unreachable: the caller decides.
      if (status !== undefined) throw err;
      return { status: 'unreachable', message: (err as Error).message };
    }
  }

  return {
    /** The pool, its agent Pods with each agent's fresh report, and the Sandboxes naming it. */
    async readPoolFacts(r: PoolRef): Promise<PoolRead> {
      const pool = await getObject<SandboxPool>(kube, poolRef(r));
      if (!pool) return { status: 'gone' };
      const uid = pool.metadata!.uid!;
      const selector = `${AGENT_APP_LABEL}=${AGENT_APP_VALUE},${AGENT_POOL_LABEL}=${r.name}`;
      const [pods, records] = await Promise.all([
        listAll<V1Pod>(kube, 'v1', 'Pod', { namespace: r.namespace, labelSelector: selector }),
        listAll<Sandbox>(kube, SandboxKind.apiVersion, SandboxKind.kind, { namespace: r.namespace }),
      ]);
      // Only the Pods the pool controls are its agents (and only they are sent the token).
      const agentPods = pods.filter((pod) => isPoolAgentPod(pod.metadata?.ownerReferences, uid));
      const agentFacts = await mapLimited(agentPods, 16, async (pod): Promise<PoolAgentFacts> => {
        const deleting = !!pod.metadata?.deletionTimestamp;
        const ready = isReady(pod) && !deleting;
        const url = agentUrl(pod);
        let report: AgentStatusReport | undefined;
        if (url && !deleting && pod.status?.phase === 'Running') {
          credentials.admit(url, { namespace: r.namespace, name: r.name, uid });
          report = await agents.status(url).catch(() => undefined);
        }
        return {
          pod: pod.metadata!.name!,
          uid: pod.metadata!.uid!,
          ...(url ? { url } : {}),
          createdAt: String(pod.metadata?.creationTimestamp ?? ''),
          ready,
          deleting,
          answered: !!report,
          allocated: report?.allocated ?? 0,
          claims: report?.sandboxStatuses.map((s) => s.claimName ?? '') ?? [],
          draining: !!report?.draining,
          ...(report?.runtimeUnsupported ? { runtimeUnsupported: report.runtimeUnsupported } : {}),
        };
      });
      const sandboxes: PoolSandboxFacts[] = records
        .filter((sb) => sb.spec?.poolRef === r.name)
        .map((sb) => {
          const alloc = parseAllocation(sb.metadata?.annotations);
          const assignedPod =
            sb.status?.assignedPod ?? (alloc && !(alloc instanceof Error) ? alloc.assignedPod : undefined);
          return {
            name: sb.metadata!.name!,
            ...(sb.status?.phase ? { phase: sb.status.phase } : {}),
            ...(assignedPod ? { assignedPod } : {}),
            deleting: !!sb.metadata?.deletionTimestamp,
          };
        });
      return {
        status: 'ok',
        uid,
        finalized: (pool.metadata?.finalizers ?? []).includes(POOL_FINALIZER),
        template: pool.spec.agentTemplate,
        runtime: {
          ...(pool.spec.runtimeType ? { runtimeType: pool.spec.runtimeType } : {}),
          ...(pool.spec.sandboxResources ? { sandboxResources: pool.spec.sandboxResources } : {}),
          ...(pool.spec.warmImages ? { warmImages: pool.spec.warmImages } : {}),
          ...(pool.spec.imagePullSecrets ? { imagePullSecrets: pool.spec.imagePullSecrets } : {}),
          ...(pool.spec.sandboxSecurityContext ? { sandboxSecurityContext: pool.spec.sandboxSecurityContext } : {}),
          ...(pool.spec.egress ? { egress: pool.spec.egress } : {}),
        },
        ...(pool.status?.conditions ? { conditions: pool.status.conditions as Condition[] } : {}),
        agentTls: await tlsVersion(Date.now()),
        facts: {
          capacity: pool.spec.capacity,
          maxSandboxesPerPod: pool.spec.maxSandboxesPerPod ?? 5,
          ...(pool.metadata?.generation !== undefined ? { generation: pool.metadata.generation } : {}),
          terminating: !!pool.metadata?.deletionTimestamp,
          agents: agentFacts,
          sandboxes,
        },
      };
    },

    /** Adds or removes the pool-protection finalizer (resourceVersion precondition: others' changes are kept). */
    async setPoolFinalizer(r: PoolRef & { uid: string; present: boolean }): Promise<Found> {
      const pool = await getObject<SandboxPool>(kube, poolRef(r));
      if (!pool || pool.metadata?.uid !== r.uid) return GONE;
      const current = pool.metadata.finalizers ?? [];
      if (current.includes(POOL_FINALIZER) === r.present) return ok();
      const finalizers = r.present ? [...current, POOL_FINALIZER] : current.filter((f) => f !== POOL_FINALIZER);
      try {
        await kube.mergePatch(
          poolRef(r),
          { metadata: { finalizers, resourceVersion: pool.metadata.resourceVersion } },
          { uid: r.uid },
        );
        return ok();
      } catch (err) {
        const code = statusCode(err);
        if (code === 404 || (code === 409 && !String(apiMessage(err)).includes('the object has been modified')))
          return GONE;
        throw kubeFailure(err, `${r.present ? 'add' : 'remove'} finalizer on SandboxPool ${r.namespace}/${r.name}`);
      }
    },

    /**
     * Creates the named agent Pods from the pool's template. A name that exists already and
     * belongs to this pool is a create an earlier attempt made: success.
     */
    async createAgentPods(
      r: PoolRef & {
        uid: string;
        names: string[];
        perPod: number;
        template: SandboxPool['spec']['agentTemplate'];
        runtime?: PoolRuntime;
      },
    ): Promise<string[]> {
      // First the pool's agent Secret (token, certificate, key, CA), which the Pods mount; it
      // never leaves this activity.
      await createAgentSecret(r, Date.now());
      const created: string[] = [];
      for (const name of r.names) {
        const pod = agentPod({
          namespace: r.namespace,
          pool: r.name,
          poolUid: r.uid,
          name,
          perPod: r.perPod,
          template: r.template,
          ...(r.runtime ? { runtime: r.runtime } : {}),
        });
        try {
          await kube.create(pod);
          created.push(name);
        } catch (err) {
          if (!isAlreadyExists(err)) throw kubeFailure(err, `create agent Pod ${r.namespace}/${name}`);
          // Listed rather than read: the fast path needs no `get` on Pods for this rare path.
          const selector = `${AGENT_APP_LABEL}=${AGENT_APP_VALUE},${AGENT_POOL_LABEL}=${r.name}`;
          const pods = await listAll<V1Pod>(kube, 'v1', 'Pod', { namespace: r.namespace, labelSelector: selector });
          const existing = pods.find((p) => p.metadata?.name === name);
          if (!isPoolAgentPod(existing?.metadata?.ownerReferences, r.uid))
            throw kubeFailure(err, `create agent Pod ${r.namespace}/${name}: the name is taken by another Pod`);
        }
      }
      await events.record(
        { ...poolRef(r), uid: r.uid },
        poolScaledUpEvent(isRetriedActivity() ? r.names : created, r.perPod),
      );
      return created;
    },

    /**
     * Writes the pool's agent Secret for now: the token, and the agents' certificate of the
     * current window (created when missing, else its keys replaced). The agents' kubelets update
     * the mounted files and the agents serve the new certificate without a restart. Returns what
     * it wrote (the workflow writes again when readPoolFacts says the window or the CA changed).
     */
    async writeAgentSecret(r: PoolRef & { uid: string }): Promise<AgentTlsVersion> {
      const now = Date.now();
      const secret = agentTokenSecretName(r.name, r.uid);
      // Patched first (a renewal, the usual case), created when missing.
      for (let attempt = 0; attempt < 2; attempt++) {
        try {
          await kube.mergePatch(
            { apiVersion: 'v1', kind: 'Secret', namespace: r.namespace, name: secret },
            { stringData: await agentSecretData(r, now) },
          );
          return tlsVersion(now);
        } catch (err) {
          if (statusCode(err) !== 404) throw kubeFailure(err, `renew the agent Secret ${r.namespace}/${secret}`);
        }
        if (await createAgentSecret(r, now)) return tlsVersion(now);
      }
      throw new Error(`the agent Secret ${r.namespace}/${secret} keeps appearing and disappearing: retried`);
    },

    /** POST /api/v1/agent/drain: from now on the agent refuses new sandboxes; its count after the change. */
    drainAgent(r: AgentCallRef): Promise<DrainResult> {
      return setDrain(r, true);
    },

    undrainAgent(r: AgentCallRef): Promise<DrainResult> {
      return setDrain(r, false);
    },

    /** How many Sandbox records of the namespace are assigned to the agent (status or annotation). */
    async sandboxesAssignedTo(r: { namespace: string; pod: string }): Promise<number> {
      const records = await listAll<Sandbox>(kube, SandboxKind.apiVersion, SandboxKind.kind, {
        namespace: r.namespace,
      });
      return records.filter((sb) => {
        const alloc = parseAllocation(sb.metadata?.annotations);
        return (
          sb.status?.assignedPod === r.pod ||
          (alloc !== undefined && !(alloc instanceof Error) && alloc.assignedPod === r.pod)
        );
      }).length;
    },

    /** Deletes an agent Pod of `pool`, pinned to its UID; false when it was gone already. */
    async deleteAgentPod(r: AgentPodRef & { pool?: PoolRef & { uid: string } }): Promise<boolean> {
      let deleted: boolean;
      try {
        deleted = await kube.delete(podRef(r.namespace, r.pod), { uid: r.uid });
      } catch (err) {
        throw kubeFailure(err, `delete agent Pod ${r.namespace}/${r.pod}`);
      }
      // Gone on a retry may be this activity's own delete, made before its Event.
      if (r.pool && (deleted || isRetriedActivity()))
        await events.record({ ...poolRef(r.pool), uid: r.pool.uid }, poolScaledDownEvent(r.pod));
      return deleted;
    },

    /** The pool's status (status subresource, merge patch pinned to the UID). */
    async writePoolStatus(r: PoolRef & { uid: string; status: SandboxPoolStatus }): Promise<Found> {
      return patchStatusUnlessGone(kube, poolRef(r), r.status as Record<string, unknown>, r.uid);
    },
  };
}

export type SandboxPoolActivities = ReturnType<typeof createSandboxPoolActivities>;
