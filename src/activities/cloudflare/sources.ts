/**
 * Activities of a source's workflow (DeviceSettingsPolicy, ZoneRuleset, TransformRule,
 * RedirectRule): read the source fresh, manage its finalizer, write its status, resolve its
 * credentials, and register it with — or remove it from — its targets' sync workflows
 * (signal-with-start, so the first source of a target starts that target's workflow).
 */
import { log } from '@temporalio/activity';
import { ApplicationFailure } from '@temporalio/common';
import { WorkflowNotFoundError, type Client } from '@temporalio/client';
import type { KubernetesObject } from '@kubernetes/client-node';
import {
  CLOUDFLARE_DELETION_POLICY_ANNOTATION,
  CLOUDFLARE_SOURCE_FINALIZER,
  ORIGINAL_FINALIZERS,
  CloudflareSyncStateKind,
  type CloudflareSyncState,
} from '../../api/cloudflare.js';
import { type CloudflareConfig, cloudflareTaskQueue } from '../../config.js';
import type { CredentialsUsePolicy } from '../../domain/cloudflare/credentials-use.js';
import { legacyCredentialsRefusal, type LegacyCredentials } from '../../domain/cloudflare/legacy-credentials.js';
import { type SourceRef, refString } from '../../domain/cloudflare/markers.js';
import { isSourceKind, kindDefinition, type SourceKind, type SourceSpec } from '../../domain/cloudflare/sources.js';
import {
  syncStateName,
  syncWorkflowId,
  targetKey,
  targetObjectName,
  type SyncTarget,
} from '../../domain/cloudflare/targets.js';
import { GONE, failedWith, ok, type Found, type Outcome } from '../../domain/results.js';
import { CloudflareAccount, CloudflareTarget, K8sKind } from '../../temporal/search-attributes.js';
import type { KubeClient } from '../../kube/client.js';
import { apiMessage, statusCode } from '../../kube/client.js';
import { isRetriedActivity, type EventRecorder } from '../../kube/events.js';
import { CLUSTER_ID_ANNOTATION, clusterIdFor, defaultClusterId } from '../../kube/cluster-identity.js';
import type { Condition } from '../../domain/conditions.js';
import { sourceReadyEvent } from '../../domain/events.js';
import {
  cloudflareSyncWorkflow,
  registerSourceSignal,
  unregisterSourceSignal,
  type SourceRegistration,
  type SyncSettings,
  type SyncWorkflowInput,
} from '../../workflows/cloudflare/contract.js';
import { getObject, patchStatusUnlessGone } from '../kubernetes/calls.js';
import { kubeFailure } from '../kubernetes/errors.js';
import { credentialsUsePolicy, findCredentials } from './credentials.js';
import { expandSource, viewDigest, withoutSecrets, workflowView } from './expand.js';

export interface SourceSnapshot {
  uid: string;
  generation: number;
  createdAt: string;
  deleting: boolean;
  finalized: boolean;
  /** The spec with what it refers to (./expand.ts), slimmed for the workflow's history. */
  spec: SourceSpec;
  /** Changes when the spec or anything it refers to changes (a Service, an Ingress of the class…). */
  viewDigest: string;
  /** Deletion policy Orphan: its items stay in Cloudflare when it is deleted (set only then). */
  orphan?: true;
}

function objectRef(ref: SourceRef) {
  if (!isSourceKind(ref.kind)) throw ApplicationFailure.nonRetryable(`not a Cloudflare source kind: ${ref.kind}`);
  const def = kindDefinition(ref.kind);
  return { apiVersion: def.apiVersion, kind: def.kind, plural: def.plural, namespace: ref.namespace, name: ref.name };
}

export interface CloudflareSourceDeps {
  kube: KubeClient;
  temporal: Client;
  taskQueue: string;
  config: CloudflareConfig;
  events: EventRecorder;
}

export function createCloudflareSourceActivities({ kube, temporal, taskQueue, config, events }: CloudflareSourceDeps) {
  /** The id derived from this cluster's kube-system namespace (read once). */
  let derivedId: Promise<string> | undefined;
  function derivedClusterId(): Promise<string> {
    derivedId ??= defaultClusterId(kube).catch((err: unknown) => {
      derivedId = undefined; // asked again by the retry
      throw kubeFailure(err, 'read the kube-system namespace (the default cluster id)');
    });
    return derivedId;
  }
  /** Each target's cluster id once known (a SyncState's record does not change: it is written with it). */
  const targetClusterIds = new Map<string, string>();
  /**
   * The cluster id a target's items are marked with: DO_CLUSTER_ID, else the one its SyncState
   * records (a restore keeps what it marked ours), else the derived one.
   */
  async function clusterIdOf(t: SyncTarget, state?: CloudflareSyncState | null): Promise<string> {
    const name = syncStateName(t);
    const known = targetClusterIds.get(name);
    if (known) return known;
    const recorded = (
      state === undefined
        ? await getObject<CloudflareSyncState>(kube, {
            apiVersion: CloudflareSyncStateKind.apiVersion,
            kind: CloudflareSyncStateKind.kind,
            name,
          })
        : state
    )?.metadata?.annotations?.[CLUSTER_ID_ANNOTATION];
    const { clusterId, conflict } = await clusterIdFor(config.clusterId, recorded, derivedClusterId);
    if (conflict)
      log.warn(
        `CloudflareSyncState ${name} was written with cluster id ${conflict}, DO_CLUSTER_ID is ${clusterId}: ` +
          `the items marked ${conflict} are another cluster's to this one (set DO_CLUSTER_ID=${conflict} if they are ours)`,
      );
    targetClusterIds.set(name, clusterId);
    return clusterId;
  }

  async function settingsFor(t: SyncTarget, state?: CloudflareSyncState | null): Promise<SyncSettings> {
    const { accountId } = t;
    return {
      clusterId: await clusterIdOf(t, state),
      adoptLegacyMarkers: config.adoptLegacyMarkers,
      debounceMs: config.debounceMs,
      maxDebounceMs: config.maxDebounceMs,
      observeIntervalMs: config.observeIntervalMs,
      driftPolicy: config.driftPolicy,
      cloudflareTaskQueue: cloudflareTaskQueue(taskQueue, accountId),
    };
  }

  /** How a target's sync workflow is started (by a registration, or for a removal). */
  async function syncWorkflowStart(
    t: SyncTarget,
    input: Partial<SyncWorkflowInput>,
    state?: CloudflareSyncState | null,
  ) {
    const settings = await settingsFor(t, state);
    return {
      workflowId: syncWorkflowId(t),
      taskQueue,
      args: [{ target: t, settings, ...input }] as [SyncWorkflowInput],
      typedSearchAttributes: [
        { key: K8sKind, value: 'CloudflareSyncState' },
        { key: CloudflareTarget, value: [targetKey(t)] },
        { key: CloudflareAccount, value: t.accountId },
      ],
      staticSummary: `Cloudflare ${targetKey(t)}`,
      staticDetails: `Aggregates every source of ${targetKey(t)} into one ${targetObjectName(t)} and records it on CloudflareSyncState ${syncStateName(t)}.`,
    };
  }

  return {
    async readCloudflareSource(ref: SourceRef): Promise<Found<SourceSnapshot>> {
      const obj = await getObject<KubernetesObject & { spec: SourceSpec }>(kube, objectRef(ref));
      const m = obj?.metadata as
        | {
            uid?: string;
            generation?: number;
            creationTimestamp?: string | Date;
            deletionTimestamp?: unknown;
            finalizers?: string[];
            annotations?: Record<string, string>;
          }
        | undefined;
      if (!obj || !m?.uid) return GONE;
      const kind = ref.kind as SourceKind;
      const view = await expandSource(kube, kind, obj);
      return ok({
        uid: m.uid,
        generation: m.generation ?? 0,
        createdAt: m.creationTimestamp ? new Date(m.creationTimestamp).toISOString() : '',
        deleting: !!m.deletionTimestamp,
        // An original's finalizer holds the deletion up like ours (released with it).
        finalized: (m.finalizers ?? []).some(
          (f) => f === CLOUDFLARE_SOURCE_FINALIZER || ORIGINAL_FINALIZERS.includes(f),
        ),
        spec: workflowView(kind, view),
        viewDigest: viewDigest(withoutSecrets(kind, view)),
        ...(m.annotations?.[CLOUDFLARE_DELETION_POLICY_ANNOTATION]?.toLowerCase() === 'orphan'
          ? { orphan: true as const }
          : {}),
      });
    },

    /** Adds or removes the source's finalizer, keeping everyone else's; pinned to the UID. */
    async setCloudflareSourceFinalizer(req: { ref: SourceRef; uid: string; present: boolean }): Promise<Found> {
      const r = objectRef(req.ref);
      const obj = await getObject<{ metadata?: { uid?: string; finalizers?: string[] } }>(kube, r);
      if (!obj || obj.metadata?.uid !== req.uid) return GONE;
      const current = obj.metadata.finalizers ?? [];
      // Released together with ours: an original operator's finalizer on a migrated object.
      const held = (f: string) =>
        f === CLOUDFLARE_SOURCE_FINALIZER || (!req.present && ORIGINAL_FINALIZERS.includes(f));
      if (current.some(held) === req.present) return ok();
      const finalizers = req.present ? [...current, CLOUDFLARE_SOURCE_FINALIZER] : current.filter((f) => !held(f));
      try {
        // The full list with the resourceVersion: a concurrent change of the list is a conflict, retried.
        await kube.mergePatch(
          r,
          { metadata: { finalizers, resourceVersion: (obj.metadata as { resourceVersion?: string }).resourceVersion } },
          { uid: req.uid },
        );
        return ok();
      } catch (err) {
        const code = statusCode(err);
        if (code === 404 || (code === 409 && !apiMessage(err).includes('the object has been modified'))) return GONE;
        throw kubeFailure(err, `finalizer of ${refString(req.ref)}`);
      }
    },

    /** Merge patch of the source's status (its Ready condition, the SyncStates it feeds…). */
    async writeCloudflareSourceStatus(req: {
      ref: SourceRef;
      uid: string;
      status: Record<string, unknown>;
    }): Promise<Found> {
      // The Ready condition before: each sync tells every source its result, mostly unchanged.
      const before = await getObject<KubernetesObject & { status?: { conditions?: Condition[] } }>(
        kube,
        objectRef(req.ref),
      );
      const readyOf = (conditions: unknown) => (conditions as Condition[] | undefined)?.find((c) => c.type === 'Ready');
      const after = readyOf(req.status.conditions);
      const written = await patchStatusUnlessGone(kube, objectRef(req.ref), req.status, req.uid);
      if (written.status !== 'ok') return written;
      // A retry may find its own earlier write: the Event that write should have had is still due.
      const was =
        before?.metadata?.uid === req.uid && !isRetriedActivity() ? readyOf(before.status?.conditions) : undefined;
      await events.record({ ...objectRef(req.ref), uid: req.uid }, sourceReadyEvent(was, after));
      return written;
    },

    /**
     * The credentials a source uses (named, or the default) and their account; the default never
     * stands in for the original's inline credentials the spec sets (`legacy`).
     */
    async resolveCloudflareCredentials(req: { name?: string; legacy?: LegacyCredentials }): Promise<
      Outcome<
        {
          credentials: string;
          accountId: string;
          cloudflareTaskQueue: string;
          defaultDomain?: string;
          /** Who may use them (the workflow decides with src/domain/cloudflare/credentials-use.ts). */
          policy: CredentialsUsePolicy;
        },
        { reason: string; message: string }
      >
    > {
      try {
        const creds = await findCredentials(kube, req.name);
        const accountId = creds.spec.accountId;
        const refused = req.name
          ? undefined
          : legacyCredentialsRefusal(req.legacy, { credentials: creds.metadata!.name!, accountId });
        if (refused) return failedWith(refused);
        return ok({
          credentials: creds.metadata!.name!,
          accountId,
          cloudflareTaskQueue: cloudflareTaskQueue(taskQueue, accountId),
          ...(creds.spec.defaultDomain ? { defaultDomain: creds.spec.defaultDomain } : {}),
          policy: credentialsUsePolicy(creds),
        });
      } catch (err) {
        if (err instanceof ApplicationFailure && err.nonRetryable)
          return failedWith({ reason: err.type ?? 'CredentialsNotFound', message: err.message });
        throw err;
      }
    },

    /** Registers the source with its target's sync workflow, starting that workflow if needed. */
    async registerCloudflareSource(req: {
      target: SyncTarget;
      registration: SourceRegistration;
    }): Promise<{ syncState: string; workflowId: string }> {
      const t = req.target;
      await temporal.workflow.signalWithStart(cloudflareSyncWorkflow, {
        ...(await syncWorkflowStart(t, {})),
        signal: registerSourceSignal,
        signalArgs: [req.registration],
      });
      return { syncState: syncStateName(t), workflowId: syncWorkflowId(t) };
    },

    /**
     * Tells the target's sync workflow the source is gone. A target with no workflow that was
     * written before (its CloudflareSyncState is there) is started for the removal, with the
     * credentials it was written with: the source's items must not outlive it. Only a target
     * never written has nothing of it (`not-running`).
     */
    async unregisterCloudflareSource(req: {
      target: SyncTarget;
      ref: SourceRef;
      uid: string;
      orphan?: boolean;
    }): Promise<'sent' | 'not-running'> {
      const removal = { ref: req.ref, uid: req.uid, ...(req.orphan ? { orphan: true } : {}) };
      try {
        await temporal.workflow.getHandle(syncWorkflowId(req.target)).signal(unregisterSourceSignal, removal);
        return 'sent';
      } catch (err) {
        if (!(err instanceof WorkflowNotFoundError)) throw err;
      }
      const state = await getObject<CloudflareSyncState>(kube, {
        apiVersion: CloudflareSyncStateKind.apiVersion,
        kind: CloudflareSyncStateKind.kind,
        name: syncStateName(req.target),
      });
      const credentials = state?.spec.credentialsRef?.name;
      if (!credentials) return 'not-running';
      await temporal.workflow.signalWithStart(cloudflareSyncWorkflow, {
        ...(await syncWorkflowStart(req.target, { credentials }, state ?? null)),
        signal: unregisterSourceSignal,
        signalArgs: [removal],
      });
      return 'sent';
    },
  };
}

export type CloudflareSourceActivities = ReturnType<typeof createCloudflareSourceActivities>;
