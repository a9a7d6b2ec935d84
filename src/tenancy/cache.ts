/**
 * The file cache that lets a service start while etcd is down.
 *
 * It stores the snapshot as key/value pairs (snapshotEntries), so loading it goes through the
 * same parsing and index building as an etcd list: a cache-started provider answers domain and
 * code lookups at once.
 *
 * Saving is asynchronous in every sense: coalesced (a burst of changes is written once, with the
 * latest snapshot, at most about once per `debounceMs`), and written in chunks that yield to the
 * event loop, because encoding 10,000 tenants in one go would stall request handling for a few
 * hundred milliseconds. The snapshot is immutable, so encoding it across ticks is safe. Each save
 * goes to a temporary file that is synced and renamed over the cache, so a crash mid-write leaves
 * the previous cache intact. The file holds database passwords as published: owner-only.
 *
 * Format: JSON lines. A header `{format, prefix, revision, savedAt}`, one `[key, value]` per
 * entry, and a trailer `{end: count}`.
 */
import { open, readFile, rename, rm, mkdir } from 'node:fs/promises';
import path from 'node:path';
import type { Logger } from '../log.js';
import { snapshotEntries, type TenantSnapshot } from './snapshot.js';

const FORMAT = 'durable-operators/tenant-cache@2';
const LINES_PER_CHUNK = 1000;

interface CacheHeader {
  format: string;
  prefix: string;
  revision: number;
  savedAt: string;
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
    /** Coalescing window: changes within it are written once. */
    private readonly debounceMs = 1000,
  ) {}

  /** The cached configuration, or undefined when there is no usable cache (logged). */
  async load(): Promise<CachedConfig | undefined> {
    let text: string;
    try {
      text = await readFile(this.file, 'utf8');
    } catch (err) {
      this.log.warn({ file: this.file, err }, 'no tenant cache file');
      return undefined;
    }
    try {
      const lines = text.split('\n');
      if (lines.at(-1) === '') lines.pop();
      const header = JSON.parse(lines[0] ?? '') as Partial<CacheHeader>;
      if (header.format !== FORMAT) throw new Error(`unknown format ${JSON.stringify(header.format)}`);
      // A cache written for another namespace would serve another platform's tenants.
      if (header.prefix !== this.prefix) {
        throw new Error(`written for prefix ${JSON.stringify(header.prefix)}, not ${JSON.stringify(this.prefix)}`);
      }
      if (typeof header.revision !== 'number') throw new Error('no revision');
      const trailer = JSON.parse(lines.at(-1) ?? '') as { end?: number };
      if (trailer.end !== lines.length - 2) throw new Error('truncated');
      const entries: Array<[string, string]> = [];
      for (let i = 1; i < lines.length - 1; i++) {
        const entry: unknown = JSON.parse(lines[i]!);
        if (!Array.isArray(entry) || typeof entry[0] !== 'string' || typeof entry[1] !== 'string')
          throw new Error(`bad line ${i + 1}`);
        entries.push([entry[0], entry[1]]);
      }
      return { revision: header.revision, savedAt: String(header.savedAt), entries };
    } catch (err) {
      this.log.error({ file: this.file, err }, 'tenant cache file unusable');
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
    const tmp = `${this.file}.${process.pid}.tmp`;
    try {
      await mkdir(path.dirname(this.file), { recursive: true });
      const handle = await open(tmp, 'w', 0o600);
      try {
        const header: CacheHeader = {
          format: FORMAT,
          prefix: this.prefix,
          revision: snapshot.revision,
          savedAt: new Date().toISOString(),
        };
        let chunk: string[] = [JSON.stringify(header)];
        let count = 0;
        for (const entry of snapshotEntries(snapshot)) {
          chunk.push(JSON.stringify(entry));
          count++;
          if (chunk.length >= LINES_PER_CHUNK) {
            await handle.write(`${chunk.join('\n')}\n`); // yields to the event loop between chunks
            chunk = [];
          }
        }
        chunk.push(JSON.stringify({ end: count }));
        await handle.write(`${chunk.join('\n')}\n`);
        await handle.sync();
      } finally {
        await handle.close();
      }
      await rename(tmp, this.file);
      this.savedRevision = snapshot.revision;
      this.log.debug({ file: this.file, revision: snapshot.revision }, 'tenant cache saved');
    } catch (err) {
      this.log.error({ file: this.file, err }, 'failed to save tenant cache');
      await rm(tmp, { force: true }).catch(() => undefined);
    }
  }
}
