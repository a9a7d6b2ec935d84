/** The pure quota rules: where a tenant may create, and the slot book its quota workflow keeps. */
import { describe, expect, it } from 'vitest';
import {
  acquireSlot,
  quotaMessage,
  quotaWorkflowId,
  reconcileSlots,
  releaseSlot,
  sandboxPlacementRefusal,
  slotKey,
  type SlotBook,
} from '../../src/domain/sandbox-quota.js';

describe('sandboxPlacementRefusal', () => {
  it('allows anything without settings or with a field left out', () => {
    expect(sandboxPlacementRefusal('1', undefined, 'ns', 'p')).toBeUndefined();
    expect(sandboxPlacementRefusal('1', { maxSandboxes: 1 }, 'ns', 'p')).toBeUndefined();
    expect(sandboxPlacementRefusal('1', { namespaces: ['ns'], pools: ['p'] }, 'ns', 'p')).toBeUndefined();
  });

  it('names the namespace or pool not allowed', () => {
    expect(sandboxPlacementRefusal('4001', { namespaces: ['a', 'b'] }, 'c', 'p')).toBe(
      'tenant 4001 may not create sandboxes in namespace c (allowed: a, b)',
    );
    expect(sandboxPlacementRefusal('4001', { pools: ['p'] }, 'a', 'gpu')).toBe(
      'tenant 4001 may not use SandboxPool gpu (allowed: p)',
    );
  });
});

describe('the slot book', () => {
  it('grants up to the limit, then refuses with the quota in the message', () => {
    const book: SlotBook = {};
    expect(acquireSlot(book, '4001', 'ns/a', 2, 10)).toEqual({ granted: true, count: 1, limit: 2 });
    expect(acquireSlot(book, '4001', 'ns/b', 2, 11)).toEqual({ granted: true, count: 2, limit: 2 });
    expect(acquireSlot(book, '4001', 'ns/c', 2, 12)).toEqual({
      granted: false,
      count: 2,
      limit: 2,
      message: 'tenant 4001 has 2 of 2 sandboxes',
    });
    expect(quotaMessage('4001', 3, 3)).toBe('tenant 4001 has 3 of 3 sandboxes');
  });

  it('a name asked again holds its one slot and keeps its first grant time', () => {
    const book: SlotBook = {};
    acquireSlot(book, 't', 'ns/a', 1, 10);
    expect(acquireSlot(book, 't', 'ns/a', 1, 20)).toEqual({ granted: true, count: 1, limit: 1 });
    expect(book).toEqual({ 'ns/a': 10 });
  });

  it('a limit of 0 grants nothing; a lowered limit refuses new names but keeps what is held', () => {
    expect(acquireSlot({}, 't', 'ns/a', 0, 1)).toMatchObject({ granted: false, count: 0, limit: 0 });
    const book: SlotBook = { 'ns/a': 1, 'ns/b': 1 };
    expect(acquireSlot(book, 't', 'ns/c', 1, 2)).toMatchObject({ granted: false, count: 2 });
    expect(acquireSlot(book, 't', 'ns/a', 1, 2)).toMatchObject({ granted: true });
  });

  it('a release drops a slot granted before the releasing run started, not a newer incarnation’s', () => {
    const book: SlotBook = { 'ns/a': 100 };
    expect(releaseSlot(book, 'ns/a', 50)).toBe(false); // an older run of the name finishing its deletion
    expect(book).toEqual({ 'ns/a': 100 });
    expect(releaseSlot(book, 'ns/a', 150)).toBe(true);
    expect(book).toEqual({});
    expect(releaseSlot(book, 'ns/x', 150)).toBe(false);
  });

  it('reconciling drops old grants without a record, keeps young ones, counts unknown records', () => {
    const book: SlotBook = { 'ns/leaked': 0, 'ns/young': 950, 'ns/live': 0 };
    const changes = reconcileSlots(book, ['ns/live', 'ns/kubectl', 'ns/released'], 1000, 100, new Set(['ns/released']));
    expect(changes).toEqual({ dropped: ['ns/leaked'], added: ['ns/kubectl'] });
    expect(book).toEqual({ 'ns/young': 950, 'ns/live': 0, 'ns/kubectl': 0 });
    // A counted record's slot goes with its run's release, whenever that run started.
    expect(releaseSlot(book, 'ns/kubectl', 1)).toBe(true);
  });

  it('names', () => {
    expect(slotKey('ns', 'a')).toBe('ns/a');
    expect(quotaWorkflowId('4001')).toBe('sandbox-quota/4001');
  });
});
