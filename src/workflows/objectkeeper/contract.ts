/**
 * The ObjectKeeper system's workflow contract: the workflow function and its messages. Callers
 * (the watcher, the CLI, tests) start and signal through these typed definitions
 * (src/temporal/dispatch.ts), so a renamed workflow or signal fails `npm run typecheck`.
 */
import { objectKeeperWorkflow } from './keeper.js';
import { versionedAs } from '../versioning-behavior.js';

export { objectKeeperWorkflow };
export * from './messages.js';

// A keeper lives as long as what it keeps: it moves to each new build (changes behind patches).
versionedAs('AUTO_UPGRADE', objectKeeperWorkflow);
