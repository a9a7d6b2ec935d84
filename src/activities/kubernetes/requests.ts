/**
 * Activities every request kind shares: uncached reads of the request, its status writes (the
 * request's workflow is the only writer), its ObjectKeeper, and TTL reaping.
 */
import type { KubernetesObject } from '@kubernetes/client-node';
import { ApplicationFailure, log } from '@temporalio/activity';
import { mapLimited } from '../../concurrency.js';
import type { ObjectKeeper } from '../../api/objectkeeper.js';
import { ObjectKeeperKind } from '../../api/objectkeeper.js';
import { REQUEST_KINDS, type RequestKindName } from '../../api/request-kinds.js';
import type { RequestPolicy } from '../../config.js';
import { setCondition, type Condition } from '../../domain/conditions.js';
import { followRefTo, ownedByKeeper, type KeeperIdentity } from '../../domain/objectkeeper.js';
import {
  isTerminal,
  keeperNameFor,
  outcomeCondition,
  processingCondition,
  requestExpiry,
  type ReapResult,
  type RequestOutcome,
  type RequestRef,
  type RequestView,
} from '../../domain/requests.js';
import { GONE, ok, type Found } from '../../domain/results.js';
import { requestOutcomeEvent } from '../../domain/events.js';
import { isAlreadyExists, type KubeClient } from '../../kube/client.js';
import { isRetriedActivity, type EventRecorder } from '../../kube/events.js';
import { getByUid, getObject, heartbeat, listAll, patchStatusUnlessGone } from './calls.js';
import { kubeFailure } from './errors.js';

interface RequestObject extends KubernetesObject {
  spec: unknown;
  status?: { completionTimestamp?: string; conditions?: Condition[] } & Record<string, unknown>;
}

/** The identity ownedByKeeper() needs, from a keeper identity returned by ensureRequestKeeper. */
export function keeperObject(keeper: KeeperIdentity) {
  return { apiVersion: ObjectKeeperKind.apiVersion, kind: ObjectKeeperKind.kind, metadata: keeper };
}

/** The request `ref` names as the apiserver has it now; undefined when deleted or recreated. */
export function readRequestObject<T extends KubernetesObject = RequestObject>(
  kube: KubeClient,
  ref: RequestRef,
): Promise<T | undefined> {
  const { apiVersion, kind, namespace, name, uid } = ref;
  return getByUid<T>(kube, { apiVersion, kind, namespace, name }, uid);
}

/**
 * Gets or creates the ObjectKeeper that follows `request` (read fresh by the caller: the UID
 * barrier) and returns its apiserver-given identity. An existing keeper must follow exactly this
 * request; one being deleted is retried.
 */
export async function ensureKeeperFollowing(
  kube: KubeClient,
  ref: RequestRef,
  request: KubernetesObject,
): Promise<KeeperIdentity> {
  const name = keeperNameFor(ref);
  const keeperRef = { apiVersion: ObjectKeeperKind.apiVersion, kind: ObjectKeeperKind.kind, name };
  let keeper: ObjectKeeper | undefined;
  try {
    keeper = await kube.create<ObjectKeeper>({
      apiVersion: 'deckhouse.io/v1alpha1',
      kind: 'ObjectKeeper',
      metadata: { name, labels: { 'app.kubernetes.io/managed-by': 'durable-operators' } },
      spec: { mode: 'FollowObject', followObjectRef: followRefTo(request) },
    });
  } catch (err) {
    if (!isAlreadyExists(err)) throw kubeFailure(err, `create ObjectKeeper ${name}`);
    keeper = await getObject<ObjectKeeper>(kube, keeperRef);
    // Deleted between our create and get (e.g. it followed a previous request): retry.
    if (!keeper) throw ApplicationFailure.retryable(`ObjectKeeper ${name} vanished after AlreadyExists`);
  }
  const follows = keeper.spec.followObjectRef;
  if (keeper.spec.mode !== 'FollowObject' || follows?.uid !== ref.uid || follows.name !== ref.name) {
    throw ApplicationFailure.nonRetryable(
      `ObjectKeeper ${name} exists but follows ${follows?.kind ?? '-'} ${follows?.name ?? '-'} (uid ${follows?.uid ?? '-'}) ` +
        `in mode ${keeper.spec.mode}, not ${ref.kind} ${ref.namespace}/${ref.name} (uid ${ref.uid})`,
      'KeeperConflict',
    );
  }
  if (keeper.metadata?.deletionTimestamp) {
    throw ApplicationFailure.retryable(`ObjectKeeper ${name} is being deleted`, 'KeeperDeleting');
  }
  const owner = ownedByKeeper(keeper); // throws when the UID is somehow missing
  return { name: owner.name, uid: owner.uid };
}

/** Requests a sweep reaps at once: each a read and a delete. */
const REAP_CONCURRENCY = 8;

export function createRequestActivities(kube: KubeClient, policy: RequestPolicy, events: EventRecorder) {
  const what = (ref: RequestRef) => `${ref.kind} ${ref.namespace}/${ref.name}`;
  const read = (ref: RequestRef) => readRequestObject(kube, ref);
  const patchStatus = (ref: RequestRef, status: Record<string, unknown>) =>
    patchStatusUnlessGone(
      kube,
      {
        apiVersion: ref.apiVersion,
        kind: ref.kind,
        namespace: ref.namespace,
        name: ref.name,
        plural: REQUEST_KINDS[ref.kind].definition.plural,
      },
      status,
      ref.uid,
    );

  /**
   * Deletes a terminal request whose TTL (counted from completionTimestamp, controller-wide,
   * read now so a changed setting applies) has expired. Reads the request fresh, skips one
   * already being deleted, never reaps one without completionTimestamp, and deletes with a UID
   * precondition so a recreated request is never hit.
   */
  async function reapRequestIfExpired(ref: RequestRef): Promise<ReapResult> {
    const obj = await read(ref);
    if (!obj) return GONE;
    if (obj.metadata?.deletionTimestamp) return ok({ state: 'deleting' });
    if (!isTerminal(obj.status?.conditions)) return ok({ state: 'not-terminal' });
    const expiresAt = requestExpiry(obj.status?.completionTimestamp, policy.ttlMs);
    if (expiresAt === undefined) {
      return ok({
        state: 'never',
        why: policy.ttlMs <= 0 ? 'TTL disabled (DO_REQUEST_TTL=0)' : 'no completionTimestamp',
      });
    }
    if (expiresAt > Date.now()) return ok({ state: 'waiting', expiresAt: new Date(expiresAt).toISOString() });
    try {
      const deleted = await kube.delete(ref, { uid: ref.uid, propagationPolicy: 'Background' });
      return deleted ? ok({ state: 'deleted' }) : GONE;
    } catch (err) {
      throw kubeFailure(err, `delete ${what(ref)}`);
    }
  }

  /** Terminal requests of a kind whose TTL has expired, for the sweep (all pages of the list). */
  async function listExpiredRequests(kind: RequestKindName): Promise<RequestRef[]> {
    const def = REQUEST_KINDS[kind].definition;
    const out: RequestRef[] = [];
    const now = Date.now();
    for (const obj of await listAll<RequestObject>(kube, def.apiVersion, def.kind)) {
      if (obj.metadata?.deletionTimestamp || !isTerminal(obj.status?.conditions)) continue;
      const expiresAt = requestExpiry(obj.status?.completionTimestamp, policy.ttlMs);
      if (expiresAt === undefined || expiresAt > now) continue;
      const { namespace, name, uid } = obj.metadata as { namespace: string; name: string; uid: string };
      out.push({ apiVersion: def.apiVersion, kind, namespace, name, uid });
    }
    return out;
  }

  return {
    /** The controller-wide policy, recorded once in each workflow's history. */
    async requestPolicy(): Promise<Pick<RequestPolicy, 'waitTimeoutMs' | 'snapshotMode'>> {
      return { waitTimeoutMs: policy.waitTimeoutMs, snapshotMode: policy.snapshotMode };
    },

    async readRequest(ref: RequestRef): Promise<RequestView> {
      const obj = await read(ref);
      if (!obj) return GONE;
      return ok({
        deleting: Boolean(obj.metadata?.deletionTimestamp),
        terminal: isTerminal(obj.status?.conditions),
        spec: obj.spec,
        requestStatus: obj.status ?? {},
      });
    },

    /**
     * The first step of a request: one fresh read and, unless the request is gone, being deleted
     * or already terminal, Ready=False/Processing with `message` — what readRequest and the first
     * markRequestProcessing did in two local activities and three apiserver calls.
     */
    async beginRequest(input: { ref: RequestRef; message: string }): Promise<RequestView> {
      const obj = await read(input.ref);
      if (!obj) return GONE;
      const view = {
        deleting: Boolean(obj.metadata?.deletionTimestamp),
        terminal: isTerminal(obj.status?.conditions),
        spec: obj.spec,
        requestStatus: obj.status ?? {},
      };
      if (view.deleting || view.terminal) return ok(view);
      const conditions = setCondition(obj.status?.conditions, processingCondition(input.message), new Date());
      const patched = await patchStatus(input.ref, { conditions });
      return patched.status === 'ok' ? ok(view) : patched;
    },

    /** Ready=False/Processing with a progress message. Never touches a terminal request. */
    async markRequestProcessing(input: { ref: RequestRef; message: string }): Promise<Found<{ terminal: boolean }>> {
      const obj = await read(input.ref);
      if (!obj) return GONE;
      if (isTerminal(obj.status?.conditions)) return ok({ terminal: true });
      const conditions = setCondition(obj.status?.conditions, processingCondition(input.message), new Date());
      const patched = await patchStatus(input.ref, { conditions });
      return patched.status === 'ok' ? ok({ terminal: false }) : patched;
    },

    /**
     * The one finalization of every request: the terminal Ready condition, completionTimestamp
     * (written once), and the kind's result fields, in one status write. A request that is already
     * terminal is left exactly as it is.
     */
    async finalizeRequest(input: {
      ref: RequestRef;
      outcome: RequestOutcome;
      fields?: Record<string, unknown>;
    }): Promise<Found<{ alreadyTerminal: boolean }>> {
      const obj = await read(input.ref);
      if (!obj) return GONE;
      const { apiVersion, kind, namespace, name, uid } = input.ref;
      const recordOutcome = () =>
        events.record({ apiVersion, kind, namespace, name, uid }, requestOutcomeEvent(input.outcome));
      if (isTerminal(obj.status?.conditions)) {
        // A retry may find its own write of the outcome, made before an Event could follow it.
        if (isRetriedActivity()) await recordOutcome();
        return ok({ alreadyTerminal: true });
      }
      const now = new Date();
      const conditions = setCondition(obj.status?.conditions, outcomeCondition(input.outcome), now);
      const completionTimestamp = obj.status?.completionTimestamp ?? now.toISOString().replace(/\.\d+Z$/, 'Z');
      const patched = await patchStatus(input.ref, { ...input.fields, conditions, completionTimestamp });
      if (patched.status !== 'ok') return patched;
      await recordOutcome();
      return ok({ alreadyTerminal: false });
    },

    /**
     * Gets or creates the request's ObjectKeeper (FollowObject, no TTL). The UID barrier: the
     * keeper's UID comes from the create response or a fresh GET, and the request's own UID from a
     * fresh GET; an existing keeper must follow exactly this request.
     */
    async ensureRequestKeeper(ref: RequestRef): Promise<Found<{ keeper: KeeperIdentity }>> {
      const request = await read(ref);
      if (!request) return GONE;
      return ok({ keeper: await ensureKeeperFollowing(kube, ref, request) });
    },

    reapRequestIfExpired,
    listExpiredRequests,

    /**
     * The sweep of one request kind in one activity: its expired requests listed, each reaped as
     * reapRequestIfExpired does (read fresh, UID precondition), a few at a time. One local
     * activity per request made a sweep of many one long workflow task with a marker each — most
     * of a request's reaping CPU (issue 35). A retry finds the ones already deleted gone.
     */
    async reapExpiredRequests(kind: RequestKindName): Promise<{ examined: number; reaped: number }> {
      const expired = await listExpiredRequests(kind);
      let reaped = 0;
      await mapLimited(expired, REAP_CONCURRENCY, async (ref) => {
        const r = await reapRequestIfExpired(ref);
        heartbeat();
        if (r.status !== 'ok' || r.state !== 'deleted') return;
        reaped++;
        log.info('reaped expired request', { kind, namespace: ref.namespace, name: ref.name });
      });
      return { examined: expired.length, reaped };
    },
  };
}

export type RequestActivities = ReturnType<typeof createRequestActivities>;
