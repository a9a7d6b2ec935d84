/** The workflow bundle: every workflow the worker runs. Deterministic code only. */
export * from './objectkeeper/keeper.js';
export { manifestCaptureRequestWorkflow } from './requests/manifest-capture.js';
export { volumeCaptureRequestWorkflow } from './requests/volume-capture.js';
export { volumeRestoreRequestWorkflow } from './requests/volume-restore.js';
export { requestTtlSweepWorkflow } from './requests/ttl-sweep.js';
export { requestDeletedSignal, requestStateQuery } from './requests/lifecycle.js';
