/**
 * Kubernetes Events (`events.k8s.io/v1`) for the transitions a user looks for with
 * `kubectl describe` or `kubectl events`. Activities record them after the write that made the
 * transition; a pure function in src/domain/events.ts decides which transition, if any, a write is.
 *
 * Deduplication, as client-go's recorder does it but safe for retried activities:
 * - one Event per (regarding object, reason, controller), under a deterministic name, so a repeat
 *   updates the same Event's `series` (count, lastObservedTime) instead of adding another;
 * - the occurrence (the activity's run, ID and type) is kept in an annotation, so a retry of the
 *   activity that already recorded it changes nothing, while a later activity counts as a repeat.
 *
 * Events are best effort, as everywhere in Kubernetes: a failed record is logged, never fails the
 * operation that made the transition.
 */
import { EventsV1Api, PatchStrategy, V1MicroTime, setHeaderOptions, type EventsV1Event } from '@kubernetes/client-node';
import { asyncLocalStorage } from '@temporalio/activity';
import { createHash, randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import type { EventSpec } from '../domain/events.js';
import { logger } from '../log.js';
import { isAlreadyExists, statusCode, type KubeClient } from './client.js';

/** The reporting controller of each role (`reportingController` of its Events). */
export const REPORTING_CONTROLLERS = {
  worker: 'durable-operators.io/worker',
  fastpath: 'durable-operators.io/fastpath',
} as const;

export type ReportingRole = keyof typeof REPORTING_CONTROLLERS;

/** Where the occurrence that last counted in an Event's series is kept. */
export const OCCURRENCE_ANNOTATION = 'durable-operators.io/occurrence';

/** The object an Event is about (`regarding`). */
export interface Regarding {
  apiVersion: string;
  kind: string;
  namespace?: string;
  name: string;
  uid?: string;
}

/** The Event's name: stable for (object, reason, controller), so repeats find it. */
export function eventName(regarding: Regarding, reason: string, controller: string): string {
  const h = createHash('sha256');
  for (const part of [controller, regarding.apiVersion, regarding.kind, regarding.namespace ?? '', regarding.name])
    h.update(part).update('\0');
  h.update(regarding.uid ?? '')
    .update('\0')
    .update(reason);
  return `${regarding.name.slice(0, 236)}.${h.digest('hex').slice(0, 16)}`;
}

/**
 * What makes this occurrence one: the activity's workflow run, activity ID and type (the same
 * for every attempt of it). Outside an activity every call is its own occurrence.
 */
function currentOccurrence(): string {
  const info = asyncLocalStorage.getStore()?.info;
  if (!info) return randomUUID();
  return createHash('sha256')
    .update(`${info.workflowExecution?.runId ?? ''}/${info.activityId}/${info.activityType}`)
    .digest('hex')
    .slice(0, 32);
}

/** Whether the current activity is a retry (it may have made the transition before failing). */
export function isRetriedActivity(): boolean {
  return (asyncLocalStorage.getStore()?.info.attempt ?? 1) > 1;
}

const log = logger.child({ component: 'events' });

export class EventRecorder {
  private readonly api: EventsV1Api;
  readonly controller: string;

  constructor(
    kube: KubeClient,
    role: ReportingRole,
    /** `reportingInstance`: the Pod (its hostname) that records. */
    readonly instance = hostname().slice(0, 128),
  ) {
    this.api = kube.kc.makeApiClient(EventsV1Api);
    this.controller = REPORTING_CONTROLLERS[role];
  }

  /**
   * Records `event` about `regarding`, once per occurrence (by default the calling activity, all
   * its attempts); never throws.
   */
  async record(
    regarding: Regarding,
    event: EventSpec | undefined,
    occurrence: string = currentOccurrence(),
  ): Promise<void> {
    if (!event) return;
    try {
      await this.upsert(regarding, event, occurrence);
    } catch (err) {
      log.warn({ err, regarding, reason: event.reason }, 'Event not recorded');
    }
  }

  private async upsert(regarding: Regarding, event: EventSpec, occurrence: string): Promise<void> {
    // A cluster-scoped object's Events live in `default`, as the apiserver requires.
    const namespace = regarding.namespace || 'default';
    const name = eventName(regarding, event.reason, this.controller);
    const body: EventsV1Event = {
      apiVersion: 'events.k8s.io/v1',
      kind: 'Event',
      metadata: { name, namespace, annotations: { [OCCURRENCE_ANNOTATION]: occurrence } },
      eventTime: new V1MicroTime(),
      reportingController: this.controller,
      reportingInstance: this.instance,
      action: event.action,
      reason: event.reason,
      type: event.type,
      note: truncate(event.note, 1024),
      regarding: {
        apiVersion: regarding.apiVersion,
        kind: regarding.kind,
        name: regarding.name,
        ...(regarding.namespace ? { namespace: regarding.namespace } : {}),
        ...(regarding.uid ? { uid: regarding.uid } : {}),
      },
    };
    try {
      await this.api.createNamespacedEvent({ namespace, body });
      return;
    } catch (err) {
      if (!isAlreadyExists(err)) throw err;
    }
    // A repeat (or a retry of the occurrence that wrote it): count it once in the series.
    for (let attempt = 0; ; attempt++) {
      const existing = await this.api.readNamespacedEvent({ name, namespace });
      if (existing.metadata?.annotations?.[OCCURRENCE_ANNOTATION] === occurrence) return;
      const patch = {
        // The resourceVersion makes two repeats at once each count (a 409 reads again).
        metadata: {
          resourceVersion: existing.metadata?.resourceVersion,
          annotations: { [OCCURRENCE_ANNOTATION]: occurrence },
        },
        series: { count: (existing.series?.count ?? 1) + 1, lastObservedTime: new V1MicroTime() },
      };
      try {
        await this.api.patchNamespacedEvent(
          { name, namespace, body: patch },
          setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
        );
        return;
      } catch (err) {
        if (statusCode(err) !== 409 || attempt >= 3) throw err;
      }
    }
  }
}

function truncate(s: string, max: number): string {
  return Buffer.byteLength(s) <= max
    ? s
    : `${Buffer.from(s)
        .subarray(0, max - 3)
        .toString('utf8')
        .replace(/\uFFFD$/, '')}...`;
}
