/** Helpers for request tests: create requests as a user would, wait for their terminal Ready. */
import type { KubernetesObject } from '@kubernetes/client-node';
import type { Condition } from '../../src/domain/conditions.js';
import { isTerminal, readyCondition } from '../../src/domain/requests.js';
import type { KubeClient, ObjectRef } from '../../src/kube/client.js';
import { requestTtlSweepWorkflow } from '../../src/workflows/requests/contract.js';
import { eventually, temporal, uniq } from './env.js';

export interface RequestLike extends KubernetesObject {
  spec: unknown;
  status?: { completionTimestamp?: string; conditions?: Condition[] } & Record<string, unknown>;
}

export function refOf(obj: KubernetesObject): ObjectRef {
  return {
    apiVersion: obj.apiVersion!,
    kind: obj.kind!,
    namespace: obj.metadata?.namespace,
    name: obj.metadata!.name!,
  };
}

/** Polls until the request is terminal; returns it with its Ready condition. */
export async function waitTerminal<T extends RequestLike>(
  k: KubeClient,
  obj: KubernetesObject,
  opts: { timeoutMs?: number } = {},
): Promise<T & { ready: Condition }> {
  const got = await eventually(
    `${obj.kind} ${obj.metadata?.namespace}/${obj.metadata?.name} terminal`,
    async () => {
      const now = await k.get<T>(refOf(obj));
      return now && isTerminal(now.status?.conditions) ? now : undefined;
    },
    { timeoutMs: opts.timeoutMs ?? 120_000 },
  );
  return { ...got, ready: readyCondition(got.status?.conditions)! };
}

/** True once the object no longer exists (for eventually()). */
export function goneCheck(k: KubeClient, ref: ObjectRef) {
  return async () => (await k.get(ref)) === undefined;
}

/**
 * Runs the TTL sweep once on `taskQueue` (what the worker's Schedule does every interval), after
 * waiting until `completionTimestamp` (second precision) + `ttlMs` has surely passed.
 */
export async function sweepAfterTtl(taskQueue: string, completionTimestamp: string, ttlMs: number) {
  const wait = Date.parse(completionTimestamp) + ttlMs + 1000 - Date.now();
  if (wait > 0) await new Promise((r) => setTimeout(r, wait));
  const c = await temporal();
  return c.workflow.execute(requestTtlSweepWorkflow, { taskQueue, workflowId: uniq('sweep') });
}
