/** One identity per Cloudflare target (src/domain/cloudflare/identity.ts): which credentials write it. */
import { describe, expect, it } from 'vitest';
import { targetIdentity } from '../../src/domain/cloudflare/identity.js';

const claim = (key: string, credentials: string, createdAt: string) => ({ key, credentials, createdAt });

describe('targetIdentity', () => {
  it('keeps the credentials the target was written with while a source names them, whoever registered last', () => {
    const claims = [claim('b', 'team-b', '2026-01-02T00:00:00.000Z'), claim('a', 'team-a', '2026-01-01T00:00:00.000Z')];
    expect(targetIdentity(claims, 'team-b')).toEqual({ credentials: 'team-b', conflicting: ['a'] });
  });

  it("takes the oldest source's credentials when none is established or no source names them any more", () => {
    const claims = [claim('b', 'team-b', '2026-01-02T00:00:00.000Z'), claim('a', 'team-a', '2026-01-01T00:00:00.000Z')];
    expect(targetIdentity(claims, undefined)).toEqual({ credentials: 'team-a', conflicting: ['b'] });
    expect(targetIdentity(claims, 'gone')).toEqual({ credentials: 'team-a', conflicting: ['b'] });
    // Same creation time: the key decides, never the order of arrival.
    const tie = [claim('y', 'c2', 't'), claim('x', 'c1', 't')];
    expect(targetIdentity(tie, undefined).credentials).toBe('c1');
    expect(targetIdentity([...tie].reverse(), undefined).credentials).toBe('c1');
  });

  it('has no conflict when every source names the same credentials', () => {
    const claims = [claim('a', 'shared', '1'), claim('b', 'shared', '2')];
    expect(targetIdentity(claims, 'old')).toEqual({ credentials: 'shared', conflicting: [] });
  });

  it('with no live source (removals only) writes with the established credentials, else the fallback', () => {
    expect(targetIdentity([], 'established', 'last')).toEqual({ credentials: 'established', conflicting: [] });
    expect(targetIdentity([], undefined, 'last')).toEqual({ credentials: 'last', conflicting: [] });
  });
});
