/**
 * The tenant configuration provider: keeps an in-memory snapshot of everything under the etcd
 * namespace live, for lock-free reads on every request.
 *
 * - Load: one paged prefix read at a single revision R, every known key parsed.
 * - Watch from R+1, so nothing written between the read and the watch is missed. When the watch
 *   breaks, reconnect after about 1 s, ×1.5 per failure up to 30 s, jittered (reset once connected), resuming
 *   after the last revision seen, so changes made while disconnected are replayed.
 * - When etcd cancels the watch (its start revision was compacted away), read everything again
 *   and watch from the new revision. (The original re-watched without a revision and silently
 *   lost whatever changed while it was away.)
 * - Each batch of watch events becomes a new immutable snapshot (copy-on-write, lookup indexes
 *   brought up to date with it), swapped in with one assignment.
 * - Credentials: the TLS and password files are re-read every few seconds (a cert-manager renewal
 *   rewrites them in place). etcd3 fixes its credentials when a client is made, so a changed set
 *   gets a new client; the watch moves to it from the same revision and the old one is closed. A
 *   set that does not load (a key not matching its certificate yet) is ignored, the last one kept.
 * - File cache: rewritten after changes (coalesced, about once a second); when etcd is
 *   unreachable at start the provider serves the cache, indexes built from it, and keeps trying
 *   etcd, switching to live data once it can.
 */
import { EventEmitter } from 'node:events';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Etcd3, IOptions, IWatchResponse, Watcher } from 'etcd3';
import { logger as rootLogger, type Logger } from '../log.js';
import { Backoff, type BackoffLimits } from '../backoff.js';
import { SnapshotFileCache } from './cache.js';
import type { EtcdSecurity } from '../config.js';
import { LastGoodCredentials } from '../credential-files.js';
import { createEtcdClient, etcdSecurityOptions, listPrefix, sameEtcdSecurity } from './etcd.js';
import {
  DEFAULT_TENANT_PREFIX,
  normalizePrefix,
  type ConfigKind,
  type DatabaseConfig,
  type DomainConfig,
  type FtpConfig,
  type ResolverConfig,
  type StorageConfig,
  type TenantMeta,
  type WvpConfig,
} from './model.js';
import { resolveFtpTenant, resolveHttpTenant, type HttpRequestLike, type TenantResolution } from './resolve.js';
import {
  EMPTY_SNAPSHOT,
  applyChanges,
  buildSnapshot,
  type KeyChange,
  type SnapshotUpdate,
  type TenantSnapshot,
} from './snapshot.js';

/** live: watching etcd; reconnecting: lost etcd, serving the last data; cache: serving the file cache, etcd not reached yet. */
export type WatchState = 'starting' | 'live' | 'reconnecting' | 'cache' | 'stopped';
export const WATCH_STATES: readonly WatchState[] = ['starting', 'live', 'reconnecting', 'cache', 'stopped'];

/** Why everything was read again: first load, leaving the cache, or a watch etcd canceled. */
export type ReloadReason = 'start' | 'recover' | 'watch-canceled';
export const RELOAD_REASONS: readonly ReloadReason[] = ['start', 'recover', 'watch-canceled'];

export interface TenantProviderOptions {
  /** etcd endpoints (`http://127.0.0.1:2379`, comma-separated or a list); or pass `client`. */
  endpoints?: string | readonly string[];
  /** TLS and auth of the client made on `endpoints` (src/tenancy/etcd.ts); its files are re-read while it runs. */
  security?: EtcdSecurity;
  /** How often the `security` files are re-read; default 10 s. */
  securityReloadMs?: number;
  /** A client owned by the caller (not closed by stop()). */
  client?: Etcd3;
  /** Namespace prefix; default `jxt/`. */
  prefix?: string;
  /** Where to keep the file cache; no cache when unset. */
  cacheFile?: string;
  /** Per-request deadline of etcd reads (and so how long start waits before using the cache). */
  requestTimeoutMs?: number;
  /** The reconnect schedule; default 1 s, ×1.5 per failed attempt, at most 30 s (jittered). */
  backoff?: BackoffLimits;
  logger?: Logger;
}

interface ProviderEvents {
  /** A new snapshot is in force. */
  snapshot: [snapshot: TenantSnapshot];
  state: [state: WatchState];
  reload: [reason: ReloadReason];
}

type WatchOutcome =
  | { kind: 'disconnected'; error: unknown }
  | { kind: 'canceled'; error: unknown }
  /** The client was replaced (renewed credentials): watch again on the new one, at once. */
  | { kind: 'renewed' }
  | { kind: 'stopped' };

/** How long a watch may take to be acknowledged before the attempt counts as failed. */
const WATCH_CREATE_TIMEOUT_MS = 10_000;

export class TenantProvider extends EventEmitter<ProviderEvents> {
  readonly prefix: string;
  /** Replaced when the credentials' files change (only an owned client). */
  private client: Etcd3;
  private readonly ownsClient: boolean;
  private readonly endpoints: string | readonly string[];
  private readonly security: EtcdSecurity | undefined;
  private readonly securityReloadMs: number;
  private securityInUse: Partial<IOptions> = {};
  private securityTimer: NodeJS.Timeout | undefined;
  private readonly securityFiles: LastGoodCredentials;
  private readonly cache: SnapshotFileCache | undefined;
  private readonly log: Logger;
  private readonly backoff: Backoff;
  private readonly requestTimeoutMs: number;

  private current: TenantSnapshot = EMPTY_SNAPSHOT;
  private state: WatchState = 'starting';
  /** Every change up to this revision is in `current`; a watch resumes right after it. */
  private seenRevision = 0;
  private readonly reloadCounts = new Map<ReloadReason, number>(RELOAD_REASONS.map((r) => [r, 0]));
  private readonly rejectedCounts = new Map<ConfigKind, number>();
  private readonly skippedCounts = new Map<ConfigKind, number>();

  private started = false;
  private stopped = false;
  private readonly stopSignal = new AbortController();
  private loop: Promise<void> | undefined;
  /** Ends the current watch session with the given outcome. */
  private endWatch: ((outcome: WatchOutcome) => void) | undefined;
  /** Bumped when a watch ends, so late events of an old watch are dropped. */
  private generation = 0;
  private pending: IWatchResponse['events'] = [];
  /** Set when watch events could not be applied: only a full read can be trusted then. */
  private applyFailed = false;
  private flushScheduled = false;

  constructor(options: TenantProviderOptions) {
    super();
    if (options.client === undefined && options.endpoints === undefined)
      throw new Error('TenantProvider needs endpoints or a client');
    this.prefix = normalizePrefix(options.prefix ?? DEFAULT_TENANT_PREFIX);
    this.ownsClient = options.client === undefined;
    this.endpoints = options.endpoints ?? [];
    this.security = options.security;
    this.securityReloadMs = options.securityReloadMs ?? 10_000;
    if (options.client === undefined) this.securityInUse = etcdSecurityOptions(this.endpoints, this.security);
    this.client = options.client ?? createEtcdClient(this.endpoints, this.securityInUse);
    this.log = options.logger ?? rootLogger.child({ component: 'tenancy' });
    this.securityFiles = new LastGoodCredentials(this.log, 'etcd credential files');
    this.cache = options.cacheFile ? new SnapshotFileCache(options.cacheFile, this.prefix, this.log) : undefined;
    this.backoff = new Backoff(options.backoff ?? { initialMs: 1000, maxMs: 30_000, multiplier: 1.5 });
    this.requestTimeoutMs = options.requestTimeoutMs ?? 5000;
  }

  /** Creates a provider and waits for its first snapshot (from etcd, or from the cache). */
  static async start(options: TenantProviderOptions): Promise<TenantProvider> {
    const provider = new TenantProvider(options);
    await provider.start();
    return provider;
  }

  /**
   * Loads the configuration and starts watching. Resolves once a snapshot is in force; rejects
   * when etcd is unreachable and there is no usable cache.
   */
  async start(): Promise<void> {
    if (this.started) throw new Error('TenantProvider already started');
    this.started = true;
    if (this.ownsClient && this.security !== undefined)
      this.securityTimer = setInterval(() => this.renewCredentials(), this.securityReloadMs).unref();
    try {
      await this.reload('start');
    } catch (err) {
      this.log.warn({ err: errorText(err) }, 'etcd unreachable at start; trying the tenant cache');
      const cached = await this.cache?.load();
      if (cached === undefined) {
        this.stopped = true;
        clearInterval(this.securityTimer);
        this.setState('stopped');
        if (this.ownsClient) this.client.close();
        throw new Error(
          `cannot load tenant configuration: etcd unreachable (${errorText(err)}) and ` +
            (this.cache ? `no usable cache at ${this.cache.file}` : 'no cache file configured'),
          { cause: err },
        );
      }
      const update = buildSnapshot(cached.entries, { revision: cached.revision, source: 'cache' });
      this.report(update);
      this.swap(update.snapshot);
      this.setState('cache');
      this.log.info(
        { revision: cached.revision, savedAt: cached.savedAt, tenants: update.snapshot.tenantCount },
        'serving tenant configuration from the cache',
      );
    }
    this.loop = this.run();
  }

  /** Stops watching, writes the cache one last time, closes an owned client. */
  async stop(): Promise<void> {
    if (this.stopped) return;
    this.stopped = true;
    clearInterval(this.securityTimer);
    this.stopSignal.abort();
    this.endWatch?.({ kind: 'stopped' });
    await this.loop;
    await this.cache?.flush();
    if (this.ownsClient) this.client.close();
    this.setState('stopped');
  }

  // -------------------------------------------------------------------------------------------
  // State

  /** The snapshot in force. Hold it to read several values from one consistent revision. */
  get snapshot(): TenantSnapshot {
    return this.current;
  }

  get watchState(): WatchState {
    return this.state;
  }

  /** The revision of the data in force (0 before the first load). */
  get revision(): number {
    return this.current.revision;
  }

  /** When the snapshot in force was assembled (epoch ms; 0 before the first load). */
  get lastUpdateTime(): number {
    return this.current.updatedAt;
  }

  /** Full reads of the namespace so far, by reason. */
  reloadCount(reason?: ReloadReason): number {
    if (reason !== undefined) return this.reloadCounts.get(reason) ?? 0;
    let total = 0;
    for (const n of this.reloadCounts.values()) total += n;
    return total;
  }

  /** Values skipped as malformed so far, by kind of key. */
  rejectedCount(kind: ConfigKind): number {
    return this.rejectedCounts.get(kind) ?? 0;
  }

  /** Invalid parts of values skipped so far (an alias, an unknown httpType) while the rest applied, by kind of key. */
  skippedItemCount(kind: ConfigKind): number {
    return this.skippedCounts.get(kind) ?? 0;
  }

  /** Resolves once every change up to `revision` has been seen (e.g. after a publisher's write). */
  async waitForRevision(revision: number, timeoutMs = 10_000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (this.seenRevision < revision) {
      if (this.stopped) throw new Error('TenantProvider stopped');
      if (Date.now() > deadline)
        throw new Error(`revision ${revision} not seen within ${timeoutMs} ms (at ${this.seenRevision})`);
      await sleep(5);
    }
  }

  // -------------------------------------------------------------------------------------------
  // Getters: all read the snapshot in force, without locks.

  getTenantMeta(id: number): TenantMeta | undefined {
    return this.current.getTenantMeta(id);
  }

  isTenantEnabled(id: number): boolean {
    return this.current.isTenantEnabled(id);
  }

  getAllTenantIds(): number[] {
    return this.current.getAllTenantIds();
  }

  getDatabaseConfig(id: number, serviceCode: string): DatabaseConfig | undefined {
    return this.current.getDatabaseConfig(id, serviceCode);
  }

  getAllDatabaseConfigs(id: number): Map<string, DatabaseConfig> {
    return this.current.getAllDatabaseConfigs(id);
  }

  getFtpConfigs(id: number): FtpConfig[] {
    return this.current.getFtpConfigs(id);
  }

  getFtpConfigByUsername(username: string): FtpConfig | undefined {
    return this.current.getFtpConfigByUsername(username);
  }

  getActiveFtpConfigs(id: number): FtpConfig[] {
    return this.current.getActiveFtpConfigs(id);
  }

  getStorageConfig(id: number): StorageConfig | undefined {
    return this.current.getStorageConfig(id);
  }

  getWvpConfig(id: number): WvpConfig | undefined {
    return this.current.getWvpConfig(id);
  }

  getDomainConfig(id: number): DomainConfig | undefined {
    return this.current.getDomainConfig(id);
  }

  getTenantIdByDomain(domain: string): number | undefined {
    return this.current.getTenantIdByDomain(domain);
  }

  getTenantIdByCode(code: string): number | undefined {
    return this.current.getTenantIdByCode(code);
  }

  /** The published resolver config; null when none is published. */
  getResolverConfig(): ResolverConfig | null {
    return this.current.getResolverConfig();
  }

  /** The config in force (published or default), as a copy the caller may modify. */
  getResolverConfigOrDefault(): ResolverConfig {
    return this.current.getResolverConfigOrDefault();
  }

  resolveHttp(req: HttpRequestLike): TenantResolution {
    return resolveHttpTenant(req, this.current);
  }

  resolveFtp(username: string): TenantResolution {
    return resolveFtpTenant(username, this.current);
  }

  // -------------------------------------------------------------------------------------------
  // Loading and watching

  private async run(): Promise<void> {
    let reloadReason: ReloadReason | undefined = this.current.source === 'cache' ? 'recover' : undefined;
    while (!this.stopped) {
      if (reloadReason !== undefined) {
        try {
          await this.reload(reloadReason);
          reloadReason = undefined;
        } catch (err) {
          if (this.stopped) break;
          const delayMs = this.backoff.next();
          this.log.warn({ err: errorText(err), retryInMs: delayMs }, 'cannot read tenant configuration from etcd');
          if (this.state !== 'cache') this.setState('reconnecting');
          await this.pause(delayMs);
          continue;
        }
      }
      const outcome = await this.watchFrom(this.seenRevision + 1);
      if (outcome.kind === 'stopped' || this.stopped) break;
      if (outcome.kind === 'renewed') continue;
      if (outcome.kind === 'canceled' || this.applyFailed) {
        this.applyFailed = false;
        // Typically: the revision to resume from was compacted away. Only a full read recovers.
        this.log.warn(
          { err: errorText(outcome.error), fromRevision: this.seenRevision + 1 },
          'tenant watch cannot resume (canceled by etcd, or its events could not be applied); reading everything again',
        );
        reloadReason = 'watch-canceled';
        continue;
      }
      const delayMs = this.backoff.next();
      this.log.warn(
        { err: errorText(outcome.error), retryInMs: delayMs, fromRevision: this.seenRevision + 1 },
        'tenant watch lost; reconnecting',
      );
      if (this.state !== 'cache') this.setState('reconnecting');
      await this.pause(delayMs);
    }
  }

  /** Reads the whole namespace at one revision and replaces the snapshot. */
  private async reload(reason: ReloadReason): Promise<void> {
    const listing = await listPrefix(this.client, this.prefix, { timeoutMs: this.requestTimeoutMs });
    if (this.stopped) return;
    const update = buildSnapshot(
      listing.kvs.map((kv) => [kv.key, kv.value] as const),
      {
        revision: listing.revision,
        source: 'etcd',
        fallback: this.current.source === 'empty' ? undefined : this.current,
      },
    );
    this.seenRevision = listing.revision;
    this.reloadCounts.set(reason, (this.reloadCounts.get(reason) ?? 0) + 1);
    this.report(update);
    this.swap(update.snapshot);
    this.notify('reload', reason);
    this.log.info(
      {
        reason,
        revision: listing.revision,
        keys: listing.kvs.length,
        tenants: update.snapshot.tenantCount,
        resolver: update.snapshot.resolverConfig !== null,
      },
      'tenant configuration loaded from etcd',
    );
  }

  /** One watch session: resolves when it ends, with why. */
  private watchFrom(startRevision: number): Promise<WatchOutcome> {
    return new Promise<WatchOutcome>((resolve) => {
      const generation = this.generation;
      const client = this.client;
      const watcher: Watcher = client.watch().prefix(this.prefix).startRevision(String(startRevision)).watcher();
      let ended = false;
      const end = (outcome: WatchOutcome) => {
        if (ended) return;
        ended = true;
        clearTimeout(createTimer);
        this.flushPending(); // what arrived before the break is valid and in order
        this.generation++;
        this.endWatch = undefined;
        void watcher
          .cancel()
          .catch(() => undefined)
          .finally(() => {
            // A client replaced while this watch ran is closed once the watch is off it.
            if (client !== this.client && this.ownsClient) client.close();
          });
        resolve(outcome);
      };
      const createTimer = setTimeout(
        () =>
          end({ kind: 'disconnected', error: new Error(`watch not established within ${WATCH_CREATE_TIMEOUT_MS} ms`) }),
        WATCH_CREATE_TIMEOUT_MS,
      );
      this.endWatch = end;
      watcher.on('connected', (res: IWatchResponse) => {
        clearTimeout(createTimer);
        // A restored or wiped etcd is behind us: a watch from our revision would wait for
        // revisions that mean something else. Only a full read is right.
        if (Number(res.header.revision) < startRevision - 1) {
          end({
            kind: 'canceled',
            error: new Error(`etcd is at revision ${res.header.revision}, behind ${startRevision - 1}`),
          });
          return;
        }
        this.backoff.reset();
        this.setState('live');
        this.log.info({ fromRevision: startRevision }, 'watching tenant configuration');
      });
      watcher.on('data', (res: IWatchResponse) => {
        if (generation === this.generation) this.receive(res);
      });
      watcher.on('disconnected', (error: unknown) => end({ kind: 'disconnected', error }));
      watcher.on('error', (error: unknown) => end({ kind: 'canceled', error }));
    });
  }

  /**
   * Re-reads the credentials' files; on a change that loads, makes a new client and moves the
   * watch to it. The watch's end applies what it received, so the next one starts right after
   * the last revision seen: no update is lost or applied twice, and readers keep the snapshot.
   */
  private renewCredentials(): void {
    if (this.stopped) return;
    const next = this.securityFiles.next(
      () => etcdSecurityOptions(this.endpoints, this.security),
      this.securityInUse,
      sameEtcdSecurity,
    );
    if (!next) return;
    const old = this.client;
    this.securityInUse = next;
    this.client = createEtcdClient(this.endpoints, next);
    this.log.info('etcd credentials changed in their files: moving the tenant watch to a new client');
    if (this.endWatch) this.endWatch({ kind: 'renewed' });
    // No watch on it (between reads): an unfinished read fails and is retried on the new client.
    else old.close();
  }

  private receive(res: IWatchResponse): void {
    if (res.events.length === 0) {
      // Progress notification: everything up to this revision has been sent.
      if (this.pending.length === 0) this.seenRevision = Math.max(this.seenRevision, Number(res.header.revision));
      return;
    }
    for (const event of res.events) this.pending.push(event);
    if (!this.flushScheduled) {
      this.flushScheduled = true;
      // Responses that arrive together become one snapshot (one index rebuild for a burst).
      // Responses end at revision boundaries, so a snapshot never holds half a transaction.
      setImmediate(() => {
        this.flushScheduled = false;
        this.flushPending();
      });
    }
  }

  private flushPending(): void {
    if (this.pending.length === 0) return;
    const events = this.pending;
    this.pending = [];
    try {
      this.apply(events);
    } catch (err) {
      // A bug here must not leave readers on a snapshot that silently stopped following etcd:
      // drop this watch and read everything again.
      this.log.error({ err: errorText(err) }, 'failed to apply tenant watch events; reading everything again');
      this.applyFailed = true;
      this.endWatch?.({ kind: 'canceled', error: err });
    }
  }

  private apply(events: IWatchResponse['events']): void {
    const cut = this.prefix.length;
    let revision = this.seenRevision;
    const changes: KeyChange[] = events.map((event) => {
      revision = Math.max(revision, Number(event.kv.mod_revision));
      return {
        key: event.kv.key.toString('utf8').slice(cut),
        value: event.type === 'Put' ? event.kv.value.toString('utf8') : null,
      };
    });
    const update = applyChanges(this.current, changes, { revision });
    this.seenRevision = revision;
    this.report(update);
    // Unknown keys (e.g. tenants/_index/...) leave the snapshot as it is: no copy, no swap.
    if (update.changed) this.swap(update.snapshot);
  }

  private swap(snapshot: TenantSnapshot): void {
    this.current = snapshot;
    if (snapshot.source === 'etcd') this.cache?.schedule(snapshot);
    this.notify('snapshot', snapshot);
  }

  private report(update: SnapshotUpdate): void {
    for (const r of update.rejected) {
      const counts = r.item === undefined ? this.rejectedCounts : this.skippedCounts;
      counts.set(r.kind, (counts.get(r.kind) ?? 0) + 1);
      if (r.item === undefined) {
        this.log.error(
          { key: this.prefix + r.key, reason: r.reason },
          'malformed tenant configuration value skipped; the last valid value stays',
        );
      } else {
        this.log.warn(
          { key: this.prefix + r.key, item: r.item, reason: r.reason },
          'invalid part of a tenant configuration value skipped; the rest applies',
        );
      }
    }
    for (const c of update.newConflicts) {
      this.log.warn(
        { index: c.index, value: c.value, winner: c.winner, loser: c.loser },
        'two tenants claim the same value; the later tenant wins',
      );
    }
  }

  private setState(state: WatchState): void {
    if (this.state === state) return;
    this.state = state;
    this.notify('state', state);
  }

  /** Emits to listeners; a throwing listener is logged, never allowed to break the watch. */
  private notify<E extends keyof ProviderEvents>(event: E, ...args: ProviderEvents[E]): void {
    try {
      (this.emit as (event: E, ...args: ProviderEvents[E]) => boolean)(event, ...args);
    } catch (err) {
      this.log.error({ event, err: errorText(err) }, 'tenant provider listener failed');
    }
  }

  private async pause(ms: number): Promise<void> {
    await sleep(ms, undefined, { signal: this.stopSignal.signal }).catch(() => undefined);
  }
}

function errorText(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
