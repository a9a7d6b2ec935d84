/** Locates and pre-bundles the workflow code (images and the test harness bundle it once). */
import { existsSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { bundleWorkflowCode, type WorkerOptions, type WorkflowBundleWithSourceMap } from '@temporalio/worker';

/** src/workflows/index.ts when running from sources, dist/workflows/index.js when compiled. */
export function workflowsEntry(): string {
  const ts = fileURLToPath(new URL('../workflows/index.ts', import.meta.url));
  return existsSync(ts) ? ts : fileURLToPath(new URL('../workflows/index.js', import.meta.url));
}

/** Bundles the workflow code in memory (webpack's progress chatter silenced). */
export function bundleWorkflows(): Promise<WorkflowBundleWithSourceMap> {
  const quiet = () => {};
  return bundleWorkflowCode({
    workflowsPath: workflowsEntry(),
    logger: { log: quiet, trace: quiet, debug: quiet, info: quiet, warn: quiet, error: quiet },
  });
}

export async function writeWorkflowBundle(outFile: string): Promise<void> {
  await writeFile(outFile, (await bundleWorkflows()).code);
}

/**
 * Workflow code: a pre-built bundle when one is given (production images build it once with
 * `npm run build`), otherwise the sources are bundled at start-up.
 */
export function workflowSource(bundlePath?: string): Pick<WorkerOptions, 'workflowBundle' | 'workflowsPath'> {
  const path = bundlePath ?? process.env.DO_WORKFLOW_BUNDLE;
  if (path) return { workflowBundle: { codePath: path } };
  return { workflowsPath: workflowsEntry() };
}
