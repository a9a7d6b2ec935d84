/** Sandboxes' env values sealed before they reach Temporal (src/fastpath/sealed-env.ts). */
import { describe, expect, it } from 'vitest';
import { EnvSealer, SEALED_PREFIX } from '../../src/fastpath/sealed-env.js';

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
