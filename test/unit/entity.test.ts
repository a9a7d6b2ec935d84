/** The entity-workflow kit's rule for continue-as-new (src/domain/entity.ts). */
import { describe, expect, it } from 'vitest';
import { HARD_HISTORY_BOUND, continueAsNewDue } from '../../src/domain/entity.js';

describe('continueAsNewDue', () => {
  it('keeps going until Temporal suggests it or the entity’s own bound is reached', () => {
    expect(continueAsNewDue({ suggested: false, historyLength: 3_000, quiet: true })).toBe('no');
    expect(continueAsNewDue({ suggested: false, historyLength: 3_000, quiet: true, bound: 3_000 })).toBe('now');
  });

  it('continues after a quiet wait; after a wait a message interrupted, later', () => {
    expect(continueAsNewDue({ suggested: true, historyLength: 4_100, quiet: true })).toBe('now');
    expect(continueAsNewDue({ suggested: true, historyLength: 4_100, quiet: false })).toBe('later');
  });

  it('continues however busy once the history passes the hard bound', () => {
    expect(continueAsNewDue({ suggested: true, historyLength: HARD_HISTORY_BOUND, quiet: false })).toBe('now');
  });
});
