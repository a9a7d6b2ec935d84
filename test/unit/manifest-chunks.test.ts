import { createHash } from 'node:crypto';
import { gunzipSync, gzipSync } from 'node:zlib';
import { beforeAll, describe, expect, it } from 'vitest';
import {
  ChunkCorruptError,
  MAX_CHUNK_DATA_CHARS,
  ObjectTooLargeError,
  checksumOf,
  decodeChunk,
  orderObjects,
  packChunks,
  reassemble,
  type ChunkInfo,
  type PackedChunk,
} from '../../src/codec/manifest-chunks.js';

/** mulberry32: seeded, so every "random" payload is the same on every run. */
function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const B64 = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/';

/** Text that gzip can barely compress (6 bits of entropy per character). */
function noise(seed: number, length: number): string {
  const rand = prng(seed);
  const out: string[] = [];
  for (let i = 0; i < length; i++) out.push(B64[Math.floor(rand() * 64)]!);
  return out.join('');
}

function configMap(namespace: string, name: string, data: Record<string, string> = {}) {
  return { apiVersion: 'v1', kind: 'ConfigMap', metadata: { namespace, name }, data };
}

/** Characters of `spec.data` for a chunk holding only `obj`, computed without the module. */
function encodedAlone(obj: object): number {
  return gzipSync(JSON.stringify([obj])).toString('base64').length;
}

/** Chunks as both the checkpoint status lists them and as read back: what the packer wrote. */
const named = (chunks: PackedChunk[], prefix = 'cp-x'): (PackedChunk & ChunkInfo)[] =>
  chunks.map((c) => ({ ...c, name: `${prefix}-${c.index}` }));

function roundTrip(chunks: PackedChunk[]): unknown[] {
  const infos = named(chunks);
  return reassemble(infos, [...infos].reverse());
}

/** 1,000 ConfigMaps of about 1 KiB of JSON: config text with some random values. */
function thousandConfigMaps(): ReturnType<typeof configMap>[] {
  return Array.from({ length: 1000 }, (_, i) =>
    configMap(`team-${i % 10}`, `app-${i}`, {
      'application.properties': [
        'server.port=8080',
        `spring.datasource.url=jdbc:postgresql://db-${i % 7}.internal:5432/app_${i}`,
        'logging.level.root=INFO',
        ...Array.from({ length: 12 }, (_, j) => `feature.key-${j}=${noise(i * 100 + j, 40)}`),
      ].join('\n'),
    }),
  );
}

describe('orderObjects', () => {
  it('sorts by apiVersion, kind, namespace, name in code-unit order, cluster-scoped first', () => {
    const input = [
      configMap('b', 'x'),
      { apiVersion: 'apps/v1', kind: 'Deployment', metadata: { namespace: 'a', name: 'web' } },
      configMap('a', 'y'),
      { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'a' } },
      configMap('a', 'X'),
      { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'cluster-scoped' } },
    ];
    const keys = orderObjects(input).map(
      (o) => `${o.apiVersion}|${o.kind}|${o.metadata.namespace ?? ''}|${o.metadata.name}`,
    );
    expect(keys).toEqual([
      'apps/v1|Deployment|a|web',
      'v1|ConfigMap||cluster-scoped',
      'v1|ConfigMap|a|X', // 'X' (0x58) before 'y' (0x79), whatever the locale says
      'v1|ConfigMap|a|y',
      'v1|ConfigMap|b|x',
      'v1|Namespace||a',
    ]);
  });

  it('keeps the last of objects with the same key, and leaves the input alone', () => {
    const first = configMap('ns', 'dup', { v: '1' });
    const last = configMap('ns', 'dup', { v: '2' });
    const input = [first, configMap('ns', 'other'), last];
    const ordered = orderObjects(input);
    expect(ordered).toHaveLength(2);
    expect(ordered[0]).toBe(last);
    expect(input).toEqual([first, configMap('ns', 'other'), last]);
  });
});

describe('packChunks', () => {
  it('round-trips, in order, without duplicates', () => {
    const input = [
      configMap('b', 'two', { k: 'v' }),
      { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'b', labels: { ünïcode: '✓' } } },
      configMap('a', 'one', { k: 'v' }),
      configMap('b', 'two', { k: 'newer' }),
    ];
    const chunks = packChunks(input);
    expect(chunks).toHaveLength(1);
    expect(chunks[0]).toMatchObject({ index: 0, objectsCount: 3 });
    expect(roundTrip(chunks)).toEqual(orderObjects(input));
    expect(decodeChunk(chunks[0]!)).toEqual(orderObjects(input));
  });

  it('gives no chunks for no objects', () => {
    expect(packChunks([])).toEqual([]);
    expect(reassemble([], [])).toEqual([]);
  });

  it('gives identical chunks for the same objects in any order', () => {
    const objects = Array.from({ length: 300 }, (_, i) =>
      configMap(`ns-${i % 3}`, `cm-${i}`, { payload: noise(i, 50 + ((i * 37) % 400)) }),
    );
    const shuffled = [...objects];
    const rand = prng(7);
    for (let i = shuffled.length - 1; i > 0; i--) {
      const j = Math.floor(rand() * (i + 1));
      [shuffled[i], shuffled[j]] = [shuffled[j]!, shuffled[i]!];
    }
    const a = packChunks(objects, { maxDataChars: 4096 });
    expect(a.length).toBeGreaterThan(10);
    expect(packChunks(shuffled, { maxDataChars: 4096 })).toEqual(a);
    expect(packChunks(objects, { maxDataChars: 4096 })).toEqual(a);
  });

  it('keeps every chunk within a small limit, for compressible and incompressible objects of many sizes', () => {
    const limit = 4096;
    const rand = prng(42);
    const objects = Array.from({ length: 400 }, (_, i) => {
      const size = Math.floor(rand() * 2800);
      const payload = i % 2 === 0 ? noise(i, size) : 'abc '.repeat(size);
      return configMap('ns', `cm-${String(i).padStart(3, '0')}`, { payload });
    });
    const chunks = packChunks(objects, { maxDataChars: limit });
    expect(chunks.length).toBeGreaterThan(20);
    for (const c of chunks) expect(c.data.length).toBeLessThanOrEqual(limit);
    expect(chunks.map((c) => c.index)).toEqual(chunks.map((_, i) => i));
    expect(chunks.reduce((n, c) => n + c.objectsCount, 0)).toBe(objects.length);
    expect(roundTrip(chunks)).toEqual(orderObjects(objects));
  });

  it('records the gzip length and the SHA-256 hex of the gzip bytes', () => {
    const objects = Array.from({ length: 200 }, (_, i) => configMap('ns', `cm-${i}`, { p: noise(i, 300) }));
    const chunks = packChunks(objects, { maxDataChars: 8192 });
    expect(chunks.length).toBeGreaterThan(1);
    for (const c of chunks) {
      const gzip = Buffer.from(c.data, 'base64');
      expect(gzip.toString('base64')).toBe(c.data);
      expect(c.sizeBytes).toBe(gzip.length);
      expect(c.checksum).toBe(createHash('sha256').update(gzip).digest('hex'));
      expect(c.checksum).not.toBe(createHash('sha256').update(c.data).digest('hex'));
      expect(checksumOf(gzip)).toBe(c.checksum);
      expect(JSON.parse(gunzipSync(gzip).toString('utf8'))).toHaveLength(c.objectsCount);
    }
  });

  it('packs 1,000 ConfigMaps of about 1 KiB into few chunks', () => {
    const objects = thousandConfigMaps();
    const raw = JSON.stringify(objects).length;
    expect(raw / objects.length).toBeGreaterThan(900);
    expect(raw / objects.length).toBeLessThan(1300);
    const chunks = packChunks(objects);
    expect(chunks.length).toBeGreaterThanOrEqual(1);
    expect(chunks.length).toBeLessThanOrEqual(2);
    for (const c of chunks) expect(c.data.length).toBeLessThanOrEqual(MAX_CHUNK_DATA_CHARS);
    expect(chunks.reduce((n, c) => n + c.objectsCount, 0)).toBe(1000);
    expect(roundTrip(chunks)).toEqual(orderObjects(objects));
  });

  it('fills chunks to near the limit', () => {
    // The same 1,000 ConfigMaps in 64 KiB chunks: the estimate must not leave much unused.
    const chunks = packChunks(thousandConfigMaps(), { maxDataChars: 65_536 });
    expect(chunks.length).toBeGreaterThan(3);
    for (const c of chunks.slice(0, -1)) expect(c.data.length).toBeGreaterThan(0.9 * 65_536);
  });

  it('rejects a limit the CRD would not accept or that cannot hold anything', () => {
    for (const maxDataChars of [0, 10, 4096.5, MAX_CHUNK_DATA_CHARS + 1]) {
      expect(() => packChunks([configMap('ns', 'a')], { maxDataChars })).toThrow(RangeError);
    }
  });
});

/** The largest payload length n for which a chunk of makeObject(n) alone fits in limit characters. */
function largestFitting(limit: number, makeObject: (n: number) => object): number {
  // Encoded size is nearly proportional to n: start from a linear guess, widen until bracketed.
  const probe = 4096;
  const guess = Math.floor((probe * limit) / encodedAlone(makeObject(probe)));
  let lo = Math.max(0, guess - 1024);
  let hi = guess + 1024;
  while (encodedAlone(makeObject(lo)) > limit) lo = Math.max(0, lo - 4096);
  while (encodedAlone(makeObject(hi)) <= limit) hi += 4096;
  while (hi - lo > 1) {
    const mid = (lo + hi) >> 1;
    if (encodedAlone(makeObject(mid)) <= limit) lo = mid;
    else hi = mid;
  }
  return lo;
}

describe.each([
  ['a small limit', 4096],
  ['the CRD limit', MAX_CHUNK_DATA_CHARS],
])('at %s', (_label, limit) => {
  let bigNoise = '';
  const big = (n: number) => configMap('ns', 'big', { payload: bigNoise.slice(0, n) });
  let n = 0;
  beforeAll(() => {
    bigNoise = noise(limit, 2 * limit);
    n = largestFitting(limit, big);
  });

  it('stores an object that just fits in one chunk', () => {
    const chunks = packChunks([big(n)], { maxDataChars: limit });
    expect(chunks).toHaveLength(1);
    expect(chunks[0]!.data.length).toBe(encodedAlone(big(n)));
    expect(chunks[0]!.data.length).toBeLessThanOrEqual(limit);
    expect(chunks[0]!.data.length).toBeGreaterThan(limit - 8);
    expect(roundTrip(chunks)).toEqual([big(n)]);
  });

  it('moves a neighbour of an object that just fits to another chunk', () => {
    const small = configMap('ns', 'a-small', { v: 'x' });
    const chunks = packChunks([big(n), small], { maxDataChars: limit });
    expect(chunks.map((c) => c.objectsCount)).toEqual([1, 1]);
    for (const c of chunks) expect(c.data.length).toBeLessThanOrEqual(limit);
    expect(roundTrip(chunks)).toEqual([small, big(n)]);
  });

  it('rejects an object one character larger, naming it', () => {
    const tooBig = big(n + 1);
    const encoded = encodedAlone(tooBig);
    expect(encoded).toBeGreaterThan(limit);
    let error: unknown;
    try {
      packChunks([configMap('ns', 'a-small'), tooBig], { maxDataChars: limit });
    } catch (err) {
      error = err;
    }
    expect(error).toBeInstanceOf(ObjectTooLargeError);
    const e = error as ObjectTooLargeError;
    expect(e.object).toEqual({ apiVersion: 'v1', kind: 'ConfigMap', namespace: 'ns', name: 'big' });
    expect(e.encodedChars).toBe(encoded);
    expect(e.limit).toBe(limit);
    expect(e.message).toContain('ConfigMap ns/big');
    expect(e.message).toContain(encoded.toLocaleString('en-US'));
    expect(e.message).toContain(limit.toLocaleString('en-US'));
  });

  it('splits objects that fit two to a chunk but not three', () => {
    // Each about 40% of the limit, incompressible: two fit, a third never does.
    const size = Math.floor(n * 0.4);
    const objects = Array.from({ length: 5 }, (_, i) =>
      configMap('ns', `part-${i}`, { payload: bigNoise.slice(i * size, (i + 1) * size) }),
    );
    const chunks = packChunks(objects, { maxDataChars: limit });
    expect(chunks.map((c) => c.objectsCount)).toEqual([2, 2, 1]);
    for (const c of chunks) expect(c.data.length).toBeLessThanOrEqual(limit);
    expect(roundTrip(chunks)).toEqual(objects);
  });
});

describe('decodeChunk and reassemble', () => {
  const objects = Array.from({ length: 60 }, (_, i) =>
    configMap('ns', `cm-${String(i).padStart(2, '0')}`, { p: noise(i, 200) }),
  );
  const chunks = packChunks(objects, { maxDataChars: 4096 });
  const infos = named(chunks);

  const corruptError = (fn: () => unknown): ChunkCorruptError => {
    try {
      fn();
    } catch (err) {
      expect(err).toBeInstanceOf(ChunkCorruptError);
      return err as ChunkCorruptError;
    }
    throw new Error('no error thrown');
  };

  /** A chunk whose checksum is right for `gzip`, whatever `gzip` holds. */
  const wellSummed = (gzip: Buffer) => ({
    name: 'c',
    index: 0,
    data: gzip.toString('base64'),
    checksum: checksumOf(gzip),
  });

  it('needs several chunks for these cases', () => {
    expect(chunks.length).toBeGreaterThanOrEqual(3);
    expect(reassemble(infos, infos)).toEqual(objects);
  });

  it('detects a flipped character in data', () => {
    const data = infos[1]!.data;
    const at = Math.floor(data.length / 2);
    const flipped = data.slice(0, at) + (data[at] === 'A' ? 'B' : 'A') + data.slice(at + 1);
    const bad = { ...infos[1]!, data: flipped };
    const e = corruptError(() => decodeChunk(bad));
    expect(e.index).toBe(1);
    expect(e.chunkName).toBe('cp-x-1');
    expect(e.message).toMatch(/checksum mismatch/);
    corruptError(() =>
      reassemble(
        infos,
        infos.map((c) => (c.index === 1 ? bad : c)),
      ),
    );
  });

  it('detects characters outside base64', () => {
    const data = infos[0]!.data;
    const e = corruptError(() => decodeChunk({ ...infos[0]!, data: `${data.slice(0, 10)}!${data.slice(10)}` }));
    expect(e.message).toMatch(/base64/);
  });

  it('detects a wrong checksum in the chunk or in the checkpoint status', () => {
    const wrong = 'f'.repeat(64);
    expect(corruptError(() => decodeChunk({ ...infos[0]!, checksum: wrong })).message).toMatch(/checksum mismatch/);
    const inChunk = corruptError(() =>
      reassemble(
        infos,
        infos.map((c) => (c.index === 2 ? { ...c, checksum: wrong } : c)),
      ),
    );
    expect(inChunk.index).toBe(2);
    expect(inChunk.message).toMatch(/spec\.checksum/);
    const inStatus = corruptError(() =>
      reassemble(
        infos.map((c) => (c.index === 0 ? { ...c, checksum: wrong } : c)),
        infos,
      ),
    );
    expect(inStatus.index).toBe(0);
  });

  it('detects data that is not gzip, not JSON, or not an array of objects, even with a matching checksum', () => {
    expect(corruptError(() => decodeChunk(wellSummed(Buffer.from('not gzip at all')))).message).toMatch(/gzip/);
    expect(corruptError(() => decodeChunk(wellSummed(gzipSync('[{"a":1}')))).message).toMatch(/JSON/);
    expect(corruptError(() => decodeChunk(wellSummed(gzipSync('{"a":1}')))).message).toMatch(/array/);
    expect(corruptError(() => decodeChunk(wellSummed(gzipSync('[1,2]')))).message).toMatch(/objects/);
  });

  it('detects a missing chunk', () => {
    const e = corruptError(() =>
      reassemble(
        infos,
        infos.filter((c) => c.index !== 1),
      ),
    );
    expect(e.index).toBe(1);
    expect(e.chunkName).toBe('cp-x-1');
    expect(e.message).toMatch(/missing/);
  });

  it('detects two chunks with the same index', () => {
    const e = corruptError(() => reassemble(infos, [...infos, { ...infos[0]!, name: 'cp-y-0' }]));
    expect(e.index).toBe(0);
    expect(e.message).toMatch(/two chunks/);
  });

  it('detects a chunk the checkpoint does not list', () => {
    const extra = { ...infos[0]!, index: infos.length, name: `cp-x-${infos.length}` };
    expect(corruptError(() => reassemble(infos, [...infos, extra])).index).toBe(infos.length);
  });

  it('detects a checkpoint status whose indexes are not 0..n-1', () => {
    const gap = infos.filter((c) => c.index !== 1);
    expect(corruptError(() => reassemble(gap, gap)).message).toMatch(/no chunk with index 1/);
    const twice = [...infos, infos[0]!];
    expect(corruptError(() => reassemble(twice, infos)).message).toMatch(/listed twice/);
    const negative = [{ ...infos[0]!, index: -1 }, ...infos];
    expect(corruptError(() => reassemble(negative, infos)).message).toMatch(/invalid index/);
  });

  it('detects a count mismatch', () => {
    const status = infos.map((c) => (c.index === 1 ? { ...c, objectsCount: c.objectsCount + 1 } : c));
    const e = corruptError(() =>
      reassemble(
        status,
        chunks.map((c) => ({ index: c.index, data: c.data, checksum: c.checksum })),
      ),
    );
    expect(e.index).toBe(1);
    expect(e.message).toMatch(/objects/);
    corruptError(() => reassemble(status, infos)); // the chunk's own spec.objectsCount disagrees
    expect(corruptError(() => decodeChunk({ ...infos[0]!, objectsCount: 0 })).message).toMatch(/expected/);
  });

  it('detects a size or name the checkpoint status does not match', () => {
    const size = infos.map((c) => (c.index === 0 ? { ...c, sizeBytes: c.sizeBytes + 1 } : c));
    expect(corruptError(() => reassemble(size, infos)).message).toMatch(/gzip bytes/);
    const renamed = infos.map((c) => (c.index === 0 ? { ...c, name: 'cp-other-0' } : c));
    expect(corruptError(() => reassemble(infos, renamed)).message).toMatch(/names the chunk with this index cp-x-0/);
  });
});
