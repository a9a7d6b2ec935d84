/**
 * A worker per Cloudflare account: every Cloudflare API call of an account runs as an activity
 * on that account's task queue (`<queue>-cloudflare-<accountId>`), whose server-side rate limit
 * (`maxTaskQueueActivitiesPerSecond`) is enforced by Temporal across every worker replica — one
 * throttle per account, shared by all its workflows, which a per-process token bucket could not
 * be. The accounts come from the CloudflareCredentials objects, listed every few seconds.
 */
import type { NativeConnection } from '@temporalio/worker';
import { Worker } from '@temporalio/worker';
import { CloudflareCredentialsKind, type CloudflareCredentials } from '../api/cloudflare.js';
import { createCloudflareSyncActivities } from '../activities/cloudflare/sync.js';
import { createTunnelActivities } from '../activities/cloudflare/tunnels.js';
import { cloudflareTaskQueue, type OperatorConfig } from '../config.js';
import type { KubeClient } from '../kube/client.js';
import { EventRecorder } from '../kube/events.js';
import type { Logger } from '../log.js';
import { dataConverterOf } from '../temporal/connection.js';
import { tracedWorkerOptions } from '../tracing/temporal.js';

export interface CloudflareAccountWorkersOptions {
  connection: NativeConnection;
  cfg: OperatorConfig;
  kube: KubeClient;
  log: Logger;
  /** How often the CloudflareCredentials are listed (default 5 s). */
  pollMs?: number;
}

export class CloudflareAccountWorkers {
  private readonly workers = new Map<string, { worker: Worker; running: Promise<void> }>();
  private timer?: NodeJS.Timeout;
  private stopped = false;
  private readonly activities;

  constructor(private readonly opts: CloudflareAccountWorkersOptions) {
    this.activities = {
      ...createCloudflareSyncActivities(opts.kube, opts.cfg.cloudflare, new EventRecorder(opts.kube, 'worker')),
      ...createTunnelActivities(opts.kube, opts.cfg.cloudflare),
    };
  }

  /** The accounts being served now. */
  accounts(): string[] {
    return [...this.workers.keys()];
  }

  async start(): Promise<void> {
    await this.reconcile();
    const tick = () => {
      this.timer = setTimeout(() => {
        this.reconcile()
          .catch((err: Error) => this.opts.log.warn({ err: err.message }, 'listing CloudflareCredentials failed'))
          .finally(() => !this.stopped && tick());
      }, this.opts.pollMs ?? 5_000);
      this.timer.unref();
    };
    tick();
  }

  /** Starts a worker for every account that has credentials and none yet. Workers are never stopped early: queued activities may still need them. */
  async reconcile(): Promise<void> {
    const accounts = new Set<string>();
    for await (const c of this.opts.kube.listAll<CloudflareCredentials>(
      CloudflareCredentialsKind.apiVersion,
      CloudflareCredentialsKind.kind,
    ))
      if (c.spec?.accountId) accounts.add(c.spec.accountId);
    for (const accountId of accounts) {
      if (this.workers.has(accountId) || this.stopped) continue;
      const taskQueue = cloudflareTaskQueue(this.opts.cfg.temporal.taskQueue, accountId);
      const worker = await Worker.create(
        tracedWorkerOptions({
          connection: this.opts.connection,
          namespace: this.opts.cfg.temporal.namespace,
          taskQueue,
          dataConverter: dataConverterOf(this.opts.cfg.temporal),
          activities: this.activities,
          maxTaskQueueActivitiesPerSecond: this.opts.cfg.cloudflare.activitiesPerSecond,
          ...(this.opts.cfg.identity ? { identity: `${this.opts.cfg.identity}/cloudflare-${accountId}` } : {}),
          shutdownGraceTime: '10 seconds',
        }),
      );
      const running = worker.run().catch((err: Error) => {
        this.opts.log.error({ accountId, err: err.message }, 'Cloudflare account worker failed');
        this.workers.delete(accountId);
      });
      this.workers.set(accountId, { worker, running });
      this.opts.log.info({ accountId, taskQueue }, 'serving Cloudflare account');
    }
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    for (const { worker } of this.workers.values()) if (worker.getState() === 'RUNNING') worker.shutdown();
    await Promise.all([...this.workers.values()].map((w) => w.running));
  }
}
