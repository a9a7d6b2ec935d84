/**
 * Hints that only say "look again" (a pool's "something changed") collapse while one is on its
 * way: a burst of changes reaches the workflow's history as two signals, the last carrying the
 * latest arguments, instead of one event per change.
 */
import type { Client } from '@temporalio/client';
import { defineSignal } from '@temporalio/workflow';
import { Registry } from 'prom-client';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { logger } from '../../src/log.js';
import { Dispatcher, createDispatchMetrics } from '../../src/temporal/dispatch.js';
import { temporal, uniq } from '../support/env.js';

let client: Client;

beforeAll(async () => {
  client = await temporal();
});

afterAll(async () => {
  await client?.connection.close();
});

it('a burst of 50 hints to one workflow records at most two signals, the last with the latest arguments', async () => {
  const taskQueue = uniq('hints'); // no worker polls it: the signals just land in the history
  const workflowId = uniq('hinted');
  const handle = await client.workflow.start('anyWorkflow', { workflowId, taskQueue });
  const changed = defineSignal<[{ event: string }]>('changed');
  const dispatcher = new Dispatcher(
    client,
    taskQueue,
    createDispatchMetrics(new Registry(), 'test'),
    logger.child({ role: 'test' }),
  );
  try {
    const results = await Promise.all(
      Array.from({ length: 50 }, (_, i) => dispatcher.hint(workflowId, changed, { event: `change ${i}` })),
    );
    expect(results.filter((r) => r === 'sent')).toHaveLength(1);
    expect(results.filter((r) => r === 'coalesced')).toHaveLength(49);

    const history = await handle.fetchHistory();
    const signaled = (history.events ?? []).filter((e) => e.workflowExecutionSignaledEventAttributes);
    expect(signaled).toHaveLength(2);
    const payload = signaled[1]!.workflowExecutionSignaledEventAttributes!.input!.payloads![0]!;
    expect(JSON.parse(Buffer.from(payload.data!).toString())).toEqual({ event: 'change 49' });

    // Once the burst is through, the next hint goes out again.
    expect(await dispatcher.hint(workflowId, changed, { event: 'later' })).toBe('sent');
  } finally {
    dispatcher.stop();
    await handle.terminate().catch(() => undefined);
  }
});
