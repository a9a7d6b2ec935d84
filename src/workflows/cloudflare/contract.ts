/**
 * The Cloudflare aggregation's workflow contract: a workflow per source object (started by the
 * watcher), a workflow per Cloudflare target (started by its first source), and their messages.
 */
export { cloudflareSourceWorkflow } from './source.js';
export { cloudflareSyncWorkflow } from './sync.js';
export * from './messages.js';
