/** The sandbox allocation annotation: the original's JSON shape, and malformed values told apart from absent ones. */
import { describe, expect, it } from 'vitest';
import { ALLOCATION_ANNOTATION, formatAllocation, parseAllocation } from '../../src/api/sandbox.js';

describe('sandbox.fast.io/allocation', () => {
  const a = { assignedPod: 'agent-0', assignedNode: 'node-1', allocatedAt: '2026-01-30T10:00:00.123456789Z' };

  it('is written as the original writes it and read back', () => {
    const value = formatAllocation(a);
    expect(value).toBe(
      '{"assignedPod":"agent-0","assignedNode":"node-1","allocatedAt":"2026-01-30T10:00:00.123456789Z"}',
    );
    expect(parseAllocation({ [ALLOCATION_ANNOTATION]: value })).toEqual(a);
  });

  it('is absent when there is no annotation or it is empty', () => {
    expect(parseAllocation(undefined)).toBeUndefined();
    expect(parseAllocation({ other: 'x' })).toBeUndefined();
    expect(parseAllocation({ [ALLOCATION_ANNOTATION]: '' })).toBeUndefined();
  });

  it.each([
    ['{not json', 'is not JSON'],
    ['[1]', 'is not a JSON object'],
    ['"agent-0"', 'is not a JSON object'],
    ['{"assignedNode":"n"}', 'assignedPod is missing'],
    ['{"assignedPod":7}', 'assignedPod is not a string'],
  ])('%s is malformed: %s', (value, message) => {
    const parsed = parseAllocation({ [ALLOCATION_ANNOTATION]: value });
    expect(parsed).toBeInstanceOf(Error);
    expect((parsed as Error).message).toContain(message);
  });
});
