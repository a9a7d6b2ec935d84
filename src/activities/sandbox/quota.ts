/**
 * The tenant quota's side of a sandbox's end: its slot given back to the tenant's quota workflow.
 * A local activity of the run's last task, so the run ends in that task (a signal from the
 * workflow itself would be awaited in a task of its own, and one not awaited is dropped by
 * Temporal once the run has closed).
 */
import type { ReleaseSlot } from '../../workflows/sandbox/contract.js';

export interface QuotaReleaseRequest extends ReleaseSlot {
  tenant: string;
}

export function createSandboxQuotaActivities(
  /** Signals the tenant's quota workflow; `not-running` when the tenant has none (no limit: nothing was counted). */
  signalQuota: (req: QuotaReleaseRequest) => Promise<'sent' | 'not-running' | 'dropped'>,
) {
  return {
    async releaseQuotaSlot(req: QuotaReleaseRequest): Promise<'released' | 'no-quota'> {
      const sent = await signalQuota(req);
      if (sent === 'dropped')
        throw new Error(`the release of slot ${req.slot} to tenant ${req.tenant}'s quota was refused by Temporal`);
      return sent === 'sent' ? 'released' : 'no-quota';
    },
  };
}

export type SandboxQuotaActivities = ReturnType<typeof createSandboxQuotaActivities>;
