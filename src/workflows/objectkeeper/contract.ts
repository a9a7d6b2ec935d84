/**
 * The ObjectKeeper system's workflow contract: the workflow function and its messages. Callers
 * (the watcher, the CLI, tests) start and signal through these typed definitions
 * (src/temporal/dispatch.ts), so a renamed workflow or signal fails `npm run typecheck`.
 */
export { objectKeeperWorkflow } from './keeper.js';
export * from './messages.js';
