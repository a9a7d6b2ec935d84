import { describe, expect, it } from 'vitest';
import { PlacementTable, RESERVATION_TTL_MS, type AgentReport } from '../../src/domain/allocation.js';

function agent(id: string, extra: Partial<AgentReport> = {}): AgentReport {
  return {
    id,
    pod: id,
    namespace: 'ns',
    pool: 'p',
    node: 'n1',
    url: `http://${id}`,
    ip: '10.0.0.1',
    capacity: 2,
    images: [],
    sandboxes: [],
    ...extra,
  };
}
const req = (sandboxId: string, extra: Record<string, unknown> = {}) => ({
  sandboxId,
  namespace: 'ns',
  pool: 'p',
  image: 'img',
  ports: [] as number[],
  ...extra,
});
const placedOn = (v: ReturnType<PlacementTable['allocate']>) =>
  v.status === 'placed' ? v.placement.agentId : v.status;

describe('PlacementTable', () => {
  it('never places more sandboxes on an agent than its capacity', () => {
    const t = new PlacementTable();
    t.report(agent('a'), 0);
    t.report(agent('b'), 0);
    const got = [1, 2, 3, 4, 5].map((i) => placedOn(t.allocate(req(`s${i}`), 0)));
    expect(got.filter((g) => g === 'a')).toHaveLength(2);
    expect(got.filter((g) => g === 'b')).toHaveLength(2);
    expect(got[4]).toBe('exhausted');
    const v = t.allocate(req('s6'), 0);
    expect(v.status === 'exhausted' && v.message).toBe(
      'pool p in namespace ns is full: 4 of 4 sandbox slots in use on 2 agents',
    );
  });

  it('a full pool whose slots are partly held by terminating sandboxes says so', () => {
    const t = new PlacementTable();
    const held = (id: string, terminating = false) => ({ sandboxId: id, exposedPorts: [], terminating });
    t.report(agent('a', { sandboxes: [held('x', true), held('y')] }), 0);
    t.report(agent('b', { sandboxes: [held('z'), held('w')] }), 0);
    const v = t.allocate(req('s1'), 0);
    expect(v.status === 'exhausted' && v.message).toBe(
      'pool p in namespace ns is full: 4 of 4 sandbox slots in use on 2 agents (1 still terminating, free in a few seconds)',
    );
  });

  it('prefers an agent that already ran the image, then the least loaded (the original score)', () => {
    const t = new PlacementTable();
    t.report(agent('cold', { capacity: 5 }), 0);
    t.report(agent('warm', { capacity: 5, images: ['img'], sandboxes: [{ sandboxId: 'x', exposedPorts: [] }] }), 0);
    expect(placedOn(t.allocate(req('s1'), 0))).toBe('warm');
    expect(placedOn(t.allocate(req('s2', { image: 'other' }), 0))).toBe('cold');
  });

  it('never exposes one port twice on an agent', () => {
    const t = new PlacementTable();
    t.report(agent('a', { capacity: 5 }), 0);
    t.report(agent('b', { capacity: 5 }), 0);
    const first = placedOn(t.allocate(req('s1', { ports: [8080] }), 0));
    const second = placedOn(t.allocate(req('s2', { ports: [8080] }), 0));
    expect(new Set([first, second])).toEqual(new Set(['a', 'b']));
    const v = t.allocate(req('s3', { ports: [8080, 9000] }), 0);
    expect(v.status === 'exhausted' && v.message).toMatch(/already exposes one of ports 8080, 9000/);
  });

  it('only places in the sandbox’s own pool and namespace', () => {
    const t = new PlacementTable();
    t.report(agent('other-ns', { namespace: 'x' }), 0);
    expect(t.allocate(req('s1'), 0)).toEqual({
      status: 'no-agents',
      message: 'pool p has no ready agents in namespace ns',
    });
  });

  it('keeps reservations on top of reports until the agent reports the sandbox', () => {
    const t = new PlacementTable();
    t.report(agent('a', { capacity: 1 }), 0);
    expect(placedOn(t.allocate(req('s1'), 0))).toBe('a');
    // A report taken before the agent accepted s1: the reservation still counts.
    t.report(agent('a', { capacity: 1 }), 1);
    expect(placedOn(t.allocate(req('s2'), 1))).toBe('exhausted');
    // The agent now reports s1: counted once, not twice.
    t.report(agent('a', { capacity: 2, sandboxes: [{ sandboxId: 's1', exposedPorts: [] }] }), 2);
    expect(t.view()).toEqual([expect.objectContaining({ id: 'a', load: 1, reserved: 0 })]);
  });

  it('release gives the slot and ports back; a stale reservation ages out', () => {
    const t = new PlacementTable();
    t.report(agent('a', { capacity: 1 }), 0);
    t.allocate(req('s1', { ports: [80] }), 0);
    t.release('a', 's1');
    expect(placedOn(t.allocate(req('s2', { ports: [80] }), 0))).toBe('a');
    t.report(agent('a', { capacity: 1 }), RESERVATION_TTL_MS + 1);
    expect(placedOn(t.allocate(req('s3', { ports: [80] }), RESERVATION_TTL_MS + 1))).toBe('a');
  });

  it('skips excluded agents and agents marked full until their next report', () => {
    const t = new PlacementTable();
    t.report(agent('a', { capacity: 5 }), 0);
    t.report(agent('b', { capacity: 5 }), 0);
    const first = placedOn(t.allocate(req('s1', { exclude: new Set(['a']) }), 0));
    expect(first).toBe('b');
    t.markFull('b');
    expect(placedOn(t.allocate(req('s2', { exclude: new Set(['a']) }), 0))).toBe('exhausted');
    t.report(agent('b', { capacity: 5 }), 1);
    expect(placedOn(t.allocate(req('s3', { exclude: new Set(['a']) }), 1))).toBe('b');
  });

  it('forgets a removed agent', () => {
    const t = new PlacementTable();
    t.report(agent('a'), 0);
    t.remove('a');
    expect(t.allocate(req('s1'), 0).status).toBe('no-agents');
    expect(t.has('a')).toBe(false);
  });

  it('says whether a pool has any agent (scale from zero), full or not, in its own namespace', () => {
    const t = new PlacementTable();
    expect(t.hasAgents('ns', 'p')).toBe(false);
    t.report(agent('a', { capacity: 0 }), 0);
    expect(t.hasAgents('ns', 'p')).toBe(true);
    expect(t.hasAgents('other', 'p')).toBe(false);
    expect(t.hasAgents('ns', 'q')).toBe(false);
    t.remove('a');
    expect(t.hasAgents('ns', 'p')).toBe(false);
  });
});
