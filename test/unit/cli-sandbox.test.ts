/** The sandbox CLI's argument parsing and table, decided purely. */
import { describe, expect, it } from 'vitest';
import { expireTimeSeconds, parseLabels, parsePorts, readInput, table } from '../../src/cli/sandbox.js';

describe('sandbox CLI arguments', () => {
  const now = Date.parse('2026-11-24T10:00:00Z');

  it('--expire-time: RFC 3339, a duration from now, or 0/never', () => {
    expect(expireTimeSeconds('2026-11-24T12:00:00Z', now)).toBe(Date.parse('2026-11-24T12:00:00Z') / 1000);
    expect(expireTimeSeconds('90m', now)).toBe(now / 1000 + 5400);
    expect(expireTimeSeconds('0', now)).toBe(0);
    expect(expireTimeSeconds('never', now)).toBe(0);
    expect(() => expireTimeSeconds('tomorrow', now)).toThrow(
      '--expire-time: "tomorrow" is not an RFC 3339 time, a duration (30m, 2h) or 0',
    );
  });

  it('exec -i reads stdin to its end, up to 1 MiB; more is refused, not cut', async () => {
    async function* chunks(...sizes: number[]) {
      for (const n of sizes) yield Buffer.alloc(n, 'a');
    }
    expect((await readInput(chunks(3, 4))).toString()).toBe('aaaaaaa');
    expect((await readInput(chunks(512 * 1024, 512 * 1024))).length).toBe(1024 * 1024);
    await expect(readInput(chunks(512 * 1024, 512 * 1024, 1))).rejects.toThrow(
      '-i: stdin is over 1048576 bytes, the most an exec takes',
    );
  });

  it('--labels and --ports say what is wrong', () => {
    expect(parseLabels('team=a,tier=gold')).toEqual({ team: 'a', tier: 'gold' });
    expect(() => parseLabels('team')).toThrow('--labels: "team" is not key=value');
    expect(parsePorts('8080,9090')).toEqual([8080, 9090]);
    expect(() => parsePorts('0')).toThrow('--ports: "0" is not a port');
  });

  it('lists as kubectl-style columns', () => {
    const out = table([
      {
        sandboxName: 'hi',
        phase: 'Running',
        image: 'node:22',
        poolRef: 'pool-a',
        agentPod: 'agent-0',
        endpoints: ['127.0.0.1:8080'],
        createdAt: Math.floor(Date.now() / 1000) - 30,
        sandboxId: 'x',
      },
    ]).split('\n');
    expect(out[0]).toMatch(/^NAME\s+PHASE\s+IMAGE\s+POOL\s+AGENT\s+ENDPOINTS\s+AGE$/);
    expect(out[1]).toMatch(/^hi\s+Running\s+node:22\s+pool-a\s+agent-0\s+127\.0\.0\.1:8080\s+3\ds$/);
  });
});
