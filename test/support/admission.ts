/**
 * The admission webhook's settings in the test stacks (global-setup.ts): one namespace whose
 * SandboxPools may add NET_RAW, so the tests see both an allowed and a refused namespace.
 */
import type { AllowedCapabilities } from '../../src/domain/sandbox-capabilities.js';

export const NET_RAW_NAMESPACE = 'sandbox-net-raw-allowed';

export const ADMISSION_SANDBOX_CAPABILITIES: AllowedCapabilities = { NET_RAW: [NET_RAW_NAMESPACE] };
