import { expect, it } from 'vitest';
import { setCondition } from '../../src/domain/conditions.js';

const t1 = new Date('2026-01-01T00:00:00Z');
const t2 = new Date('2026-01-01T00:05:00Z');

it('moves lastTransitionTime only when the status changes', () => {
  const a = setCondition(undefined, { type: 'Active', status: 'True', reason: 'Tracking', message: 'x' }, t1);
  const b = setCondition(a, { type: 'Active', status: 'True', reason: 'WaitingTTL', message: 'y' }, t2);
  expect(b).toHaveLength(1);
  expect(b[0]).toMatchObject({ reason: 'WaitingTTL', lastTransitionTime: t1.toISOString() });
  const c = setCondition(b, { type: 'Active', status: 'False', reason: 'Gone', message: 'z' }, t2);
  expect(c[0]!.lastTransitionTime).toBe(t2.toISOString());
});

it('keeps other condition types', () => {
  const a = setCondition(undefined, { type: 'A', status: 'True', reason: 'R', message: '' }, t1);
  const b = setCondition(a, { type: 'B', status: 'False', reason: 'R', message: '' }, t1);
  expect(b.map((c) => c.type)).toEqual(['A', 'B']);
});
