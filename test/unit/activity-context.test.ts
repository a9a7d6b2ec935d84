/**
 * What the activities do with their Temporal context, under @temporalio/testing's
 * MockActivityEnvironment (the context a worker gives an attempt, without a server): heartbeats
 * reach Temporal from a worker's activity and are skipped in a local one
 * (src/activities/kubernetes/calls.ts), and a Cloudflare client made in an activity stops its
 * call in flight when Temporal cancels the attempt (src/activities/cloudflare/credentials.ts),
 * so an attempt Temporal gave up on never writes next to its retry; a poll loop's pause
 * (`pause`) ends when Temporal cancels the attempt, so a cancelled wait stops polling. Cloudflare
 * is the emulator, with a latency no test waits out.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { CancelledFailure } from '@temporalio/common';
import { MockActivityEnvironment } from '@temporalio/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cloudflareClient } from '../../src/activities/cloudflare/credentials.js';
import { heartbeat } from '../../src/activities/kubernetes/calls.js';
import { createSandboxAgentActivities } from '../../src/activities/sandbox/agents.js';
import type { SandboxEnvResolver } from '../../src/activities/sandbox/env.js';
import type { AgentClient } from '../../src/fastpath/agent-client.js';
import type { SandboxRegistry } from '../../src/fastpath/registry.js';
import { EmulatorAdmin, startCloudflareEmulator, type RunningEmulator } from '../emulators/cloudflare/index.js';

describe('heartbeat()', () => {
  it('reaches Temporal from an activity of a worker, with its details', async () => {
    const env = new MockActivityEnvironment();
    const beats: unknown[] = [];
    env.on('heartbeat', (d: unknown) => beats.push(d));
    await env.run(async () => {
      heartbeat();
      heartbeat(3);
    });
    expect(beats).toEqual([undefined, 3]);
  });

  it('is skipped in a local activity, which cannot heartbeat', async () => {
    const env = new MockActivityEnvironment({ isLocal: true });
    const beats: unknown[] = [];
    env.on('heartbeat', (d: unknown) => beats.push(d));
    await env.run(async () => heartbeat(1));
    expect(beats).toEqual([]);
  });
});

describe('a Cloudflare client made in an activity', () => {
  let emulator: RunningEmulator;

  beforeAll(async () => {
    emulator = await startCloudflareEmulator({ tokens: [{ token: 'tok' }] });
    await new EmulatorAdmin(emulator.url, emulator.adminToken).addFault({
      path: '^/user/tokens/verify$',
      latencyMs: 600_000,
    });
  });
  afterAll(() => emulator?.close());

  it('stops its call in flight when Temporal cancels the attempt', async () => {
    const env = new MockActivityEnvironment();
    const attempt = env.run(async () => {
      // No signal passed: the client takes the activity's own.
      const cf = cloudflareClient({ apiToken: 'tok' }, emulator.baseURL);
      return cf.user.tokens.verify();
    });
    const outcome = attempt.then(
      () => 'answered',
      (e: unknown) => e,
    );
    await sleep(200);
    env.cancel();
    // Hang protection only: without the activity's signal the call would wait out the latency.
    const stopped = await Promise.race([outcome, sleep(20_000).then(() => 'still waiting')]);
    // The SDK reports the aborted request as a connection error caused by Temporal's cancellation.
    expect(stopped).toBeInstanceOf(Error);
    expect((stopped as Error).cause).toBeInstanceOf(CancelledFailure);
  });
});

describe('a poll loop of an activity', () => {
  it('stops when Temporal cancels the attempt: a Strong create cancelled while its pool scales up from zero', async () => {
    const registry = { hasUsableAgent: () => false } as unknown as SandboxRegistry;
    const activities = createSandboxAgentActivities(registry, {} as AgentClient, {} as SandboxEnvResolver);
    const env = new MockActivityEnvironment();
    const outcome = env
      .run(() => activities.waitForPoolAgent({ namespace: 'ns', pool: 'p', untilMs: Date.now() + 10_000 }))
      .then(
        (r) => r,
        (e: unknown) => e,
      );
    await sleep(300);
    env.cancel();
    // Before, the wait polled on to its deadline and answered 'timeout' 10 s later.
    const stopped = await Promise.race([outcome, sleep(2_000).then(() => 'still polling')]);
    expect(stopped).toBeInstanceOf(CancelledFailure);
  });
});
