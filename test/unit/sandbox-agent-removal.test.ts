/**
 * removeFromAgent (src/activities/sandbox/agents.ts): one delete that answers when the sandbox is
 * gone, instead of a delete and a status poll every 100 ms; an agent that answers at once (one
 * from before the wait) is polled as before. waitUntilAgentForgets, the longer wait after it,
 * waits the same way. The agent's side of the wait is in
 * sandbox-agent.test.ts, the whole removal against real agents in the sandbox integration tests.
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { createSandboxAgentActivities } from '../../src/activities/sandbox/agents.js';
import type { AgentClient } from '../../src/fastpath/agent-client.js';
import type { SandboxRegistry } from '../../src/fastpath/registry.js';
import type { SandboxEnvResolver } from '../../src/activities/sandbox/env.js';

const req = { namespace: 'ns', pod: 'agent-a', sandboxId: 'sb-1', agentId: 'ns/agent-a', withinMs: 3000 };

/** The agent answers the waiting delete with `gone`; its status lists the sandbox `reportedFor` more polls. */
function harness(gone: boolean | undefined, reportedFor = 0) {
  const calls: string[] = [];
  const released: string[] = [];
  const registry = {
    agent: () => ({ key: 'ns/agent-a', url: 'https://10.0.0.1:5758' }),
    table: { has: () => true, release: (_agent: string, id: string) => released.push(id) },
    removalStarted: (id: string) => calls.push(`removal started ${id}`),
  } as unknown as SandboxRegistry;
  let polls = 0;
  const agents = {
    delete: async (_url: string, id: string, waitMs: number) => {
      calls.push(`delete ${id} waiting ${waitMs} ms`);
      return gone;
    },
    status: async () => {
      calls.push('status');
      return { sandboxStatuses: polls++ < reportedFor ? [{ sandboxId: 'sb-1' }] : [] };
    },
  } as unknown as AgentClient;
  const activities = createSandboxAgentActivities(registry, agents, {} as SandboxEnvResolver);
  return { calls, released, remove: () => activities.removeFromAgent(req) };
}

describe('removeFromAgent', () => {
  it('an agent that waits: one call, no status poll, the slot released', async () => {
    const h = harness(true);
    expect(await h.remove()).toBe('removed');
    expect(h.calls).toEqual(['removal started sb-1', 'delete sb-1 waiting 3000 ms']);
    expect(h.released).toEqual(['sb-1']);
  });

  it('still terminating when the wait ends: pending, the slot kept for the polling activity', async () => {
    const h = harness(false);
    expect(await h.remove()).toBe('pending');
    expect(h.calls).toEqual(['removal started sb-1', 'delete sb-1 waiting 3000 ms']);
    expect(h.released).toEqual([]);
  });

  it('an agent from before the wait (answered at once): polled until it no longer reports the sandbox', async () => {
    const h = harness(undefined, 2);
    expect(await h.remove()).toBe('removed');
    expect(h.calls).toEqual(['removal started sb-1', 'delete sb-1 waiting 3000 ms', 'status', 'status', 'status']);
    expect(h.released).toEqual(['sb-1']);
  });
});

describe('waitUntilAgentForgets (a removal that outlasts removeFromAgent: a sandbox that ignores SIGTERM)', () => {
  /** The agent answers the deletes with `answers` in turn (the last one again after them). */
  function forgetting(answers: (boolean | undefined)[], reportedFor = 0) {
    const calls: string[] = [];
    const registry = {
      agent: () => ({ key: 'ns/agent-a', url: 'https://10.0.0.1:5758' }),
      table: { has: () => true },
    } as unknown as SandboxRegistry;
    let deletes = 0;
    let polls = 0;
    const agents = {
      delete: async (_url: string, id: string, waitMs: number) => {
        calls.push(`delete ${id} waiting ${waitMs} ms`);
        return answers[Math.min(deletes++, answers.length - 1)];
      },
      status: async () => {
        calls.push('status');
        return { sandboxStatuses: polls++ < reportedFor ? [{ sandboxId: 'sb-1' }] : [] };
      },
    } as unknown as AgentClient;
    const activities = createSandboxAgentActivities(registry, agents, {} as SandboxEnvResolver);
    return { calls, wait: () => activities.waitUntilAgentForgets(req) };
  }

  afterEach(() => {
    vi.useRealTimers();
  });

  it('waiting deletes until the agent says gone: no status poll, at most one call per wait', async () => {
    vi.useFakeTimers();
    const f = forgetting([false, false, true]);
    const t0 = Date.now();
    const done = f.wait();
    await vi.runAllTimersAsync();
    await done;
    expect(f.calls).toEqual(Array(3).fill('delete sb-1 waiting 4000 ms'));
    // This agent answered at once (as one whose runtime refuses the delete does): not asked again at once.
    expect(Date.now() - t0).toBeGreaterThanOrEqual(8_000);
  });

  it('an agent from before the wait: its status polled until it no longer reports the sandbox', async () => {
    const f = forgetting([undefined], 2);
    await f.wait();
    expect(f.calls).toEqual(['delete sb-1 waiting 4000 ms', 'status', 'status', 'status']);
  });
});
