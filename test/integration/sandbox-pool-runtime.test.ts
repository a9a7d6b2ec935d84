/**
 * A SandboxPool's `runtimeType`, end to end: the pool's workflow makes agent Pods with the
 * original's RUNTIME_TYPE, the kubelet stand-in runs them with the Pod's environment on the
 * stack's containerd, and the fast path places sandboxes on them. `gvisor` on a node with runsc
 * runs sandboxes under gVisor; on a node without it, the pool says `Ready=False
 * RuntimeUnsupported` and every create is refused with that reason — never run under runc instead.
 * Likewise a `container` pool whose agents run the process runtime (review N6): refused, never
 * served without isolation.
 */
import * as grpc from '@grpc/grpc-js';
import { afterEach, describe, expect, it } from 'vitest';
import { SandboxPoolKind, type Sandbox, type SandboxPool } from '../../src/api/sandbox.js';
import { eventually, uniq } from '../support/env.js';
import { SandboxStack, grpcError, sandboxImage } from '../support/fastpath.js';
import { agentFetch } from '../support/agent-tls.js';

let stack: SandboxStack | undefined;

afterEach(async () => {
  await stack?.stop();
  stack = undefined;
});

/** A pool of one agent Pod (made by the pool's workflow) with `runtimeType: gvisor`. */
function gvisorPool(runsc: boolean) {
  return new SandboxStack({
    agents: 0,
    kubelet: true,
    runsc,
    poolCapacity: { poolMin: 1, poolMax: 1, bufferMin: 0, bufferMax: 0 },
    poolSpec: { runtimeType: 'gvisor' },
  }).start();
}

function readyCondition(s: SandboxStack) {
  return eventually(
    'the pool’s Ready condition once its agent answered',
    async () => {
      const p = await s.kube.get<SandboxPool>({
        apiVersion: SandboxPoolKind.apiVersion,
        kind: SandboxPoolKind.kind,
        namespace: s.namespace,
        name: s.pool,
      });
      const ready = p?.status?.conditions?.find((c) => c.type === 'Ready');
      return (p?.status?.readyPods ?? 0) >= 1 && ready && ready.reason !== 'ScalingUp' ? ready : undefined;
    },
    { timeoutMs: 180_000, intervalMs: 250 },
  );
}

const create = (s: SandboxStack, name: string, command: string[]) =>
  s.grpc.call<{ sandboxId: string }>('CreateSandbox', {
    namespace: s.namespace,
    name,
    image: sandboxImage(),
    poolRef: s.pool,
    command,
  });

describe('SandboxPool runtimeType: gvisor', () => {
  it('on a node with runsc: sandboxes run under gVisor, and the Sandbox says so', async () => {
    const s = (stack = await gvisorPool(true));
    expect(await readyCondition(s)).toMatchObject({ status: 'True' });
    const name = uniq('gv');
    await eventually(`a create of ${name} accepted`, () =>
      create(s, name, ['sh', '-c', 'dmesg; sleep 3600']).catch((err: grpc.ServiceError) =>
        err.code === grpc.status.RESOURCE_EXHAUSTED ? undefined : Promise.reject(err),
      ),
    );
    const sb = await eventually(`Sandbox ${name} Running`, async () => {
      const x = await s.sandbox(name);
      return x?.status?.phase === 'Running' && x.status.runtime ? x : undefined;
    });
    expect((sb as Sandbox).status?.runtime).toBe('containerd/gvisor');
    // gVisor's kernel log starts with its banner; under runc the host's kernel would refuse dmesg.
    const logs = await eventually('the gVisor banner in the logs', async () => {
      const res = await fetch(`${s.httpBase}/api/v1/namespaces/${s.namespace}/sandboxes/${name}/logs`, {
        headers: { 'x-tenant-id': String(s.tenantId) },
      });
      const text = await res.text();
      return text.includes('Starting gVisor') ? text : undefined;
    });
    expect(logs).toContain('Starting gVisor');
    await s.grpc.call('DeleteSandbox', { namespace: s.namespace, sandboxName: name });
    await eventually(`Sandbox ${name} gone`, async () => !(await s.sandbox(name)));
  });

  it('on a node without runsc: the pool is Ready=False RuntimeUnsupported and creates are refused with the reason', async () => {
    const s = (stack = await gvisorPool(false));
    const ready = await readyCondition(s);
    expect(ready).toMatchObject({ status: 'False', reason: 'RuntimeUnsupported' });
    expect(ready?.message).toMatch(/runtimeType gvisor needs runsc/);
    const name = uniq('gv');
    const err = await grpcError(create(s, name, ['sleep', '3600']));
    expect(err.code).toBe(grpc.status.FAILED_PRECONDITION);
    expect(err.details).toMatch(/runtimeType gvisor needs runsc/);
    // Nothing half-made: no Sandbox record, nothing on the agent.
    expect(await s.sandbox(name)).toBeUndefined();
    const [agent] = s.fleet.kubeletAgents;
    const report = (await (
      await agentFetch(s.agentKey)(`${agent!.url}/api/v1/agent/status`, {
        headers: { authorization: `Bearer ${s.token}` },
      })
    ).json()) as { allocated: number; sandboxStatuses: unknown[]; runtimeUnsupported?: string };
    expect(report).toMatchObject({ allocated: 0, sandboxStatuses: [] });
    expect(report.runtimeUnsupported).toMatch(/runsc/);
  });
});

describe('SandboxPool runtimeType: container served by a process-runtime agent (review N6)', () => {
  it('the pool is Ready=False RuntimeUnsupported and creates are refused: never served without isolation', async () => {
    const s = (stack = await new SandboxStack({
      agents: 0,
      kubelet: true,
      poolCapacity: { poolMin: 1, poolMax: 1, bufferMin: 0, bufferMax: 0 },
      // A template copied from a development setup: the agent container picks the process runtime.
      agentTemplate: {
        spec: {
          containers: [
            {
              name: 'agent',
              image: 'durable-operators:dev',
              args: ['agent'],
              env: [{ name: 'DO_AGENT_RUNTIME', value: 'process' }],
            },
          ],
        },
      },
    }).start());
    const ready = await readyCondition(s);
    expect(ready).toMatchObject({ status: 'False', reason: 'RuntimeUnsupported' });
    expect(ready?.message).toMatch(/runtimeType container needs the containerd runtime.*process runtime/);
    const name = uniq('proc');
    const err = await grpcError(create(s, name, ['sleep', '3600']));
    expect(err.code).toBe(grpc.status.FAILED_PRECONDITION);
    expect(err.details).toMatch(/isolates nothing/);
    expect(await s.sandbox(name)).toBeUndefined();
    const [agent] = s.fleet.kubeletAgents;
    const report = (await (
      await agentFetch(s.agentKey)(`${agent!.url}/api/v1/agent/status`, {
        headers: { authorization: `Bearer ${s.token}` },
      })
    ).json()) as { runtime?: string; allocated: number };
    expect(report).toMatchObject({ runtime: 'process', allocated: 0 });
  });
});
