/**
 * The fire-and-forget requests' workflow contract: one workflow per request kind (the table
 * below covers every kind of src/api/request-kinds.ts, or typecheck fails), the TTL sweep, and
 * their messages. Callers start and signal through these typed definitions
 * (src/temporal/dispatch.ts), so a renamed workflow or signal fails `npm run typecheck`.
 */
import type { RequestKindName } from '../../api/request-kinds.js';
import { manifestCaptureRequestWorkflow } from './manifest-capture.js';
import type { RequestWorkflowInput } from './messages.js';
import { requestTtlSweepWorkflow } from './ttl-sweep.js';
import { volumeCaptureRequestWorkflow } from './volume-capture.js';
import { volumeRestoreRequestWorkflow } from './volume-restore.js';
import { versionedAs } from '../versioning-behavior.js';

export { requestTtlSweepWorkflow };
export { manifestCaptureRequestWorkflow, volumeCaptureRequestWorkflow, volumeRestoreRequestWorkflow };
export * from './messages.js';

/** The workflow that carries out one request of each kind. */
export const requestWorkflows: Record<RequestKindName, (input: RequestWorkflowInput) => Promise<string>> = {
  ManifestCaptureRequest: manifestCaptureRequestWorkflow,
  VolumeCaptureRequest: volumeCaptureRequestWorkflow,
  VolumeRestoreRequest: volumeRestoreRequestWorkflow,
};

// Under Worker Deployment Versioning (src/workers/versioning.ts) a request's run is short and
// finishes on the build that started it: a new build changes these without patches.
for (const workflow of Object.values(requestWorkflows)) versionedAs('PINNED', workflow);
versionedAs('PINNED', requestTtlSweepWorkflow);
