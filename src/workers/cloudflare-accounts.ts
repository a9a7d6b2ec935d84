/**
 * Workers per Cloudflare account: every Cloudflare API call of an account runs as an activity on
 * that account's task queues — `<queue>-cloudflare-<accountId>` for changes and its `-observe`
 * sibling for periodic observations. The accounts come from the CloudflareCredentials objects,
 * followed by an informer (listed once, then watched; src/watcher/informer.ts): an account's
 * workers start when its credentials' event arrives.
 *
 * The throttle is not the task queues' (issue 23, D7): Temporal can rate-limit activity starts,
 * but one activity makes one call or hundreds, and Cloudflare's limit is per user across accounts.
 * Every call waits for its credentials' owner's budget inside the SDK's fetch
 * (src/activities/cloudflare/call-budget.ts); this process's share of each budget is the limit
 * over the number of worker replicas polling these queues, read from Temporal every 10 s. The
 * observe queue's worker runs a few activities at a time, so a backlog of observations waits on
 * the server and the activities of changes, taken at once, go first in the budget's queue.
 */
import { Worker } from '@temporalio/worker';
import protoPackage from '@temporalio/proto';
import type { KubernetesObject } from '@kubernetes/client-node';
import { Registry } from 'prom-client';
import {
  CloudflareCredentialsKind,
  CloudflareSyncStateKind,
  ORIGINAL_CREDENTIALS_FINALIZER,
  isOriginalSyncStateFinalizer,
  type CloudflareCredentials,
} from '../api/cloudflare.js';
import { releaseOriginalFinalizers } from '../activities/cloudflare/original-finalizers.js';
import { CallBudget } from '../activities/cloudflare/call-budget.js';
import { createCloudflareSyncActivities } from '../activities/cloudflare/sync.js';
import { createTunnelActivities } from '../activities/cloudflare/tunnels.js';
import { cloudflareTaskQueue, type OperatorConfig } from '../config.js';
import { observeTaskQueue } from '../domain/cloudflare/targets.js';
import type { KubeClient } from '../kube/client.js';
import { EventRecorder } from '../kube/events.js';
import type { Logger } from '../log.js';
import { dataConverterOf, type WorkerConnection } from '../temporal/connection.js';
import { tracedWorkerOptions } from '../tracing/temporal.js';
import { ResourceInformer, createInformerMetrics, type InformerMetrics } from '../watcher/informer.js';
import { versionedWorkerOptions } from './versioning.js';

// A CommonJS module: under Node's ESM loader (the roles run so) its namespace has no named exports.
const enums = protoPackage.temporal.api.enums.v1;
/** Observations one replica runs at once per account: the rest wait on the server, behind no change. */
const OBSERVATIONS_AT_ONCE = 2;
/** How often the number of replicas sharing the budget is read again. */
const REPLICAS_REFRESH_MS = 10_000;
/**
 * How often the CloudflareSyncStates are listed for the original operator's finalizers — only
 * while the last listing found one: the original's SyncStates predate the migration, so once a
 * listing finds none, no later one would (a whole LIST of them a minute, per replica, for ever
 * was the alternative).
 */
const SYNC_STATES_SWEEP_MS = 60_000;
/** Temporal's default number of partitions of a task queue (matching.numTaskqueueReadPartitions). */
const QUEUE_PARTITIONS = 4;

export interface CloudflareAccountWorkersOptions {
  /** Renewed when its credentials change: every account's workers follow it. */
  connection: WorkerConnection;
  cfg: OperatorConfig;
  kube: KubeClient;
  log: Logger;
  /**
   * How often the served accounts are checked against the credentials again (default 5 s): the
   * replicas sharing the budget, a finalizer release that failed. A credentials change is acted
   * on when its event arrives.
   */
  pollMs?: number;
  /** Where the CloudflareCredentials informer counts its lists, events and errors. */
  informerMetrics?: InformerMetrics;
}

export class CloudflareAccountWorkers {
  private readonly workers = new Map<string, { workers: Worker[]; running: Promise<void> }>();
  private timer?: NodeJS.Timeout;
  private stopped = false;
  private readonly activities;
  /** The budgets of the credentials' owners, shared by every account served here. */
  readonly budget: CallBudget;
  private replicas = 1;
  private replicasReadAt = 0;
  private syncStatesSweptAt = 0;
  private originalSyncStatesLeft = true;
  private readonly credentials: ResourceInformer<CloudflareCredentials>;
  /** Reconciles run one after another; `queued` is the one not started yet, which callers share. */
  private reconciles: Promise<void> = Promise.resolve();
  private queued?: Promise<void>;

  constructor(private readonly opts: CloudflareAccountWorkersOptions) {
    const { cloudflare } = opts.cfg;
    this.credentials = new ResourceInformer<CloudflareCredentials>(
      opts.kube,
      CloudflareCredentialsKind.apiVersion,
      CloudflareCredentialsKind.kind,
      () => {
        if (!this.credentials.synced || this.stopped) return;
        this.reconcile().catch((err: Error) => this.opts.log.warn({ err }, 'serving Cloudflare accounts failed'));
      },
      opts.log.child({ informer: 'CloudflareCredentials' }),
      opts.informerMetrics ?? createInformerMetrics(new Registry(), 'worker'),
      // No resync: the periodic reconcile reads the whole cache anyway.
      { resyncMs: 0 },
    );
    this.budget = new CallBudget({
      limit: cloudflare.apiLimit,
      share: cloudflare.apiShare,
      replicas: () => this.replicas,
    });
    this.activities = {
      ...createCloudflareSyncActivities(opts.kube, cloudflare, new EventRecorder(opts.kube, 'worker'), this.budget),
      ...createTunnelActivities(opts.kube, cloudflare, this.budget),
    };
  }

  /**
   * The worker replicas polling a Cloudflare task queue now (this one included): Temporal lists
   * a queue's recent pollers, each replica under its own identity. Any account's queue does — every
   * replica serves every account. A queue is split in partitions (4 by default) and each lists only
   * its own pollers, so every partition is asked, as `temporal task-queue describe
   * --partitions-legacy` does.
   */
  private async readReplicas(): Promise<void> {
    const [accountId] = this.workers.keys();
    if (!accountId || Date.now() - this.replicasReadAt < REPLICAS_REFRESH_MS) return;
    this.replicasReadAt = Date.now();
    const name = cloudflareTaskQueue(this.opts.cfg.temporal.taskQueue, accountId);
    const partitions = [name, ...Array.from({ length: QUEUE_PARTITIONS - 1 }, (_, i) => `/_sys/${name}/${i + 1}`)];
    // The partitions are independent reads: asked at once, not one round trip after another.
    const described = await Promise.all(
      partitions.map((partition) =>
        this.opts.connection.current.workflowService.describeTaskQueue({
          namespace: this.opts.cfg.temporal.namespace,
          taskQueue: { name: partition, kind: enums.TaskQueueKind.TASK_QUEUE_KIND_NORMAL },
          taskQueueType: enums.TaskQueueType.TASK_QUEUE_TYPE_ACTIVITY,
        }),
      ),
    );
    const identities = new Set(described.flatMap((res) => (res.pollers ?? []).map((p) => p.identity ?? '')));
    this.replicas = Math.max(1, identities.size);
  }

  /** The accounts being served now. */
  accounts(): string[] {
    return [...this.workers.keys()];
  }

  /** Lists the credentials (every account served before this resolves), then watches them. */
  async start(): Promise<void> {
    this.credentials.start();
    await this.credentials.waitForSync();
    await this.reconcile();
    const tick = () => {
      this.timer = setTimeout(() => {
        this.reconcile()
          .catch((err: Error) => this.opts.log.warn({ err }, 'serving Cloudflare accounts failed'))
          .finally(() => !this.stopped && tick());
      }, this.opts.pollMs ?? 5_000);
      this.timer.unref();
    };
    tick();
  }

  /**
   * Starts a worker for every account that has credentials and none yet. Workers are never
   * stopped early: queued activities may still need them. One that starts after this call;
   * concurrent callers share it.
   */
  reconcile(): Promise<void> {
    this.queued ??= this.reconciles.then(() => {
      this.queued = undefined;
      return this.reconcileNow();
    });
    const next = this.queued;
    this.reconciles = next.catch(() => undefined);
    return next;
  }

  private async reconcileNow(): Promise<void> {
    await this.credentials.waitForSync();
    const accounts = new Set<string>();
    for (const c of this.credentials.list()) {
      if (c.spec?.accountId) accounts.add(c.spec.accountId);
      await this.releaseOriginal(CloudflareCredentialsKind, c, (f) => f === ORIGINAL_CREDENTIALS_FINALIZER);
    }
    if (this.originalSyncStatesLeft && Date.now() - this.syncStatesSweptAt >= SYNC_STATES_SWEEP_MS) {
      this.syncStatesSweptAt = Date.now();
      let found = false;
      for await (const s of this.opts.kube.listAll(CloudflareSyncStateKind.apiVersion, CloudflareSyncStateKind.kind))
        if (s.metadata?.finalizers?.some(isOriginalSyncStateFinalizer)) {
          found = true;
          await this.releaseOriginal(CloudflareSyncStateKind, s, isOriginalSyncStateFinalizer);
        }
      this.originalSyncStatesLeft = found;
    }
    for (const accountId of accounts) {
      if (this.workers.has(accountId) || this.stopped) continue;
      const changes = cloudflareTaskQueue(this.opts.cfg.temporal.taskQueue, accountId);
      const { activitiesPerSecond } = this.opts.cfg.cloudflare;
      const workers = await Promise.all(
        [changes, observeTaskQueue(changes)].map(async (taskQueue) =>
          this.opts.connection.follow(
            await Worker.create(
              tracedWorkerOptions({
                connection: this.opts.connection.current,
                namespace: this.opts.cfg.temporal.namespace,
                taskQueue,
                dataConverter: dataConverterOf(this.opts.cfg.temporal),
                activities: this.activities,
                ...(activitiesPerSecond ? { maxTaskQueueActivitiesPerSecond: activitiesPerSecond } : {}),
                ...(taskQueue !== changes ? { maxConcurrentActivityTaskExecutions: OBSERVATIONS_AT_ONCE } : {}),
                ...(this.opts.cfg.identity ? { identity: `${this.opts.cfg.identity}/cloudflare-${accountId}` } : {}),
                shutdownGraceTime: '10 seconds',
                // Heartbeats (one a second while a call runs) reach Temporal without the default
                // 12 s throttle: a cancellation comes back on them, and an observation a change
                // cancels must stop at once (workflows/cloudflare/sync.ts).
                maxHeartbeatThrottleInterval: '1 second',
                // The worker process's version: its account queues join the deployment it polls as.
                ...versionedWorkerOptions(this.opts.cfg.versioning, this.opts.cfg.temporal.taskQueue),
              }),
            ),
          ),
        ),
      );
      const running = Promise.all(workers.map((w) => w.run()))
        .then(() => undefined)
        .catch((err: Error) => {
          this.opts.log.error({ accountId, err }, 'Cloudflare account worker failed');
          for (const w of workers) if (w.getState() === 'RUNNING') w.shutdown();
          this.workers.delete(accountId);
        });
      this.workers.set(accountId, { workers, running });
      this.opts.log.info({ accountId, taskQueue: changes }, 'serving Cloudflare account');
    }
    await this.readReplicas().catch((err: Error) => {
      this.opts.log.warn({ err }, 'reading the Cloudflare worker replicas failed');
    });
  }

  /**
   * The original operator's finalizer on CloudflareCredentials or on one of its own SyncStates:
   * nothing here removes it, so deleting the object (or the CRD) would hang. Released on sight;
   * a failure is retried at the next listing.
   */
  private async releaseOriginal(
    kind: { apiVersion: string; kind: string },
    obj: KubernetesObject,
    original: (f: string) => boolean,
  ): Promise<void> {
    const ref = { apiVersion: kind.apiVersion, kind: kind.kind, name: obj.metadata!.name! };
    await releaseOriginalFinalizers(this.opts.kube, ref, obj, original).catch((err: Error) =>
      this.opts.log.warn(
        { kind: kind.kind, name: ref.name, err },
        "releasing the original operator's finalizer failed",
      ),
    );
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    await this.credentials.stop();
    for (const { workers } of this.workers.values())
      for (const worker of workers) if (worker.getState() === 'RUNNING') worker.shutdown();
    await Promise.all([...this.workers.values()].map((w) => w.running));
  }
}
