/**
 * A start Temporal refuses for a cause an operator can fix — here a search attribute not
 * registered in the namespace — is never dropped: it waits, `/readyz` names the attribute and
 * the gauge counts the waiting call, and the operation starts as soon as the attribute exists
 * (no resync wait). A start Temporal can never accept is dropped and counted by its code.
 */
import { Client } from '@temporalio/client';
import { msToTs } from '@temporalio/common/lib/time.js';
import { Registry } from 'prom-client';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { logger } from '../../src/log.js';
import { Dispatcher, createDispatchMetrics, dispatchUnblocked } from '../../src/temporal/dispatch.js';
import { searchAttributesRegistered } from '../../src/temporal/search-attribute-check.js';
import { K8sKind, SEARCH_ATTRIBUTE_DEFINITIONS } from '../../src/temporal/search-attributes.js';
import { eventually, temporal, uniq } from '../support/env.js';

let client: Client;
let namespace: string;

beforeAll(async () => {
  const base = await temporal();
  // A namespace of its own, with none of the operator's search attributes registered.
  namespace = uniq('bare').replace(/[^a-z0-9-]/g, '-');
  await base.connection.workflowService.registerNamespace({
    namespace,
    workflowExecutionRetentionPeriod: msToTs('1 day'),
  });
  client = new Client({ connection: base.connection, namespace });
});

afterAll(async () => {
  await client?.connection.close();
});

/** A dispatcher to a task queue no worker polls (the starts only have to be accepted), and its metrics. */
function newDispatcher() {
  const registry = new Registry();
  const metrics = createDispatchMetrics(registry, 'test');
  return {
    registry,
    dispatcher: new Dispatcher(client, uniq('nobody-polls'), metrics, logger.child({ role: 'test' })),
  };
}

/** A workflow type no worker runs: the client starts it by this function's name. */
const anyWorkflow = Object.defineProperty(async () => undefined, 'name', { value: 'anyWorkflow' });

const metricValue = async (registry: Registry, name: string, labels: Record<string, string>) => {
  const metric = (await registry.getMetricsAsJSON()).find((m) => m.name === name);
  const value = metric?.values.find((v) => Object.entries(labels).every(([k, l]) => v.labels[k] === l));
  return value?.value ?? 0;
};

it('a start refused for a missing search attribute waits, is named on /readyz, and runs once the attribute exists', async () => {
  const { registry, dispatcher } = newDispatcher();
  const readiness = dispatchUnblocked(dispatcher);
  const workflowId = uniq('waits-for-attribute');
  try {
    const started = dispatcher.start({
      workflow: anyWorkflow,
      workflowId,
      args: [],
      searchAttributes: [{ key: K8sKind, value: 'Test' }],
      summary: 'waits for its search attribute',
      kind: 'Test',
      receivedAt: performance.now(),
    });
    let outcome: string | undefined;
    void started.then((r) => (outcome = r));

    // Named while it waits (the namespace may take a moment to be known to the frontend).
    await eventually(
      'the waiting start to name the search attribute',
      async () => [...dispatcher.blockedBy().keys()].some((r) => r.includes(K8sKind.name)),
      { timeoutMs: 60_000 },
    );
    await expect(readiness.run()).rejects.toThrow(`search attribute ${K8sKind.name} is not registered`);
    expect(
      await metricValue(registry, 'durable_operators_test_dispatch_blocked_calls', { cause: 'search_attribute' }),
    ).toBe(1);
    expect(outcome).toBeUndefined();

    await client.connection.operatorService.addSearchAttributes({
      namespace,
      searchAttributes: { [K8sKind.name]: 2 /* KEYWORD */ },
    });
    await expect(started).resolves.toBe('started');
    await readiness.run();
    expect(
      await metricValue(registry, 'durable_operators_test_dispatch_blocked_calls', { cause: 'search_attribute' }),
    ).toBe(0);
    const description = await client.workflow.getHandle(workflowId).describe();
    expect(description.typedSearchAttributes.get(K8sKind)).toBe('Test');
  } finally {
    dispatcher.stop();
    await client.workflow
      .getHandle(workflowId)
      .terminate()
      .catch(() => undefined);
  }
}, 120_000);

it('a call Temporal can never accept is dropped and counted by its gRPC code, not retried', async () => {
  const { registry, dispatcher } = newDispatcher();
  try {
    // Temporal limits a workflow ID to 1,000 bytes: no retry can make this start acceptable.
    const result = await dispatcher.start({
      workflow: anyWorkflow,
      workflowId: 'x'.repeat(1_100),
      args: [],
      searchAttributes: [],
      summary: 'never acceptable',
      kind: 'Test',
      receivedAt: performance.now(),
    });
    expect(result).toBe('dropped');
    expect(
      await metricValue(registry, 'durable_operators_test_dispatch_dropped_total', { code: 'INVALID_ARGUMENT' }),
    ).toBe(1);
    await dispatchUnblocked(dispatcher).run();
  } finally {
    dispatcher.stop();
  }
});

it('a role checks the search attributes at start: /readyz names each missing or mistyped one until all are registered', async () => {
  const base = await temporal();
  const bare = uniq('unregistered').replace(/[^a-z0-9-]/g, '-');
  await base.connection.workflowService.registerNamespace({
    namespace: bare,
    workflowExecutionRetentionPeriod: msToTs('1 day'),
  });
  const check = searchAttributesRegistered(
    new Client({ connection: base.connection, namespace: bare }),
    logger.child({ role: 'test' }),
  );
  // The new namespace may take a moment to be known to the frontend.
  await eventually('the check to name every attribute', async () => {
    const error = await check.run().then(
      () => undefined,
      (err: Error) => err.message,
    );
    return SEARCH_ATTRIBUTE_DEFINITIONS.every(({ name }) => error?.includes(`${name} (`)) ? true : undefined;
  });

  // All but one registered, and that one with the wrong type.
  const KEYWORD = 2;
  const TEXT = 1;
  await base.connection.operatorService.addSearchAttributes({
    namespace: bare,
    searchAttributes: Object.fromEntries(
      SEARCH_ATTRIBUTE_DEFINITIONS.map(({ name, cliType }) => [
        name,
        name === K8sKind.name ? TEXT : cliType === 'Keyword' ? KEYWORD : 7 /* KEYWORD_LIST */,
      ]),
    ),
  });
  await expect(check.run()).rejects.toThrow(`${K8sKind.name} is registered as INDEXED_VALUE_TYPE_TEXT, not Keyword`);
  await expect(check.run()).rejects.not.toThrow('is not registered');

  await base.connection.operatorService.removeSearchAttributes({ namespace: bare, searchAttributes: [K8sKind.name] });
  await base.connection.operatorService.addSearchAttributes({
    namespace: bare,
    searchAttributes: { [K8sKind.name]: KEYWORD },
  });
  await eventually('the check to pass', async () => (await check.run(), true));
});
