/**
 * A test file's process (a vitest fork) ends with the test run: when the runner dies (SIGKILL, a
 * CI timeout) its IPC channel closes, and nothing else would stop this process. What the file
 * started is in the stack's ledger, which the stack's lifeline kills (src/infra/lifeline.ts).
 */
process.once('disconnect', () => process.exit(1));
