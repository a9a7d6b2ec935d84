/**
 * The containers of agents that are gone (review N4). An agent killed without its SIGTERM path
 * (hard eviction, `kubectl delete pod --force`, a node-pressure kill) leaves its containers
 * running: containerd keeps them for a restart of that agent, and only a restart in the same Pod
 * re-adopts them (by name) — a new Pod is a new agent. The fast path's janitor knows which agent
 * Pods exist; it tells one live agent per node and namespace, and that agent removes the other
 * containers of its namespace whose agent Pod UID is not among them. The agent itself never asks
 * the Kubernetes API.
 *
 * Never reaped: containers of another namespace (another trust domain, and a fast path that
 * serves one namespace does not know the others' Pods); containers without an agent UID (agents
 * run outside a Pod: nothing can say they are gone); the asking agent's own (its restart adopts
 * them); and containers made after the listing (minus a margin): their agent's Pod may be newer
 * than the list.
 */
import path from 'node:path';
import { rm } from 'node:fs/promises';
import type { ReapResponse, ReapedContainer } from '../api.js';
import { isNotFound, type Container, type ContainerdClient } from './client.js';
import { LABEL } from './runtime.js';

export interface ReapScope {
  /** The asking agent's namespace and Pod UID: without both, nothing is reaped. */
  namespace?: string;
  ownUid?: string;
  /** UIDs of the agent Pods that exist (the listing). */
  live: ReadonlySet<string>;
  /** Containers created at or after this instant (ms since the epoch, this node's clock) are spared. */
  createdBefore: number;
}

/** When containerd made the container (ms since the epoch), or undefined when it does not say. */
function createdAtMs(c: Container): number | undefined {
  const t = c.createdAt;
  if (!t || t.seconds === undefined) return undefined;
  return Number(t.seconds) * 1000 + Math.floor((t.nanos ?? 0) / 1e6);
}

/** Pure: the containers among `containers` whose agent Pod is gone, per the rules above. */
export function deadAgentContainers(containers: Container[], scope: ReapScope): Container[] {
  if (!scope.namespace || !scope.ownUid) return [];
  return containers.filter((c) => {
    const l = c.labels;
    const uid = l[LABEL.agentUid];
    const made = createdAtMs(c);
    return (
      l[LABEL.managed] === 'true' &&
      l[LABEL.namespace] === scope.namespace &&
      !!uid &&
      uid !== scope.ownUid &&
      !scope.live.has(uid) &&
      made !== undefined &&
      made < scope.createdBefore
    );
  });
}

/**
 * Removes the containers of gone agents through `remove` (the runtime's one way to remove a
 * container), then their stdio FIFO directories when they lie under `ioRoot` (every agent's I/O
 * directory is `<ioRoot>/<agent name>`).
 */
export async function reapDeadAgents(
  client: ContainerdClient,
  scope: ReapScope,
  ioRoot: string,
  remove: (containerId: string) => Promise<void>,
): Promise<ReapResponse> {
  if (!scope.namespace || !scope.ownUid)
    return { removed: [], skipped: "this agent does not know its Pod's UID and namespace (POD_UID, POD_NAMESPACE)" };
  const candidates = await client.listContainers([
    `labels."${LABEL.managed}"=="true",labels."${LABEL.namespace}"==${JSON.stringify(scope.namespace)}`,
  ]);
  const removed: ReapedContainer[] = [];
  for (const c of deadAgentContainers(candidates, scope)) {
    const task = await client
      .getTask(c.id)
      .catch((err: unknown) => (isNotFound(err) ? undefined : Promise.reject(err)));
    await remove(c.id);
    // `<ioRoot>/<agent>/<container>/stdout`: only a directory of exactly that shape is removed.
    const fifoDir = task?.stdout ? path.dirname(task.stdout) : undefined;
    const rel = fifoDir ? path.relative(ioRoot, fifoDir).split(path.sep) : [];
    if (fifoDir && rel.length === 2 && rel[0] !== '..' && rel[1] === c.id)
      await rm(fifoDir, { recursive: true, force: true });
    removed.push({
      containerId: c.id,
      agentName: c.labels[LABEL.agentName] ?? '',
      agentUid: c.labels[LABEL.agentUid] ?? '',
      ...(c.labels[LABEL.id] ? { sandboxId: c.labels[LABEL.id] } : {}),
    });
  }
  return { removed };
}
