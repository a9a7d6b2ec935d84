/** One identity per Cloudflare target (src/domain/cloudflare/identity.ts): which credentials write it. */
import { describe, expect, it } from 'vitest';
import { targetIdentity, plansByCredentials } from '../../src/domain/cloudflare/identity.js';

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

describe("a zone's tunnel CNAMEs written per source identity (issue 33, N10)", () => {
  type R = { id?: string; name: string; content: string; team?: string };
  const same = (a: R, b: R) => a.name === b.name && a.content === b.content;
  const teamOf = (r: R) => r.team;

  it("each team's plan holds its own creates, updates and removals; everyone else's records stay as they are live", () => {
    const byHand: R = { id: '1', name: 'www', content: 'x' };
    const aKeeps: R = { id: '2', name: 'a1', content: 'ta', team: 'cf-a' };
    const aMoves: R = { id: '3', name: 'a2', content: 'ta', team: 'cf-a' };
    const bGone: R = { id: '4', name: 'b-old', content: 'tb', team: 'cf-b' };
    const orphan: R = { id: '5', name: 'gone', content: 't?' }; // its source is no longer registered
    const live = [byHand, aKeeps, aMoves, bGone, orphan];
    const aUpdated: R = { id: '3', name: 'a2', content: 'ta2', team: 'cf-a' };
    const bNew: R = { name: 'b1', content: 'tb', team: 'cf-b' };
    const plan = { items: [byHand, { ...aKeeps }, aUpdated, bNew] };
    const parts = plansByCredentials(plan, live, teamOf, 'cf-a', same);
    expect(parts.map((p) => p.credentials)).toEqual(['cf-a', 'cf-b']);
    const [a, b] = parts;
    // cf-a: its update, the orphan's removal (the target's own credentials), B's records untouched.
    expect(a!.items).toEqual(expect.arrayContaining([byHand, aUpdated, bGone]));
    expect(a!.items).not.toContainEqual(bNew);
    expect(a!.items).not.toContainEqual(orphan);
    // cf-b: its create and its removal; A's records as they are live (A's update not made with B's token).
    expect(b!.items).toEqual(expect.arrayContaining([byHand, bNew, aMoves, orphan]));
    expect(b!.items).not.toContainEqual(aUpdated);
    expect(b!.items).not.toContainEqual(bGone);
  });

  it('a team with nothing to change gets no plan (no write, no client)', () => {
    const a: R = { id: '1', name: 'a1', content: 'ta', team: 'cf-a' };
    const b: R = { id: '2', name: 'b1', content: 'tb', team: 'cf-b' };
    const bNext: R = { id: '2', name: 'b1', content: 'tb2', team: 'cf-b' };
    expect(
      plansByCredentials({ items: [{ ...a }, bNext] }, [a, b], teamOf, 'cf-a', same).map((p) => p.credentials),
    ).toEqual(['cf-b']);
  });
});
