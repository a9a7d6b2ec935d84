/** The workflow bundle: every workflow the worker runs. Deterministic code only. */
export * from './objectkeeper/keeper.js';
