/**
 * The fire-and-forget requests' workflow contract: one workflow per request kind (the table
 * below covers every kind of src/api/request-kinds.ts, or typecheck fails), the TTL sweep, and
 * their messages. Callers start and signal through these typed definitions
 * (src/temporal/dispatch.ts), so a renamed workflow or signal fails `npm run typecheck`.
 */
import type { RequestKindName } from '../../api/request-kinds.js';
import { manifestCaptureRequestWorkflow } from './manifest-capture.js';
import type { RequestWorkflowInput } from './messages.js';
import { volumeCaptureRequestWorkflow } from './volume-capture.js';
import { volumeRestoreRequestWorkflow } from './volume-restore.js';

export { requestTtlSweepWorkflow } from './ttl-sweep.js';
export { manifestCaptureRequestWorkflow, volumeCaptureRequestWorkflow, volumeRestoreRequestWorkflow };
export * from './messages.js';

/** The workflow that carries out one request of each kind. */
export const requestWorkflows: Record<RequestKindName, (input: RequestWorkflowInput) => Promise<string>> = {
  ManifestCaptureRequest: manifestCaptureRequestWorkflow,
  VolumeCaptureRequest: volumeCaptureRequestWorkflow,
  VolumeRestoreRequest: volumeRestoreRequestWorkflow,
};
