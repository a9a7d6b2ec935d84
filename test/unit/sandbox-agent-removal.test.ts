/**
 * removeFromAgent (src/activities/sandbox/agents.ts): one delete that answers when the sandbox is
 * gone, instead of a delete and a status poll every 100 ms; an agent that answers at once (one
 * from before the wait) is polled as before. The agent's side of the wait is in
 * sandbox-agent.test.ts, the whole removal against real agents in the sandbox integration tests.
 */
import { describe, expect, it } from 'vitest';
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
