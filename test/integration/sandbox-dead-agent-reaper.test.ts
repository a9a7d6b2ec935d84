/**
 * Containers whose agent died without its SIGTERM path (hard eviction, `kubectl delete pod
 * --force`) and was never restarted (review N4): containerd keeps them running for a restart
 * that never comes, since a new Pod is a new agent with a new name and UID. The janitor tells a
 * live agent of the namespace on that node which agent Pods exist; it removes the containers of
 * the others. Real containerd, agents run by the kubelet stand-in for the pool's own Pods (they
 * know their Pod UID and namespace from the downward API, as in a cluster).
 */
import { readdirSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import * as grpc from '@grpc/grpc-js';
import { ContainerdClient } from '../../src/agent/containerd/client.js';
import { LABEL } from '../../src/agent/containerd/runtime.js';
import { janitorWorkflowId } from '../../src/fastpath/janitor.js';
import { janitorStateQuery } from '../../src/workflows/sandbox/contract.js';
import { eventually, stackInfo, temporal, uniq } from '../support/env.js';
import { SandboxStack, sandboxImage } from '../support/fastpath.js';

let stack: SandboxStack;
let client: ContainerdClient;

beforeAll(async () => {
  stack = await new SandboxStack({
    agents: 0,
    kubelet: true,
    capacity: 2,
    poolCapacity: { poolMin: 2, poolMax: 2, bufferMin: 0, bufferMax: 0 },
    janitorInterval: '2s',
  }).start();
  const ctd = stackInfo().containerd!;
  client = new ContainerdClient(ctd.socket, ctd.namespace);
}, 240_000);

afterAll(async () => {
  client?.close();
  await stack?.stop();
});

const containersOf = (agentUid: string) =>
  client.listContainers([`labels."${LABEL.agentUid}"==${JSON.stringify(agentUid)}`]);

async function create(): Promise<{ sandboxId: string; agentPod: string }> {
  const name = uniq('sb');
  return eventually(`a create of ${name} accepted`, () =>
    stack.grpc
      .call<{ sandboxId: string; agentPod: string }>('CreateSandbox', {
        namespace: stack.namespace,
        name,
        image: sandboxImage(),
        poolRef: stack.pool,
        command: ['sleep', '3600'],
      })
      .catch((err: grpc.ServiceError) =>
        err.code === grpc.status.RESOURCE_EXHAUSTED || err.code === grpc.status.UNAVAILABLE
          ? undefined
          : Promise.reject(err),
      ),
  );
}

describe('an agent SIGKILLed and never restarted (review N4)', () => {
  it('its containers are removed once its Pod is gone; the live agent’s are untouched', async () => {
    await eventually('both agents of the pool running', async () => stack.fleet.kubeletAgents.length === 2, {
      timeoutMs: 120_000,
    });
    // Two sandboxes per agent at most: three creates put at least one on each agent.
    const created = [await create(), await create(), await create()];
    const victim = created[0]!.agentPod;
    const kept = created.find((c) => c.agentPod !== victim)!;
    expect(kept).toBeDefined();
    const pod = await stack.kube.core.readNamespacedPod({ name: victim, namespace: stack.namespace });
    const uid = pod.metadata!.uid!;
    const run = stack.fleet.kubeletAgents.find((a) => a.podName === victim)!;

    // SIGKILL: no shutdown path; containerd keeps the containers for a restart.
    await run.process.kill();
    const victims = await containersOf(uid);
    expect(victims.length).toBeGreaterThan(0);
    // Each with its network namespace, which goes with it.
    const namespacesOf = (ids: string[]) =>
      readdirSync('/run/netns').filter((n) => ids.some((id) => n.endsWith(`-${id}`)));
    expect(namespacesOf(victims.map((c) => c.id))).toHaveLength(victims.length);
    // `kubectl delete pod --force`: the Pod is gone, its agent never comes back.
    await stack.kube.core.deleteNamespacedPod({ name: victim, namespace: stack.namespace, gracePeriodSeconds: 0 });

    await eventually('the dead agent’s containers removed', async () => (await containersOf(uid)).length === 0, {
      timeoutMs: 90_000,
      intervalMs: 500,
    });
    // Their namespaces go right after each container (unwired once it is deleted: ~0.1 s each, longer under load).
    await eventually(
      'the dead agent’s network namespaces removed',
      async () => namespacesOf(victims.map((c) => c.id)).length === 0,
      { timeoutMs: 30_000, intervalMs: 200 },
    );
    // The live agent's sandbox still runs.
    const task = await client.getTask(kept.sandboxId);
    expect(task.status).toBe('RUNNING');
    // The janitor says what it removed, and whose.
    const janitor = (await temporal()).workflow.getHandle(janitorWorkflowId(stack.sandboxTaskQueue));
    const state = await janitor.query(janitorStateQuery);
    expect(state.recent.join('\n')).toMatch(
      new RegExp(
        `removed container ${created[0]!.sandboxId} \\(sandbox ${created[0]!.sandboxId}\\) whose agent ${stack.namespace}/${victim} is gone \\(no Pod with UID ${uid}\\)`,
      ),
    );
  });
});
