/** The worker's workflows and the test-only ones, in one bundle. Deterministic code only. */
export * from '../../../src/workflows/index.js';
export * from './entity-probe.js';
