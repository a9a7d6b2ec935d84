/**
 * Slot accounting in a 2×2 pool, step by step as a user would go: creates that fill it, refusals
 * (a port every agent already exposes, a full pool), deletes, and creates again. After every step
 * the placement table — once it has heard from the agents — counts exactly what the agents hold,
 * and a create is refused as full only when the agents have no free slot.
 */
import * as grpc from '@grpc/grpc-js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventually, uniq } from '../support/env.js';
import { SandboxStack, grpcError, sandboxImage } from '../support/fastpath.js';

let stack: SandboxStack;

beforeAll(async () => {
  // A long kill grace, so a deleted sandbox that ignores SIGTERM stays terminating for a while.
  stack = await new SandboxStack({ agents: 2, capacity: 2, killGraceMs: 6_000 }).start();
}, 240_000);

afterAll(async () => {
  await stack?.stop();
});

/** A sandbox that ends at once on SIGTERM (as PID 1, a plain `sleep` would ignore it). */
const PROMPT = ['sh', '-c', 'trap "exit 0" TERM; sleep 3600 & wait'];

const spec = (name: string, ports: number[] = [], command = PROMPT) => ({
  namespace: stack.namespace,
  name,
  image: sandboxImage(),
  poolRef: stack.pool,
  command,
  ...(ports.length && { exposedPorts: ports }),
});

const create = (name: string, ports?: number[], command?: string[]) =>
  stack.grpc.call<{ sandboxId: string; agentPod: string }>('CreateSandbox', spec(name, ports, command));

/** The table, after a fresh poll, counts what each agent reports it holds. */
async function tableMatchesAgents() {
  const registry = stack.fastpath!.registry;
  await registry.pollNow();
  const reports = await stack.agentReports();
  const byPod = new Map(registry.table.view().map((v) => [v.id.split('/')[1], v]));
  for (const r of reports) {
    expect(byPod.get(r.pod)?.load, `the table's count for ${r.pod}`).toBe(r.allocated);
    expect(byPod.get(r.pod)?.reserved, `reservations left on ${r.pod}`).toBe(0);
  }
  return reports.reduce((n, r) => n + r.allocated, 0);
}

/** Deleted, and gone from its agent. */
async function deleteAndWait(name: string) {
  await stack.grpc.call('DeleteSandbox', { namespace: stack.namespace, sandboxName: name });
  await eventually(`${name} gone from its agent`, async () =>
    (await stack.agentReports()).every((r) => r.sandboxes.every((s) => s.claimName !== name)),
  );
}

describe('a 2×2 pool', () => {
  it('is refused as full only when the agents hold 4 sandboxes, through refusals, deletes and creates', async () => {
    const [a, b, c, d, e, f, g, h] = ['a', 'b', 'c', 'd', 'e', 'f', 'g', 'h'].map((n) => uniq(`slot-${n}`));
    // Two sandboxes on one exposed port (one per agent), one plain.
    await create(a!, [8080]);
    await create(b!, [8080]);
    await create(c!);
    expect(await tableMatchesAgents()).toBe(3);
    // The port is taken on both agents: refused, and nothing is counted for it.
    const port = await grpcError(create(d!, [8080]));
    expect(port.code).toBe(grpc.status.RESOURCE_EXHAUSTED);
    expect(port.details).toContain('already exposes one of ports 8080');
    expect(await tableMatchesAgents()).toBe(3);
    // The fourth slot is free: a plain create takes it.
    await create(e!);
    expect(await tableMatchesAgents()).toBe(4);
    const full = await grpcError(create(f!));
    expect(full.details).toContain('is full: 4 of 4 sandbox slots in use on 2 agents');
    expect(await tableMatchesAgents()).toBe(4);
    // Deleted and gone: its slot is free again, for a create right away.
    await deleteAndWait(e!);
    await create(g!);
    expect(await tableMatchesAgents()).toBe(4);
    // A port sandbox deleted: the port and the slot are free on its agent.
    await deleteAndWait(a!);
    await create(h!, [8080]);
    expect(await tableMatchesAgents()).toBe(4);
    for (const n of [b!, c!, g!, h!]) await deleteAndWait(n);
    expect(await tableMatchesAgents()).toBe(0);
  });

  it('a create right after a delete, while the deleted sandbox is still terminating, says so', async () => {
    const names = ['1', '2', '3', '4'].map((n) => uniq(`busy-${n}`));
    // A process that ignores SIGTERM (sandbox-init forwards it): killed after the grace.
    for (const n of names) await create(n, [], ['/bin/sh', '-c', "trap '' TERM; sleep 3600"]);
    await stack.grpc.call('DeleteSandbox', { namespace: stack.namespace, sandboxName: names[0] });
    // Its processes get the agent's kill grace to end; until then the agent still holds its slot.
    await eventually(`${names[0]} terminating`, async () =>
      (await stack.agentReports()).some((r) =>
        r.sandboxes.some((s) => s.claimName === names[0] && s.phase === 'terminating'),
      ),
    );
    await stack.fastpath!.registry.pollNow();
    const refused = await grpcError(create(uniq('busy-5')));
    expect(refused.code).toBe(grpc.status.RESOURCE_EXHAUSTED);
    expect(refused.details).toContain(
      'is full: 4 of 4 sandbox slots in use on 2 agents (1 still terminating, free in a few seconds)',
    );
    await eventually(`${names[0]} gone`, async () =>
      (await stack.agentReports()).every((r) => r.sandboxes.every((s) => s.claimName !== names[0])),
    );
    await create(uniq('busy-6'));
    for (const n of [...names.slice(1)]) await deleteAndWait(n);
  });
});
