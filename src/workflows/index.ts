/** The workflow bundle: every workflow the worker runs, from each system's contract. Deterministic code only. */
export * from './objectkeeper/contract.js';
export * from './requests/contract.js';
export * from './sandbox/contract.js';
export * from './cloudflare/contract.js';
