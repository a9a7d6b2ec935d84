/**
 * Worker Deployment Versioning (Temporal server ≥ 1.29.1, Temporal Cloud): every Worker of a role
 * polls as one version, `<deployment>.<build ID>`, the deployment named after the role's task
 * queue and the build ID the image's tag. A workflow type says how its runs move between versions
 * (each system's contract.ts in src/workflows): the short request workflows are PINNED to the build that started
 * them, the entity workflows AUTO_UPGRADE to the current version on their next task (with
 * patches). New runs go to the deployment's current version; making a version current is the
 * rollout's step (`temporal worker deployment set-current-version`), or the worker's own at start
 * in `auto-promote` mode.
 *
 * Off (the default) is the behaviour before versioning: unversioned workers, every run on
 * whichever worker polls, patches for every change.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type { VersioningBehavior, WorkerDeploymentVersion } from '@temporalio/common';
import type { NativeConnection, WorkerOptions } from '@temporalio/worker';
import type { Logger } from '../log.js';

export type VersioningMode = 'off' | 'on' | 'auto-promote';
export const VERSIONING_MODES: readonly VersioningMode[] = ['off', 'on', 'auto-promote'];

export interface WorkerVersioning {
  /** `DO_WORKER_VERSIONING`: off (default), on (a rollout step makes a version current), auto-promote. */
  mode: VersioningMode;
  /** `DO_BUILD_ID`: the image's tag in the chart; default the package version. */
  buildId: string;
}

/**
 * A workflow type without its own annotation: AUTO_UPGRADE, so a run never waits on a build that
 * is gone (every type of ours is annotated; a unit test holds that).
 */
const DEFAULT_BEHAVIOR: VersioningBehavior = 'AUTO_UPGRADE';

/** The version a role's workers poll as: the deployment is named after the role's task queue. */
export function deploymentVersion(versioning: WorkerVersioning, taskQueue: string): WorkerDeploymentVersion {
  return { deploymentName: taskQueue, buildId: versioning.buildId };
}

/** The Worker options of a role whose task queue (deployment) is `taskQueue`: none when off. */
export function versionedWorkerOptions(
  versioning: WorkerVersioning | undefined,
  taskQueue: string,
): Pick<WorkerOptions, 'workerDeploymentOptions'> {
  if (!versioning || versioning.mode === 'off') return {};
  return {
    workerDeploymentOptions: {
      useWorkerVersioning: true,
      version: deploymentVersion(versioning, taskQueue),
      defaultVersioningBehavior: DEFAULT_BEHAVIOR,
    },
  };
}

/** How often an auto-promoting worker asks again while its version is not registered yet. */
const PROMOTE_RETRY_MS = 1_000;

/**
 * `auto-promote`: makes this build the deployment's current version once its pollers have reached
 * the server (the version exists only then), unless the version was current or ramping before:
 * an old replica restarting in the middle of a rollout does not take the deployment back, and a
 * rollback is an explicit `set-current-version`. Retries until done or `signal` aborts.
 */
export async function promoteWhenPolling(opts: {
  /** The role's connection now (read per attempt: a credential rotation replaces it). */
  connection: () => NativeConnection;
  namespace: string;
  version: WorkerDeploymentVersion;
  identity?: string;
  log: Logger;
  signal?: AbortSignal;
}): Promise<'promoted' | 'already current' | 'was current before' | 'stopped'> {
  const { connection, namespace, version, log, signal } = opts;
  for (let attempt = 0; !signal?.aborted; attempt++) {
    const service = connection().workflowService;
    try {
      const described = await service.describeWorkerDeploymentVersion({ namespace, deploymentVersion: version });
      const info = described.workerDeploymentVersionInfo;
      if (info?.currentSinceTime) return 'already current';
      if (info?.firstActivationTime) {
        log.warn(
          { deployment: version.deploymentName, buildId: version.buildId },
          'this build was current or ramping before: not made current again (a rollback is `temporal worker deployment set-current-version`)',
        );
        return 'was current before';
      }
      await service.setWorkerDeploymentCurrentVersion({
        namespace,
        deploymentName: version.deploymentName,
        buildId: version.buildId,
        identity: opts.identity ?? '',
      });
      log.info({ deployment: version.deploymentName, buildId: version.buildId }, 'made this build the current version');
      return 'promoted';
    } catch (err) {
      // NOT_FOUND / FAILED_PRECONDITION until this version's pollers have been seen.
      if (attempt % 30 === 29)
        log.warn({ err: (err as Error).message, deployment: version.deploymentName }, 'this build is not current yet');
      await sleep(PROMOTE_RETRY_MS, undefined, { signal }).catch(() => undefined);
    }
  }
  return 'stopped';
}

/**
 * Starts `promoteWhenPolling` in the background when the role is in `auto-promote` mode (nothing
 * otherwise); the function it returns stops it (on shutdown).
 */
export function autoPromote(opts: {
  versioning?: WorkerVersioning;
  taskQueue: string;
  namespace: string;
  connection: { readonly current: NativeConnection };
  identity?: string;
  log: Logger;
}): () => void {
  const { versioning, taskQueue, connection, ...rest } = opts;
  if (versioning?.mode !== 'auto-promote') return () => undefined;
  const promoting = new AbortController();
  void promoteWhenPolling({
    ...rest,
    connection: () => connection.current,
    version: deploymentVersion(versioning, taskQueue),
    signal: promoting.signal,
  });
  return () => promoting.abort();
}
