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
  type LostVerdict,
  type OrphanVerdict,
  type RecordedSandbox,
} from '../../domain/sandbox.js';
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
    async removeOrphan(o: OrphanVerdict): Promise<'removed' | 'spared' | 'spared-recording' | 'spared-unasked'> {
      const fresh = await getObject<Sandbox>(kube, {
        apiVersion: SandboxKind.apiVersion,
        kind: SandboxKind.kind,
        namespace: o.namespace,
        name: o.claimName || '-',
      });
      if (fresh) {
        const again = orphansOn(
          o.namespace,
          {
            agentId: o.agent,
            sandboxStatuses: [
              {
                sandboxId: o.sandboxId,
                claimName: o.claimName,
                claimUid: o.claimUid,
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
      if (o.claimName) {
        const run = await creationOf(o.namespace, o.claimName).catch(() => 'unknown' as const);
        if (run === 'unknown') return 'spared-unasked';
        if (runStillHolds(run, o.sandboxId)) return 'spared-recording';
      }
      const a = registry.agent(o.namespace, o.agent);
      if (!a) return 'spared';
      await agents.delete(a.url, o.sandboxId);
      metrics?.janitorRemoved.inc();
      return 'removed';
    },

    async reportLostSandbox(l: LostVerdict): Promise<void> {
      await reportLost(l);
      metrics?.janitorLost.inc();
    },
  };
}

export type SandboxJanitorActivities = ReturnType<typeof createSandboxJanitorActivities>;
