/**
 * List+watch of one kind with a local cache, written for operators that must not go quiet:
 *
 * - lists page by page, then watches from the list's resourceVersion (bookmarks on);
 * - a watch that ends normally resumes from the last resourceVersion seen;
 * - 410 Gone (the resourceVersion was compacted) triggers a re-list, and the re-list is diffed
 *   against the cache so deletions that happened meanwhile surface as DELETED events;
 * - any other error restarts the loop with jittered exponential backoff (1 s → 30 s). The client
 *   library's own informer stops on such errors; this one never stops until told to.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type { KubernetesObject } from '@kubernetes/client-node';
import { Counter, type Registry } from 'prom-client';
import { Backoff } from '../backoff.js';
import type { KubeClient } from '../kube/client.js';
import type { Logger } from '../log.js';
import type { WatcherMetrics } from './metrics.js';

export type InformerEventType = 'ADDED' | 'MODIFIED' | 'DELETED';

export interface InformerEvent<T extends KubernetesObject = KubernetesObject> {
  type: InformerEventType;
  object: T;
  /** performance.now() when the watcher received it. */
  receivedAt: number;
  /** True when the event came from a (re)list rather than the watch stream. */
  fromList: boolean;
}

export interface InformerOptions {
  pageSize?: number;
  initialBackoffMs?: number;
  maxBackoffMs?: number;
  /** Server-side watch timeout; the watch is then resumed from the last resourceVersion. */
  watchTimeoutSeconds?: number;
  /**
   * Period of resync: every cached object is handed to the handler again (as MODIFIED), so
   * routes re-assert their workflows (default 15 min; 0 disables).
   */
  resyncMs?: number;
  /** Only this namespace's objects (default: every namespace). */
  namespace?: string;
  /** Only objects matching this label selector (e.g. `app=sandbox-agent`). */
  labelSelector?: string;
}

/** The counters an informer records into (the watcher's, or a role's own: createInformerMetrics). */
export type InformerMetrics = Pick<WatcherMetrics, 'eventsSeen' | 'relists' | 'watchErrors'>;

/**
 * The informer counters of a role other than the watcher, e.g. `durable_operators_fastpath_informer_…`:
 * the same series as the watcher's, under the role's name.
 */
export function createInformerMetrics(registry: Registry, role: string): InformerMetrics {
  const prefix = `durable_operators_${role}_informer`;
  return {
    eventsSeen: new Counter({
      name: `${prefix}_events_total`,
      help: 'Kubernetes events seen, by kind and type (list items count as ADDED/MODIFIED/DELETED).',
      labelNames: ['kind', 'type'] as const,
      registers: [registry],
    }),
    relists: new Counter({
      name: `${prefix}_relists_total`,
      help: 'Full lists, by kind and reason (sync = start/restart, gone = 410).',
      labelNames: ['kind', 'reason'] as const,
      registers: [registry],
    }),
    watchErrors: new Counter({
      name: `${prefix}_watch_errors_total`,
      help: 'List/watch failures that caused a backoff-and-retry.',
      labelNames: ['kind'] as const,
      registers: [registry],
    }),
  };
}

type Handler<T extends KubernetesObject> = (ev: InformerEvent<T>) => void;

class GoneError extends Error {}

/** Cache key of an object: `namespace/name`, or `name` for cluster-scoped objects. */
export function cacheKeyOf(namespace: string | undefined, name: string): string {
  return namespace ? `${namespace}/${name}` : name;
}

export function cacheKeyOfObject(obj: KubernetesObject): string {
  return cacheKeyOf(obj.metadata?.namespace, obj.metadata!.name!);
}

export class ResourceInformer<T extends KubernetesObject = KubernetesObject> {
  private readonly cache = new Map<string, T>();
  private resourceVersion: string | undefined;
  private stopped = false;
  private abort: AbortController | undefined;
  private loop: Promise<void> | undefined;
  private syncedOnce = false;
  private syncWaiters: Array<() => void> = [];
  private readonly syncListeners: Array<() => void> = [];
  private resyncTimer: NodeJS.Timeout | undefined;
  /**
   * When (Date.now()) the server last spoke — a list, an event, a bookmark, a watch it ended at
   * its timeout: the cache holds every change the server had sent by then (0 before the first list).
   */
  currentAt = 0;

  constructor(
    private readonly kube: KubeClient,
    readonly apiVersion: string,
    readonly kind: string,
    private readonly handler: Handler<T>,
    private readonly log: Logger,
    private readonly metrics: InformerMetrics,
    private readonly opts: InformerOptions = {},
  ) {}

  get label(): string {
    return `${this.apiVersion}/${this.kind}`;
  }

  get synced(): boolean {
    return this.syncedOnce;
  }

  /** Objects as last seen. */
  get(key: string): T | undefined {
    return this.cache.get(key);
  }

  /** Every object as last seen. */
  list(): T[] {
    return [...this.cache.values()];
  }

  /** Called after every completed (re)list. */
  onSync(fn: () => void): void {
    this.syncListeners.push(fn);
  }

  waitForSync(): Promise<void> {
    if (this.syncedOnce) return Promise.resolve();
    return new Promise((resolve) => this.syncWaiters.push(resolve));
  }

  start(): void {
    this.loop ??= this.run();
    const resyncMs = this.opts.resyncMs ?? 15 * 60_000;
    if (resyncMs > 0 && !this.resyncTimer) {
      this.resyncTimer = setInterval(() => this.resync(), resyncMs);
      this.resyncTimer.unref();
    }
  }

  private resync(): void {
    if (!this.syncedOnce) return;
    const now = performance.now();
    for (const obj of this.cache.values()) this.emit('MODIFIED', obj, now, true);
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.resyncTimer) clearInterval(this.resyncTimer);
    this.abort?.abort();
    await this.loop;
  }

  private async run(): Promise<void> {
    const backoff = new Backoff({
      initialMs: this.opts.initialBackoffMs ?? 1000,
      maxMs: this.opts.maxBackoffMs ?? 30_000,
    });
    while (!this.stopped) {
      try {
        if (this.resourceVersion === undefined) await this.relist();
        await this.watchOnce();
        backoff.reset();
      } catch (err) {
        if (this.stopped) break;
        if (err instanceof GoneError) {
          this.log.info({ kind: this.label }, 'resourceVersion expired (410 Gone); re-listing');
          this.metrics.relists.inc({ kind: this.kind, reason: 'gone' });
          this.resourceVersion = undefined;
          continue;
        }
        this.metrics.watchErrors.inc({ kind: this.kind });
        const delayMs = backoff.next();
        this.log.warn({ kind: this.label, err: errText(err), retryInMs: delayMs }, 'list/watch failed; retrying');
        await sleep(delayMs);
      }
    }
  }

  private async relist(): Promise<void> {
    const seen = new Set<string>();
    let continueToken: string | undefined;
    let rv: string | undefined;
    do {
      const page = await this.kube.listPage<T>(this.apiVersion, this.kind, {
        limit: this.opts.pageSize ?? 500,
        continueToken,
        namespace: this.opts.namespace,
        labelSelector: this.opts.labelSelector,
      });
      rv = page.resourceVersion;
      continueToken = page.continueToken;
      const receivedAt = performance.now();
      for (const item of page.items) {
        // List items omit apiVersion/kind; restore them so handlers see whole objects.
        const obj = { ...item, apiVersion: this.apiVersion, kind: this.kind } as T;
        const key = cacheKeyOfObject(obj);
        seen.add(key);
        const prev = this.cache.get(key);
        this.cache.set(key, obj);
        if (!prev) this.emit('ADDED', obj, receivedAt, true);
        else if (prev.metadata?.resourceVersion !== obj.metadata?.resourceVersion)
          this.emit('MODIFIED', obj, receivedAt, true);
      }
    } while (continueToken);
    for (const [key, obj] of this.cache) {
      if (!seen.has(key)) {
        this.cache.delete(key);
        this.emit('DELETED', obj, performance.now(), true);
      }
    }
    this.resourceVersion = rv;
    this.currentAt = Date.now();
    this.metrics.relists.inc({ kind: this.kind, reason: 'sync' });
    this.syncedOnce = true;
    for (const w of this.syncWaiters.splice(0)) w();
    for (const l of this.syncListeners) l();
  }

  private emit(type: InformerEventType, object: T, receivedAt: number, fromList: boolean): void {
    this.metrics.eventsSeen.inc({ kind: this.kind, type });
    try {
      this.handler({ type, object, receivedAt, fromList });
    } catch (err) {
      this.log.error({ kind: this.label, err: errText(err) }, 'event handler threw');
    }
  }

  /** The watched collection: cluster-wide, or `…/namespaces/<namespace>/<plural>`. */
  private async watchPath(): Promise<string> {
    const path = await this.kube.collectionPath(this.apiVersion, this.kind);
    const ns = this.opts.namespace;
    if (!ns) return path;
    const plural = path.lastIndexOf('/');
    return `${path.slice(0, plural)}/namespaces/${encodeURIComponent(ns)}${path.slice(plural)}`;
  }

  /** One watch request; resolves when the server ends it, rejects on error or 410. */
  private async watchOnce(): Promise<void> {
    const path = await this.watchPath();
    const watch = this.kube.newWatch();
    await new Promise<void>((resolve, reject) => {
      let gone = false;
      let settled = false;
      const finish = (err?: unknown) => {
        if (settled) return;
        settled = true;
        if (gone) reject(new GoneError());
        // The client aborts a watch that has been idle for 30 s; resume from the last resourceVersion.
        else if (err && !this.stopped && (err as Error).name !== 'TimeoutError') reject(err);
        else {
          // The server ended it at its timeout: it had sent every change until then.
          if (!err && !this.stopped) this.currentAt = Date.now();
          resolve();
        }
      };
      watch
        .watch(
          path,
          {
            resourceVersion: this.resourceVersion,
            allowWatchBookmarks: true,
            timeoutSeconds: this.opts.watchTimeoutSeconds ?? 300,
            ...(this.opts.labelSelector && { labelSelector: this.opts.labelSelector }),
          },
          (type: string, obj: T & { code?: number; message?: string }) => {
            if (type === 'ERROR') {
              if (obj.code === 410) gone = true;
              else this.log.warn({ kind: this.label, status: obj.message }, 'watch error event');
              this.abort?.abort();
              finish(new Error(`watch error: ${obj.message ?? JSON.stringify(obj)}`));
              return;
            }
            const rv = obj.metadata?.resourceVersion;
            if (rv) this.resourceVersion = rv;
            this.currentAt = Date.now();
            if (type === 'BOOKMARK') return;
            const receivedAt = performance.now();
            const object = { ...obj, apiVersion: obj.apiVersion ?? this.apiVersion, kind: obj.kind ?? this.kind } as T;
            const key = cacheKeyOfObject(object);
            if (type === 'DELETED') this.cache.delete(key);
            else this.cache.set(key, object);
            this.emit(type as InformerEventType, object, receivedAt, false);
          },
          (err: unknown) => finish(err),
        )
        .then((ctrl) => {
          this.abort = ctrl;
          if (this.stopped) ctrl.abort();
        })
        .catch((err) => finish(err ?? new Error('watch request failed')));
    });
  }
}

function errText(err: unknown): string {
  if (err instanceof Error) return err.message;
  if (typeof err === 'object' && err !== null) return JSON.stringify(err).slice(0, 500);
  return String(err);
}
