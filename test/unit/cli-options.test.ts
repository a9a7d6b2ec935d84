import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { count, goDurationMs, portNumber } from '../../src/cli/options.js';
import { loadFastPathConfig } from '../../src/config.js';

describe('CLI value parsers', () => {
  it('parse ports, counts and Go durations, and refuse anything else', () => {
    expect([portNumber('0'), portNumber('9090'), count('5'), goDurationMs('1m30s'), goDurationMs('0')]).toEqual([
      0, 9090, 5, 90_000, 0,
    ]);
    for (const [parse, text] of [
      [portNumber, 'nope'],
      [portNumber, '70000'],
      [portNumber, ''],
      [count, '-1'],
      [count, '1.5'],
      [goDurationMs, '10'],
      [goDurationMs, '5x'],
    ] as const)
      expect(() => parse(text), text).toThrow();
  });
});

describe('fast path settings', () => {
  const env = { DO_FASTPATH_GRPC_PORT: '7000', DO_FASTPATH_ORPHAN_TIMEOUT: '1m', DO_TENANT_PREFIX: 'p/' };

  it('take the parsed flags as given, the environment only for what no flag set', () => {
    const fp = loadFastPathConfig(env, { grpcPort: 7001, orphanTimeoutMs: 5_000, consistencyMode: 'strong' });
    expect(fp).toMatchObject({
      grpcPort: 7001,
      httpPort: 9080,
      orphanTimeoutMs: 5_000,
      consistencyMode: 'strong',
      tenantPrefix: 'p/',
    });
    expect(loadFastPathConfig(env)).toMatchObject({ grpcPort: 7000, orphanTimeoutMs: 60_000, consistencyMode: 'fast' });
  });

  it('the CLI refuses a bad value of a flag or of its variable before starting, naming which', async () => {
    const run = async (args: string[], extraEnv: Record<string, string> = {}) => {
      const err = (await promisify(execFile)(
        process.execPath,
        ['--import', 'tsx', 'src/cli/main.ts', 'fastpath', ...args],
        // A Temporal address nothing listens on: if parsing let the value through, the start would fail elsewhere.
        { env: { ...process.env, TEMPORAL_ADDRESS: '127.0.0.1:1', ...extraEnv }, timeout: 25_000 },
      ).then(
        () => undefined,
        (e: unknown) => e,
      )) as { code?: number; stderr?: string } | undefined;
      expect(err?.code).toBe(1);
      return err!.stderr!;
    };
    expect(await run(['--grpc-port', 'nope'])).toMatch(
      /option '--grpc-port <port>' argument 'nope' is invalid\. not a port/,
    );
    expect(await run([], { DO_FASTPATH_JANITOR_INTERVAL: '10' })).toMatch(
      /option '--janitor-interval <duration>' value '10' from env 'DO_FASTPATH_JANITOR_INTERVAL' is invalid\. not a Go duration/,
    );
  }, 60_000);
});
