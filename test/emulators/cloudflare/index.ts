/** The local Cloudflare API emulator: start it, and drive its test hooks. */
export { startCloudflareEmulator, API_PREFIX, type EmulatorOptions, type RunningEmulator } from './server.js';
export { EmulatorAdmin } from './admin-client.js';
export { CLOUDFLARE_DEFAULT_BUDGET, type RateLimitBudget, type TokenSpec } from './auth.js';
export type { FaultSpec, Fault } from './faults.js';
export type { LoggedRequest } from './request-log.js';
export type { SeedDocument } from './store.js';
