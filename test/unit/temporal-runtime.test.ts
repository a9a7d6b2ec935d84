import { describe, expect, it } from 'vitest';
import { temporalLogLevel } from '../../src/workers/runtime.js';

describe("DO_TEMPORAL_LOG_LEVEL (the Temporal SDK's own logs)", () => {
  it('takes a level in any case, and the role’s default when unset or empty', () => {
    expect(temporalLogLevel('debug', 'WARN')).toBe('DEBUG');
    expect(temporalLogLevel('ERROR', 'WARN')).toBe('ERROR');
    expect(temporalLogLevel(undefined, 'INFO')).toBe('INFO');
    expect(temporalLogLevel('', 'WARN')).toBe('WARN');
  });

  it('refuses any other value, naming the variable', () => {
    expect(() => temporalLogLevel('verbose', 'WARN')).toThrow(
      /DO_TEMPORAL_LOG_LEVEL=verbose: expected one of TRACE, DEBUG/,
    );
  });
});
