/**
 * How a workflow type's runs move between builds under Worker Deployment Versioning
 * (src/workers/versioning.ts): PINNED to the build that started them, or AUTO_UPGRADE to the
 * current build at their next task.
 *
 * Said only to a versioned worker: the server refuses a workflow task completed with a
 * versioning behaviour by an unversioned worker ("versioning behavior cannot be specified without
 * deployment options being set with versioned mode"), which is every worker while versioning is
 * off. Whether the run's first task ran on a versioned worker is in its history, so the answer is
 * the same on every replay.
 */
import type { VersioningBehavior } from '@temporalio/common';
import { setWorkflowOptions, workflowInfo } from '@temporalio/workflow';

/** Each annotated workflow type's behaviour, by function name (a unit test reads it). */
export const versioningBehaviors = new Map<string, VersioningBehavior>();

export function versionedAs<A extends unknown[], R>(
  behavior: VersioningBehavior,
  workflow: (...args: A) => Promise<R>,
): void {
  versioningBehaviors.set(workflow.name, behavior);
  // An unversioned worker has a build ID (the SDK's own) but no deployment.
  setWorkflowOptions(
    () => (workflowInfo().currentDeploymentVersion?.deploymentName ? { versioningBehavior: behavior } : {}),
    workflow,
  );
}
