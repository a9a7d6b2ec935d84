/**
 * The janitor's activities (the seed's variant: the agents' own reports against the Sandbox
 * records). Fast mode can leave a sandbox on an agent that no record covers (its record was
 * refused, or the process died before anything durable existed); Strong mode can leave a record
 * whose agent lost the sandbox. The scan finds both with pure rules (src/domain/sandbox.ts);
 * each orphan is re-checked against a fresh read just before it is deleted.
 */
import { SandboxKind, parseAllocation, type Sandbox } from '../../api/sandbox.js';
import {
  runStillHolds,
  lostRecords,
  orphansOn,
  reapersOf,
  type LostVerdict,
  type OrphanVerdict,
  type RecordedSandbox,
} from '../../domain/sandbox.js';
import type { ReapedContainer } from '../../agent/api.js';
import type { AgentClient } from '../../fastpath/agent-client.js';
import type { FastPathMetrics } from '../../fastpath/metrics.js';
import type { SandboxRegistry } from '../../fastpath/registry.js';
import type { KubeClient } from '../../kube/client.js';
import type { SandboxState } from '../../workflows/sandbox/messages.js';
import { getObject, heartbeat, listAll } from '../kubernetes/calls.js';

export function recordedSandbox(sb: Sandbox): RecordedSandbox {
  const alloc = parseAllocation(sb.metadata?.annotations);
  return {
    namespace: sb.metadata?.namespace ?? '',
    name: sb.metadata?.name ?? '',
    uid: sb.metadata?.uid ?? '',
    phase: sb.status?.phase,
    assignedPod: sb.status?.assignedPod,
    sandboxId: sb.status?.sandboxID,
    pendingAgent: alloc && !(alloc instanceof Error) ? alloc.assignedPod : undefined,
  };
}

export function createSandboxJanitorActivities(
  registry: SandboxRegistry,
  agents: AgentClient,
  kube: KubeClient,
  metrics: Pick<FastPathMetrics, 'janitorRemoved' | 'janitorLost'> | undefined,
  /** Tells a sandbox's workflow that its agent lost it (signal-with-start: a workflow exists afterwards). */
  reportLost: (lost: LostVerdict) => Promise<void>,
  /** The one namespace this fast path serves (DO_FASTPATH_NAMESPACE); all when unset. */
  namespace: string | undefined,
  /**
   * What the name's running workflow is doing (undefined when none runs; throws when Temporal
   * cannot tell): a sandbox whose creation is still writing its record is late, not orphaned.
   */
  creationOf: (namespace: string, name: string) => Promise<Pick<SandboxState, 'stage' | 'sandboxId'> | undefined>,
) {
  return {
    /** Fresh agent reports and a fresh list of records, compared. */
    async scanSandboxAgents(req: { orphanTimeoutSeconds: number }): Promise<{
      orphans: OrphanVerdict[];
      lost: LostVerdict[];
      agents: number;
      records: number;
    }> {
      await registry.pollNow();
      const recorded = (await listAll<Sandbox>(kube, SandboxKind.apiVersion, SandboxKind.kind, { namespace })).map(
        recordedSandbox,
      );
      const now = Math.floor(Date.now() / 1000);
      const orphans: OrphanVerdict[] = [];
      const held = new Map<string, Set<string>>();
      let reporting = 0;
      for (const a of registry.agents()) {
        heartbeat();
        if (!a.report || !registry.table.has(a.key)) continue;
        reporting++;
        held.set(a.key, new Set(a.report.sandboxStatuses.map((s) => s.sandboxId)));
        orphans.push(
          ...orphansOn(
            a.namespace,
            { agentId: a.pod, sandboxStatuses: a.report.sandboxStatuses },
            recorded,
            now,
            req.orphanTimeoutSeconds,
          ),
        );
      }
      return { orphans, lost: lostRecords(recorded, held), agents: reporting, records: recorded.length };
    },

    /**
     * Deletes an orphan on its agent, unless a record now covers it (written since the scan) or
     * the creation that made it is still on its way to writing one.
     */
    async removeOrphan(orphan: OrphanVerdict): Promise<'removed' | 'spared' | 'spared-recording' | 'spared-unasked'> {
      const fresh = await getObject<Sandbox>(kube, {
        apiVersion: SandboxKind.apiVersion,
        kind: SandboxKind.kind,
        namespace: orphan.namespace,
        name: orphan.claimName || '-',
      });
      if (fresh) {
        const again = orphansOn(
          orphan.namespace,
          {
            agentId: orphan.agent,
            sandboxStatuses: [
              {
                sandboxId: orphan.sandboxId,
                claimName: orphan.claimName,
                claimUid: orphan.claimUid,
                exposedPorts: [],
                phase: 'running',
                message: '',
                createdAt: 0,
              },
            ],
          },
          [recordedSandbox(fresh)],
          Number.MAX_SAFE_INTEGER,
          0,
        );
        if (again.length === 0) return 'spared';
      }
      // No record yet may mean a late one (a busy fast path): the creation that answered the
      // caller is still on its way to writing it. Ask it; when Temporal cannot say, wait a round.
      if (orphan.claimName) {
        const run = await creationOf(orphan.namespace, orphan.claimName).catch(() => 'unknown' as const);
        if (run === 'unknown') return 'spared-unasked';
        if (runStillHolds(run, orphan.sandboxId)) return 'spared-recording';
      }
      const a = registry.agent(orphan.namespace, orphan.agent);
      if (!a) return 'spared';
      await agents.delete(a.url, orphan.sandboxId);
      metrics?.janitorRemoved.inc();
      return 'removed';
    },

    /**
     * Containers of agents whose Pod is gone (review N4): one live agent per namespace and node is
     * told which agent Pods exist (the registry's last listing, at most a poll old) and removes
     * its node's containers of the namespace's other agents. An agent that cannot (an older agent
     * without the route, an unreachable one) is named in `failed`; the next pass asks again.
     */
    async reapDeadAgentContainers(): Promise<{
      removed: (ReapedContainer & { namespace: string; node: string; reaper: string })[];
      asked: number;
      failed: string[];
    }> {
      const listedAt = registry.podsListedAt;
      const removed: (ReapedContainer & { namespace: string; node: string; reaper: string })[] = [];
      const failed: string[] = [];
      const reapers = reapersOf(
        registry
          .agents()
          .filter((a) => a.report && registry.table.has(a.key))
          .map((a) => ({
            namespace: a.namespace,
            node: a.node || a.report!.nodeName,
            pod: a.pod,
            runtime: a.report!.runtime,
          })),
      );
      for (const r of reapers) {
        heartbeat();
        const a = registry.agent(r.namespace, r.pod);
        if (!a) continue;
        try {
          const answer = await agents.reap(a.url, registry.agentPodUidsIn(r.namespace), Date.now() - listedAt);
          for (const c of answer.removed) removed.push({ ...c, namespace: r.namespace, node: r.node, reaper: r.pod });
        } catch (err) {
          failed.push(`${r.namespace}/${r.pod}: ${(err as Error).message}`);
        }
      }
      return { removed, asked: reapers.length, failed };
    },

    async reportLostSandbox(l: LostVerdict): Promise<void> {
      await reportLost(l);
      metrics?.janitorLost.inc();
    },
  };
}

export type SandboxJanitorActivities = ReturnType<typeof createSandboxJanitorActivities>;
