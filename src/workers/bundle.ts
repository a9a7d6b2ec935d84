/**
 * Locates and pre-bundles the workflow code (images and the test harness bundle it once).
 *
 * Two bundles: the worker's has every workflow; the fast path's only the sandbox workflows, the
 * only ones its task queue runs. The size matters on the create path: every new workflow
 * evaluates its bundle's modules, and the whole bundle costs each sandbox create ~5 ms more than
 * the sandbox one (bench/RESULTS.md, "One bundle per role").
 *
 * What a workflow need not evaluate again is preloaded: src/domain's modules (pure by rule: no
 * state, no workflow API) and what they import — the CRD schemas, TypeBox, yaml — are evaluated
 * once per worker thread and shared by every workflow it runs (the SDK's `preloadModules`; it
 * freezes them). Without it each new workflow of the worker's bundle spent ≈ 4–5 ms building the
 * same schemas again (bench/RESULTS.md, "Shared modules").
 */
import { readdirSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { bundleWorkflowCode, type WorkerOptions, type WorkflowBundleWithSourceMap } from '@temporalio/worker';
import { FAILURE_CONVERTER_PATH } from '../temporal/connection.js';
import { WORKFLOW_INTERCEPTOR_MODULES } from '../tracing/temporal.js';

/** Which workflows a bundle holds: the worker's (all) or the fast path's (sandbox). */
export type WorkflowSet = 'all' | 'sandbox';

const ENTRIES: Record<WorkflowSet, string> = { all: 'index', sandbox: 'sandbox/contract' };
/** Running from the sources (dev, tests: TypeScript) or compiled (dist/: JavaScript), as this file is. */
const EXT = import.meta.url.endsWith('.ts') ? 'ts' : 'js';

/** The set's entry: src/workflows/….ts when running from sources, dist/workflows/….js when compiled. */
export function workflowsEntry(set: WorkflowSet = 'all'): string {
  return fileURLToPath(new URL(`../workflows/${ENTRIES[set]}.${EXT}`, import.meta.url));
}

/**
 * The modules a set's workflows share, evaluated once per worker thread: src/domain's (all of it
 * for the worker's bundle; the fast path's, only its top level — the Cloudflare kinds are not its).
 */
export function preloadedModules(set: WorkflowSet = 'all'): string[] {
  const dir = fileURLToPath(new URL('../domain/', import.meta.url));
  return readdirSync(dir, { recursive: set === 'all', encoding: 'utf8' })
    .filter((file) => file.endsWith(`.${EXT}`) && !file.endsWith('.d.ts'))
    .sort()
    .map((file) => `${dir}${file}`);
}

/**
 * Bundles the workflow code in memory (webpack's progress chatter silenced), with the tracing
 * interceptors, the failure converter that hands failure messages to the payload codec, and the
 * set's shared modules.
 */
export function bundleWorkflows(
  set: WorkflowSet = 'all',
  opts: {
    /** `false`: nothing shared, every workflow evaluates every module (the baseline of bench/shared-modules.ts). */
    preload?: boolean;
    /** Another entry than the set's (the workflow tests': the real workflows and test-only ones). */
    workflowsPath?: string;
  } = {},
): Promise<WorkflowBundleWithSourceMap> {
  const quiet = () => {};
  return bundleWorkflowCode({
    workflowsPath: opts.workflowsPath ?? workflowsEntry(set),
    workflowInterceptorModules: WORKFLOW_INTERCEPTOR_MODULES,
    failureConverterPath: FAILURE_CONVERTER_PATH,
    preloadModules: opts.preload === false ? [] : preloadedModules(set),
    logger: { log: quiet, trace: quiet, debug: quiet, info: quiet, warn: quiet, error: quiet },
  });
}

export async function writeWorkflowBundle(outFile: string, set: WorkflowSet = 'all'): Promise<void> {
  await writeFile(outFile, (await bundleWorkflows(set)).code);
}

/** The environment variable that names each set's pre-built bundle. */
export const BUNDLE_ENV: Record<WorkflowSet, string> = {
  all: 'DO_WORKFLOW_BUNDLE',
  sandbox: 'DO_FASTPATH_WORKFLOW_BUNDLE',
};

/**
 * Workflow code: a pre-built bundle when one is given (the image builds both once, see
 * the Dockerfile), otherwise the set's sources are bundled at start-up.
 */
export function workflowSource(
  bundlePath?: string,
  set: WorkflowSet = 'all',
): Pick<WorkerOptions, 'workflowBundle' | 'workflowsPath' | 'bundlerOptions'> {
  const path = bundlePath ?? process.env[BUNDLE_ENV[set]];
  if (path) return { workflowBundle: { codePath: path } };
  return { workflowsPath: workflowsEntry(set), bundlerOptions: { preloadModules: preloadedModules(set) } };
}
