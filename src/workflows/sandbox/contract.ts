/**
 * The sandbox fast path's workflow contract: the per-sandbox workflow, the janitor and their
 * messages. The fast-path server starts and updates through these typed definitions
 * (update-with-start), the watcher signals through them.
 */
import { sandboxJanitorWorkflow } from './janitor.js';
import { sandboxPoolWorkflow } from './pool.js';
import { sandboxQuotaWorkflow } from './quota.js';
import { sandboxWorkflow } from './sandbox.js';
import { versionedAs } from '../versioning-behavior.js';

export { sandboxWorkflow };
export * from './janitor.js';
export * from './quota.js';
export * from './messages.js';
export * from './pool.js';

// Entities: a sandbox, a pool, a tenant's quota and the janitor live on; each moves to the new
// build on its next task (changes behind patches).
versionedAs('AUTO_UPGRADE', sandboxWorkflow);
versionedAs('AUTO_UPGRADE', sandboxJanitorWorkflow);
versionedAs('AUTO_UPGRADE', sandboxPoolWorkflow);
versionedAs('AUTO_UPGRADE', sandboxQuotaWorkflow);
