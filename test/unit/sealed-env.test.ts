/** Sandboxes' env values sealed before they reach Temporal (src/fastpath/sealed-env.ts). */
import { describe, expect, it } from 'vitest';
import { EnvSealer, SEALED_PREFIX, SEALED_SOURCE_PREFIX } from '../../src/fastpath/sealed-env.js';

describe('EnvSealer', () => {
  const sealer = new EnvSealer('agent-key-1');

  it('seals a value so that it is not readable, and opens it back', () => {
    const sealed = sealer.seal('API_TOKEN', 'hunter2-ünïcode');
    expect(sealed.startsWith(SEALED_PREFIX)).toBe(true);
    expect(sealed).not.toContain('hunter2');
    expect(Buffer.from(sealed.slice(SEALED_PREFIX.length), 'base64url').toString('latin1')).not.toContain('hunter2');
    expect(sealer.open('API_TOKEN', sealed)).toBe('hunter2-ünïcode');
    expect(sealer.openEnvs(sealer.sealEnvs({ A: '1', B: '' }))).toEqual({ A: '1', B: '' });
  });

  it('is deterministic (a retried create is the same create), and differs per name and value', () => {
    expect(sealer.seal('A', 'v')).toBe(new EnvSealer('agent-key-1').seal('A', 'v'));
    expect(new Set([sealer.seal('A', 'v'), sealer.seal('B', 'v'), sealer.seal('A', 'w')]).size).toBe(3);
  });

  it('refuses a value sealed under another key, or moved to another variable, saying why', () => {
    const sealed = new EnvSealer('agent-key-2').seal('A', 'v');
    expect(() => sealer.open('A', sealed)).toThrow('the value of env A was sealed with another key');
    expect(() => sealer.open('B', sealer.seal('A', 'v'))).toThrow(/env B/);
  });

  it('passes values recorded before sealing existed through unchanged', () => {
    expect(sealer.open('A', 'plain')).toBe('plain');
  });
});

describe('EnvSealer: references (envs[].valueFrom)', () => {
  const sealer = new EnvSealer('agent-key-1');
  const source = { kind: 'Secret' as const, namespace: 'team-a', name: 'db', key: 'pw', optional: false };

  it('seals a reference that opens as a reference, never as a value', () => {
    const sealed = sealer.sealSource('A', source);
    expect(sealed.startsWith(SEALED_SOURCE_PREFIX)).toBe(true);
    expect(sealed).not.toContain('team-a');
    expect(sealer.openEntry('A', sealed)).toEqual({ source });
    expect(() => sealer.open('A', sealed)).toThrow('env A is a reference to a Secret, not a value');
    expect(sealer.openEntry('A', sealer.seal('A', 'v'))).toEqual({ value: 'v' });
  });

  it('cannot be forged from a sealed value, nor moved to another variable', () => {
    // A value sealed under a reference's prefix (e.g. a user's literal made to look like one) does not open.
    const value = sealer.seal('A', JSON.stringify(source)).slice(SEALED_PREFIX.length);
    expect(() => sealer.openEntry('A', SEALED_SOURCE_PREFIX + value)).toThrow(/env A/);
    expect(() => sealer.openEntry('B', sealer.sealSource('A', source))).toThrow(/env B/);
  });
});
