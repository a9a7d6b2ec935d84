/**
 * Workflow tests with stubbed activities: a Temporal dev server of their own
 * (@temporalio/testing's `TestWorkflowEnvironment.createLocal`), run from the Temporal CLI the
 * stack runs (src/infra/binaries.ts; never a download), with the search attributes and dynamic
 * config the stack gives its server, and a worker of the real workflow code. The layer between
 * pure domain/ tests and the full stack (docs/development.md, Tests).
 */
import { randomUUID } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { TestWorkflowEnvironment } from '@temporalio/testing';
import { DefaultLogger, Runtime, Worker, type WorkflowBundleWithSourceMap } from '@temporalio/worker';
import { ensureBinary } from '../../src/infra/binaries.js';
import { DEV_SERVER_DYNAMIC_CONFIG } from '../../src/infra/components.js';
import { bundleWorkflows } from '../../src/workers/bundle.js';
import { SEARCH_ATTRIBUTE_DEFINITIONS } from '../../src/temporal/search-attributes.js';

/** The project's workflows plus the test-only ones of test/workflow/workflows/. */
const WORKFLOWS = fileURLToPath(new URL('../workflow/workflows/index.ts', import.meta.url));

export async function startWorkflowEnv(): Promise<TestWorkflowEnvironment> {
  // The SDK's own INFO lines (every worker state change) would drown the test's output.
  try {
    Runtime.install({ logger: new DefaultLogger('WARN') });
  } catch {
    // Installed already (an earlier file in this process): keep it.
  }
  const temporal = await ensureBinary('temporal');
  const extraArgs = SEARCH_ATTRIBUTE_DEFINITIONS.flatMap((sa) => ['--search-attribute', `${sa.name}=${sa.cliType}`]);
  for (const [key, value] of Object.entries(DEV_SERVER_DYNAMIC_CONFIG))
    extraArgs.push('--dynamic-config-value', `${key}=${JSON.stringify(value)}`);
  return TestWorkflowEnvironment.createLocal({
    server: {
      executable: { type: 'existing-path', path: temporal.path },
      ip: '127.0.0.1',
      extraArgs,
      log: { format: 'pretty', level: 'warn' },
    },
  });
}

/** The workflow code as the worker bundles it (interceptors, failure converter, shared modules), with the test workflows. */
export function bundleTestWorkflows(): Promise<WorkflowBundleWithSourceMap> {
  return bundleWorkflows('all', { workflowsPath: WORKFLOWS });
}

/** Runs `fn` while a worker of `bundle` with these (stubbed) activities polls a task queue of its own. */
export async function withWorker<T>(
  env: TestWorkflowEnvironment,
  bundle: WorkflowBundleWithSourceMap,
  activities: object,
  fn: (taskQueue: string) => Promise<T>,
): Promise<T> {
  const taskQueue = `workflow-test-${randomUUID()}`;
  const worker = await Worker.create({
    connection: env.nativeConnection,
    taskQueue,
    workflowBundle: bundle,
    activities,
  });
  return worker.runUntil(fn(taskQueue));
}
