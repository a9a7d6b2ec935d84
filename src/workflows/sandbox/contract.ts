/**
 * The sandbox fast path's workflow contract: the per-sandbox workflow, the janitor and their
 * messages. The fast-path server starts and updates through these typed definitions
 * (update-with-start), the watcher signals through them.
 */
export { sandboxWorkflow } from './sandbox.js';
export * from './janitor.js';
export * from './quota.js';
export * from './messages.js';
export * from './pool.js';
