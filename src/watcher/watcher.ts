/**
 * The watcher process: informers for the registered kinds (plus kinds added at run time, such as
 * whatever ObjectKeepers follow), each event routed through a keyed queue to the dispatcher.
 */
import type { KubernetesObject } from '@kubernetes/client-node';
import type { Client } from '@temporalio/client';
import type { KubeClient } from '../kube/client.js';
import type { Logger } from '../log.js';
import { Dispatcher } from '../temporal/dispatch.js';
import { ResourceInformer, type InformerEvent, type InformerOptions } from './informer.js';
import { KeyedQueue } from './keyed-queue.js';
import type { WatcherMetrics } from './metrics.js';

export interface WatcherContext {
  dispatcher: Dispatcher;
  log: Logger;
  /** Watches another kind (idempotent); returns its informer. */
  watch<T extends KubernetesObject>(apiVersion: string, kind: string, handler: EventHandler<T>): ResourceInformer<T>;
  /** Queues work for one object key; tasks of a key run in order. */
  enqueue(key: string, task: () => Promise<void>): void;
  /** Whether the apiserver serves a kind now (discovery): a kind from optional CRDs is watched only then. */
  served(apiVersion: string, kind: string): Promise<boolean>;
}

export type EventHandler<T extends KubernetesObject = KubernetesObject> = (ev: InformerEvent<T>) => void;

/** A system plugs into the watcher by registering its informers on start. */
export interface Route {
  name: string;
  register(ctx: WatcherContext): void;
}

export interface WatcherOptions {
  kube: KubeClient;
  temporal: Client;
  taskQueue: string;
  log: Logger;
  metrics: WatcherMetrics;
  routes: Route[];
  /** Concurrent Temporal calls in flight (default 64). */
  concurrency?: number;
  /** Every object is re-dispatched this often, restarting workflows that failed or were terminated. */
  resyncMs?: number;
  informer?: InformerOptions;
}

const DEFAULT_RESYNC_MS = 15 * 60_000;

export class Watcher {
  readonly dispatcher: Dispatcher;
  private readonly queue: KeyedQueue;
  private readonly informers = new Map<string, ResourceInformer<KubernetesObject>>();
  /** Several routes may watch one kind (e.g. requests, and the keepers that follow them). */
  private readonly handlers = new Map<string, EventHandler[]>();
  private readonly ctx: WatcherContext;
  private readonly informerOptions: InformerOptions;

  constructor(private readonly opts: WatcherOptions) {
    const resyncMs = opts.resyncMs ?? DEFAULT_RESYNC_MS;
    this.dispatcher = new Dispatcher(opts.temporal, opts.taskQueue, opts.metrics, opts.log, resyncMs / 2);
    this.informerOptions = { resyncMs, ...opts.informer };
    this.queue = new KeyedQueue(opts.concurrency ?? 64, (d) => opts.metrics.queueDepth.set(d));
    this.ctx = {
      dispatcher: this.dispatcher,
      log: opts.log,
      watch: (apiVersion, kind, handler) => this.watch(apiVersion, kind, handler),
      enqueue: (key, task) => this.queue.push(key, task),
      served: async (apiVersion, kind) => !!(await opts.kube.objects.servedResource(apiVersion, kind)),
    };
  }

  start(): void {
    for (const route of this.opts.routes) route.register(this.ctx);
  }

  /** Resolves once every informer started so far has completed its first list. */
  async waitForSync(): Promise<void> {
    let count = -1;
    while (count !== this.informers.size) {
      count = this.informers.size;
      await Promise.all([...this.informers.values()].map((i) => i.waitForSync()));
    }
  }

  /** True once every informer has completed its first list. */
  get synced(): boolean {
    return [...this.informers.values()].every((i) => i.synced);
  }

  /** Resolves when no dispatch is queued or in flight. */
  idle(): Promise<void> {
    return this.queue.onIdle();
  }

  async stop(): Promise<void> {
    this.dispatcher.stop();
    await Promise.all([...this.informers.values()].map((i) => i.stop()));
    await this.queue.onIdle();
  }

  private watch<T extends KubernetesObject>(
    apiVersion: string,
    kind: string,
    handler: EventHandler<T>,
  ): ResourceInformer<T> {
    const id = `${apiVersion}/${kind}`;
    const existing = this.informers.get(id);
    if (existing) {
      // A late handler first sees every cached object as ADDED, as if it had watched from the start.
      this.handlers.get(id)!.push(handler as EventHandler);
      if (existing.synced) {
        for (const object of existing.list())
          handler({ type: 'ADDED', object: object as T, receivedAt: performance.now(), fromList: true });
      }
      return existing as unknown as ResourceInformer<T>;
    }
    const handlers: EventHandler[] = [handler as EventHandler];
    this.handlers.set(id, handlers);
    const informer = new ResourceInformer<T>(
      this.opts.kube,
      apiVersion,
      kind,
      (ev) => {
        for (const h of handlers) h(ev as InformerEvent<KubernetesObject>);
      },
      this.opts.log.child({ informer: id }),
      this.opts.metrics,
      this.informerOptions,
    );
    this.informers.set(id, informer as unknown as ResourceInformer<KubernetesObject>);
    informer.start();
    return informer;
  }
}
