/**
 * The TTL backstop, run by a Temporal Schedule (overlap SKIP replaces the original's leader-only
 * scanner): every request kind is listed, and each terminal request past its TTL is read fresh
 * and deleted with a UID precondition. Each request's own workflow normally reaps it on time;
 * this catches requests whose workflow is gone (terminated, retention expired, older versions).
 */
import { log, setCurrentDetails } from '@temporalio/workflow';
import type { RequestKindName } from '../../domain/requests.js';
import { listingActivities, requestActivities } from './lifecycle.js';

const KINDS: RequestKindName[] = ['ManifestCaptureRequest', 'VolumeCaptureRequest', 'VolumeRestoreRequest'];

export async function requestTtlSweepWorkflow(): Promise<{ reaped: number; examined: number }> {
  let reaped = 0;
  let examined = 0;
  for (const kind of KINDS) {
    setCurrentDetails(`sweeping ${kind}`);
    const expired = await listingActivities.listExpiredRequests(kind);
    for (const ref of expired) {
      examined++;
      const r = await requestActivities.reapRequestIfExpired(ref);
      if (r.state === 'deleted') {
        reaped++;
        log.info('reaped expired request', { kind, namespace: ref.namespace, name: ref.name });
      }
    }
  }
  setCurrentDetails(`reaped ${reaped} of ${examined} expired request(s)`);
  return { reaped, examined };
}
