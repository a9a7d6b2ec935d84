/**
 * The TTL scanner, run by a Temporal Schedule (overlap SKIP replaces the original's leader-only
 * scanner): every request kind is listed, and each terminal request past its TTL is read fresh
 * and deleted with a UID precondition. A request's own workflow ends when the request is
 * terminal, so this is the one place the TTL is applied.
 */
import { log, patched, setCurrentDetails } from '@temporalio/workflow';
import { REQUEST_KIND_NAMES } from '../../api/request-kinds.js';
import { listing, requestCalls } from './activity-options.js';

/**
 * Patch: one activity per kind lists and reaps (activities/kubernetes/requests.ts
 * reapExpiredRequests), instead of a listing and a local activity per expired request.
 */
const SWEEP_PER_KIND = 'ttl-sweep-per-kind';

export async function requestTtlSweepWorkflow(): Promise<{ reaped: number; examined: number }> {
  let reaped = 0;
  let examined = 0;
  for (const kind of REQUEST_KIND_NAMES) {
    setCurrentDetails(`sweeping ${kind}`);
    if (patched(SWEEP_PER_KIND)) {
      const swept = await listing.reapExpiredRequests(kind);
      reaped += swept.reaped;
      examined += swept.examined;
      continue;
    }
    const expired = await listing.listExpiredRequests(kind);
    for (const ref of expired) {
      examined++;
      const r = await requestCalls.reapRequestIfExpired(ref);
      if (r.status === 'ok' && r.state === 'deleted') {
        reaped++;
        log.info('reaped expired request', { kind, namespace: ref.namespace, name: ref.name });
      }
    }
  }
  setCurrentDetails(`reaped ${reaped} of ${examined} expired request(s)`);
  return { reaped, examined };
}
