/**
 * Starts the real local stack once for all integration tests, pre-bundles the workflow code,
 * and on teardown stops everything and fails the run if any process of the stack survived.
 */
import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import type {} from 'vitest';
import type { TestProject } from 'vitest/node';
import { LocalStack, type StackInfo } from '../../src/infra/stack.js';
import { isAlive } from '../../src/infra/process.js';
import { writeWorkflowBundle } from '../../src/workers/bundle.js';
import { ADMISSION_SANDBOX_CAPABILITIES } from './admission.js';

declare module 'vitest' {
  export interface ProvidedContext {
    stack: StackInfo;
    workflowBundle: string;
    /** The fast path's bundle: the sandbox workflows only. */
    sandboxWorkflowBundle: string;
  }
}

export default async function setup(project: TestProject) {
  // One stack per integration project (vitest.config.ts): `.state/test/<project>`.
  const stateDir = path.resolve(process.env.DO_TEST_STATE_DIR ?? '.state/test', project.name);
  await mkdir(stateDir, { recursive: true });
  const t0 = Date.now();
  const stack = await LocalStack.start({
    stateDir,
    mode: 'test',
    admissionSandboxCapabilities: ADMISSION_SANDBOX_CAPABILITIES,
  });
  const bundle = path.join(stateDir, 'workflow-bundle.js');
  const sandboxBundle = path.join(stateDir, 'sandbox-workflow-bundle.js');
  await Promise.all([writeWorkflowBundle(bundle), writeWorkflowBundle(sandboxBundle, 'sandbox')]);
  process.stderr.write(`[test] stack + workflow bundle ready in ${Date.now() - t0} ms (logs: ${stack.info.logsDir})\n`);
  project.provide('stack', stack.info);
  project.provide('workflowBundle', bundle);
  project.provide('sandboxWorkflowBundle', sandboxBundle);

  return async () => {
    const pids = stack.pids;
    await stack.stop();
    const survivors = pids.filter(isAlive);
    if (survivors.length) throw new Error(`stack processes still alive after stop: ${survivors.join(', ')}`);
  };
}
