/**
 * The file cache that lets a service start while etcd is down.
 *
 * It stores the snapshot as key/value pairs (snapshotEntries), so loading it goes through the
 * same parsing and index building as an etcd list: a cache-started provider answers domain and
 * code lookups at once (the original stored its maps without the indexes and rebuilt nothing).
 *
 * Saves are asynchronous and coalesced: a burst of changes writes the file once, with the latest
 * snapshot. Each write goes to a temporary file that is then renamed over the cache, so a crash
 * mid-write leaves the previous cache intact. The file holds database passwords as published:
 * it is created readable by the owner only.
 */
import { mkdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import type { Logger } from '../log.js';
import { snapshotEntries, type TenantSnapshot } from './snapshot.js';

const FORMAT = 'durable-operators/tenant-cache@1';

interface CacheFile {
  format: typeof FORMAT;
  prefix: string;
  revision: number;
  savedAt: string;
  entries: Record<string, string>;
}

export interface CachedConfig {
  revision: number;
  savedAt: string;
  entries: Array<[string, string]>;
}

export class SnapshotFileCache {
  private latest: TenantSnapshot | undefined;
  private timer: NodeJS.Timeout | undefined;
  /** Writes run one after another on this chain; each writes the latest snapshot at its turn. */
  private chain: Promise<void> = Promise.resolve();
  private savedRevision = -1;

  constructor(
    readonly file: string,
    private readonly prefix: string,
    private readonly log: Logger,
    /** Coalescing window: a burst of changes within it is written once. */
    private readonly debounceMs = 50,
  ) {}

  /** The cached configuration, or undefined when there is no usable cache (logged). */
  async load(): Promise<CachedConfig | undefined> {
    let text: string;
    try {
      text = await readFile(this.file, 'utf8');
    } catch (err) {
      this.log.warn({ file: this.file, err: (err as Error).message }, 'no tenant cache file');
      return undefined;
    }
    try {
      const doc = JSON.parse(text) as Partial<CacheFile>;
      if (doc.format !== FORMAT) throw new Error(`unknown format ${JSON.stringify(doc.format)}`);
      // A cache written for another namespace would serve another platform's tenants.
      if (doc.prefix !== this.prefix) throw new Error(`written for prefix ${JSON.stringify(doc.prefix)}, not ${JSON.stringify(this.prefix)}`);
      if (typeof doc.revision !== 'number' || typeof doc.entries !== 'object' || doc.entries === null) throw new Error('missing revision or entries');
      const entries = Object.entries(doc.entries).filter((e): e is [string, string] => typeof e[1] === 'string');
      return { revision: doc.revision, savedAt: String(doc.savedAt), entries };
    } catch (err) {
      this.log.error({ file: this.file, err: (err as Error).message }, 'tenant cache file unusable');
      return undefined;
    }
  }

  /** Saves `snapshot` soon; a newer snapshot scheduled before the write starts replaces it. */
  schedule(snapshot: TenantSnapshot): void {
    this.latest = snapshot;
    if (this.timer !== undefined) return;
    this.timer = setTimeout(() => {
      this.timer = undefined;
      this.chain = this.chain.then(() => this.writeLatest());
    }, this.debounceMs);
    this.timer.unref();
  }

  /** Writes whatever is scheduled now and waits until it is on disk. */
  async flush(): Promise<void> {
    if (this.timer !== undefined) {
      clearTimeout(this.timer);
      this.timer = undefined;
    }
    this.chain = this.chain.then(() => this.writeLatest());
    await this.chain;
  }

  private async writeLatest(): Promise<void> {
    const snapshot = this.latest;
    this.latest = undefined;
    if (snapshot === undefined || snapshot.revision === this.savedRevision) return;
    await this.write(snapshot);
  }

  private async write(snapshot: TenantSnapshot): Promise<void> {
    const doc: CacheFile = {
      format: FORMAT,
      prefix: this.prefix,
      revision: snapshot.revision,
      savedAt: new Date().toISOString(),
      entries: Object.fromEntries(snapshotEntries(snapshot)),
    };
    const tmp = `${this.file}.${process.pid}.tmp`;
    try {
      await mkdir(path.dirname(this.file), { recursive: true });
      await writeFile(tmp, JSON.stringify(doc), { mode: 0o600 });
      await rename(tmp, this.file);
      this.savedRevision = snapshot.revision;
      this.log.debug({ file: this.file, revision: snapshot.revision }, 'tenant cache saved');
    } catch (err) {
      this.log.error({ file: this.file, err: (err as Error).message }, 'failed to save tenant cache');
      await rm(tmp, { force: true }).catch(() => undefined);
    }
  }
}
