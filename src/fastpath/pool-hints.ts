/**
 * The fast path's `poolChanged` hints: whatever one poll of the agents saw change in a pool
 * (sandboxes appearing on or leaving its agents, agents becoming usable or going) is one hint,
 * sent once the poll's callbacks are done — the pool's workflow reads everything again anyway, so
 * a hint per change only lengthens its history and races its continue-as-new.
 */
import { poolWorkflowId } from '../domain/sandbox-pool.js';

export class PoolHints {
  /** Workflow ID → the changes seen for it since the last flush. */
  private readonly pending = new Map<string, string[]>();

  constructor(private readonly send: (workflowId: string, event: string) => Promise<unknown>) {}

  /** Records a change; the pool's hint leaves after the current tick, with every change of it. */
  add(namespace: string, pool: string, change: string): void {
    const workflowId = poolWorkflowId(namespace, pool);
    const changes = this.pending.get(workflowId);
    if (changes) {
      changes.push(change);
      return;
    }
    this.pending.set(workflowId, [change]);
    if (this.pending.size === 1) setImmediate(() => this.flush());
  }

  private flush(): void {
    for (const [workflowId, changes] of this.pending) {
      const more = changes.length > 1 ? ` (and ${changes.length - 1} more)` : '';
      void this.send(workflowId, `${changes[0]}${more}`);
    }
    this.pending.clear();
  }
}
