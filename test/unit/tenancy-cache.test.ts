import { mkdtemp, readFile, readdir, rm, stat, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { logger } from '../../src/log.js';
import { SnapshotFileCache } from '../../src/tenancy/cache.js';
import { buildSnapshot } from '../../src/tenancy/snapshot.js';

const quiet = logger.child({ test: 'tenancy-cache' });
quiet.level = 'silent';

let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'tenancy-cache-'));
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

const snapshotAt = (revision: number, name: string) =>
  buildSnapshot(
    [
      ['tenants/1/meta', JSON.stringify({ code: 'acme', name, status: 'active' })],
      ['tenants/1/domain/primary', 'acme.example.com'],
    ],
    { revision },
  ).snapshot;

describe('SnapshotFileCache', () => {
  it('saves through a temp file, owner-only, and loads the same entries back', async () => {
    const file = path.join(dir, 'nested', 'tenants.json');
    const cache = new SnapshotFileCache(file, 'jxt/', quiet);
    cache.schedule(snapshotAt(5, 'v5'));
    await cache.flush();
    expect((await stat(file)).mode & 0o777).toBe(0o600);
    expect(await readdir(path.dirname(file))).toEqual(['tenants.json']); // no temp file left
    const loaded = await cache.load();
    expect(loaded?.revision).toBe(5);
    const back = buildSnapshot(loaded!.entries, { revision: loaded!.revision, source: 'cache' }).snapshot;
    expect(back.getTenantMeta(1)?.name).toBe('v5');
    expect(back.getTenantIdByDomain('acme.example.com')).toBe(1);
  });

  it('coalesces a burst into one write of the latest snapshot', async () => {
    const file = path.join(dir, 'tenants.json');
    const cache = new SnapshotFileCache(file, 'jxt/', quiet, 20);
    for (let rev = 1; rev <= 50; rev++) cache.schedule(snapshotAt(rev, `v${rev}`));
    await cache.flush();
    const loaded = await cache.load();
    expect(loaded?.revision).toBe(50);
    expect(JSON.parse(new Map(loaded!.entries).get('tenants/1/meta')!).name).toBe('v50');
  });

  it('writes a large snapshot in chunks, letting the event loop run in between', async () => {
    const entries: Array<[string, string]> = [];
    for (let id = 1; id <= 20_000; id++) {
      entries.push([`tenants/${id}/meta`, JSON.stringify({ code: `t${id}`, name: `Tenant ${id}`, status: 'active' })]);
      entries.push([`tenants/${id}/domain/primary`, `t${id}.example.com`]);
    }
    const big = buildSnapshot(entries, { revision: 9 }).snapshot;
    // The event loop must get turns while the 40,000 lines are encoded and written: count how
    // often a setImmediate callback runs meanwhile (a single-shot write gives it one or two).
    // A count, not a time: a loaded machine pauses any process, but cannot fake turns.
    const cache = new SnapshotFileCache(path.join(dir, 'big.json'), 'jxt/', quiet);
    let turns = 0;
    let done = false;
    const tick = () => {
      turns++;
      if (!done) setImmediate(tick);
    };
    setImmediate(tick);
    cache.schedule(big);
    await cache.flush();
    done = true;
    expect(turns).toBeGreaterThanOrEqual(20); // 40 chunks of 1,000 lines
    const loaded = await cache.load();
    expect(loaded?.entries).toHaveLength(40_000);
    expect(buildSnapshot(loaded!.entries, { revision: 9 }).snapshot.getTenantIdByDomain('t9999.example.com')).toBe(
      9999,
    );
  });

  it('writes on its own after the debounce, without flush', async () => {
    const file = path.join(dir, 'tenants.json');
    const cache = new SnapshotFileCache(file, 'jxt/', quiet, 10);
    cache.schedule(snapshotAt(3, 'v3'));
    for (let i = 0; i < 100 && (await cache.load()) === undefined; i++) await new Promise((r) => setTimeout(r, 10));
    expect((await cache.load())?.revision).toBe(3);
  });

  it('refuses a cache written for another prefix, in another format, or cut short', async () => {
    const file = path.join(dir, 'tenants.json');
    const writer = new SnapshotFileCache(file, 'other/', quiet);
    writer.schedule(snapshotAt(1, 'x'));
    await writer.flush();
    expect(await new SnapshotFileCache(file, 'jxt/', quiet).load()).toBeUndefined();
    const reader = new SnapshotFileCache(file, 'other/', quiet);
    expect(await reader.load()).toBeDefined();
    const lines = (await readFile(file, 'utf8')).trimEnd().split('\n');
    await writeFile(file, `${lines.slice(0, -2).join('\n')}\n${lines.at(-1)}\n`); // an entry missing
    expect(await reader.load()).toBeUndefined();
    await writeFile(file, lines.slice(0, -1).join('\n')); // no trailer
    expect(await reader.load()).toBeUndefined();
    await writeFile(file, '{"format":"something-else"}');
    expect(await reader.load()).toBeUndefined();
    await writeFile(file, 'not json');
    expect(await reader.load()).toBeUndefined();
  });

  it('reports a missing file as no cache', async () => {
    expect(await new SnapshotFileCache(path.join(dir, 'absent.json'), 'jxt/', quiet).load()).toBeUndefined();
  });
});
