/**
 * The Cloudflare aggregation's workflow contract: a workflow per source object (started by the
 * watcher), a workflow per Cloudflare target (started by its first source), and their messages.
 */
import { cloudflareSourceWorkflow } from './source.js';
import { cloudflareSyncWorkflow } from './sync.js';
import { versionedAs } from '../versioning-behavior.js';

export { cloudflareSourceWorkflow, cloudflareSyncWorkflow };
export * from './messages.js';

// A source and a target live as long as their objects: each moves to the new build on its next
// task (changes behind patches).
versionedAs('AUTO_UPGRADE', cloudflareSourceWorkflow);
versionedAs('AUTO_UPGRADE', cloudflareSyncWorkflow);
