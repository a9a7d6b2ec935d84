/**
 * Packing and unpacking of ManifestCheckpointContentChunk payloads. Node-only (zlib, crypto),
 * which is why it lives here and not in src/domain: the capture activity packs, the
 * `checkpoint export` command and the tests unpack. No I/O besides the CPU.
 *
 * A chunk's `spec.data` is base64(gzip(JSON array of Kubernetes objects)) and its `spec.checksum`
 * is the SHA-256 hex of the gzip bytes. The checksum covers the gzip bytes rather than the JSON so
 * that verifying a chunk never needs re-compression, whose output may differ between zlib builds.
 *
 * The budget is the CRD's limit on the *encoded* `spec.data` (1,048,576 characters), so no chunk
 * the apiserver would refuse is made (docs/compatibility.md, "Chunk budget"). Finding where a chunk
 * ends is linear in its objects (no re-compression per object added). An object that cannot fit
 * in a chunk on its own is a distinct error, never an over-limit chunk.
 */
import { Buffer } from 'node:buffer';
import { createHash } from 'node:crypto';
import { deflateRawSync, gunzipSync, gzipSync } from 'node:zlib';

/** The CRD's maxLength for ManifestCheckpointContentChunk `spec.data`. */
export const MAX_CHUNK_DATA_CHARS = 1_048_576;

export interface PackedChunk {
  index: number;
  /** base64 of the gzip bytes; at most the limit's characters. */
  data: string;
  objectsCount: number;
  /** Length of the gzip bytes (not of `data`). */
  sizeBytes: number;
  /** SHA-256 hex of the gzip bytes. */
  checksum: string;
}

export interface ObjectKeyParts {
  apiVersion: string;
  kind: string;
  namespace?: string;
  name: string;
}

/** What a chunk looks like when read back: its `spec` plus where it came from. */
export interface StoredChunk {
  name?: string;
  index: number;
  data: string;
  checksum: string;
  objectsCount?: number;
}

/** One entry of a ManifestCheckpoint's `status.chunks`. */
export interface ChunkInfo {
  name: string;
  index: number;
  objectsCount: number;
  sizeBytes: number;
  checksum: string;
}

interface KubeObjectLike {
  apiVersion?: string;
  kind?: string;
  metadata?: { name?: string; namespace?: string };
}

// zlib's default level, pinned so that a change of Node's default cannot change chunk bytes.
const GZIP_LEVEL = 6;
// gzip's fixed 10-byte header and 8-byte CRC32/ISIZE trailer around the deflate stream.
const GZIP_FRAMING_BYTES = 18;
// The closing `]` and slack for the estimate; the exact size is checked after compression anyway.
const CLOSING_ALLOWANCE_BYTES = 8;
// Objects are measured in segments of at most this many JSON bytes: large enough that the
// per-segment deflate overhead (a fresh block and Huffman tables) and the cost of loading the
// 32 KiB dictionary stay small, small enough that the deflate state each measurement allocates
// and the text it copies stay small too.
const SEGMENT_BYTES = 64 * 1024;
// deflate's window: nothing further back than this can be referenced, so this much history as a
// preset dictionary lets a segment compress as it would in the middle of the whole stream.
const WINDOW_BYTES = 32 * 1024;
// Below this a chunk cannot hold even `[{}]` gzip-compressed; a limit that small is a mistake.
const MIN_DATA_CHARS = 64;

const OPEN = Buffer.from('[');
const COMMA = Buffer.from(',');
const CLOSE = Buffer.from(']');

/** Characters of base64 (with padding) for `bytes` bytes. */
function base64Length(bytes: number): number {
  return 4 * Math.ceil(bytes / 3);
}

function str(value: unknown): string {
  return typeof value === 'string' ? value : '';
}

function keyParts(obj: KubeObjectLike): ObjectKeyParts {
  const namespace = str(obj.metadata?.namespace);
  return {
    apiVersion: str(obj.apiVersion),
    kind: str(obj.kind),
    ...(namespace ? { namespace } : {}),
    name: str(obj.metadata?.name),
  };
}

function describeObject(k: ObjectKeyParts): string {
  const where = k.namespace ? `${k.namespace}/` : '';
  return `${k.kind || '<no kind>'} ${where}${k.name || '<no name>'} (${k.apiVersion || '<no apiVersion>'})`;
}

function compareStrings(a: string, b: string): number {
  // Code-unit order, not localeCompare: the order must not depend on the process's locale.
  return a < b ? -1 : a > b ? 1 : 0;
}

/**
 * Objects sorted by (apiVersion, kind, namespace, name), with one object per key: when the input
 * holds the same key more than once, the LAST occurrence wins (a later read of an object is the
 * fresher one). A missing field sorts as the empty string, so cluster-scoped objects come before
 * namespaced ones of the same kind. The input array is not modified.
 */
export function orderObjects<T extends KubeObjectLike>(objects: T[]): T[] {
  const byKey = new Map<string, { parts: ObjectKeyParts; obj: T }>();
  for (const obj of objects) {
    const parts = keyParts(obj);
    byKey.set(JSON.stringify([parts.apiVersion, parts.kind, parts.namespace ?? '', parts.name]), { parts, obj });
  }
  return [...byKey.values()]
    .sort(
      (a, b) =>
        compareStrings(a.parts.apiVersion, b.parts.apiVersion) ||
        compareStrings(a.parts.kind, b.parts.kind) ||
        compareStrings(a.parts.namespace ?? '', b.parts.namespace ?? '') ||
        compareStrings(a.parts.name, b.parts.name),
    )
    .map((e) => e.obj);
}

/** One object is too large to be stored in a chunk even on its own. */
export class ObjectTooLargeError extends Error {
  override readonly name = 'ObjectTooLargeError';
  constructor(
    readonly object: ObjectKeyParts,
    /** Characters of base64(gzip([object])), i.e. of a chunk holding only this object. */
    readonly encodedChars: number,
    readonly limit: number,
  ) {
    const chars = (n: number) => n.toLocaleString('en-US');
    super(
      `${describeObject(object)} is too large for a manifest checkpoint: compressed and base64-encoded on its ` +
        `own it takes ${chars(encodedChars)} characters, over the ${chars(limit)}-character limit of one ` +
        `ManifestCheckpointContentChunk. Exclude it from the capture or reduce its size.`,
    );
  }
}

/** SHA-256 hex of a chunk's gzip bytes. */
export function checksumOf(gzipBytes: Uint8Array): string {
  return createHash('sha256').update(gzipBytes).digest('hex');
}

/** `[a,b,c]` from the objects' JSON texts `docs[from..to)`. */
function jsonArray(docs: Buffer[], from: number, to: number): Buffer {
  const parts: Buffer[] = [OPEN];
  for (let i = from; i < to; i++) {
    if (i > from) parts.push(COMMA);
    parts.push(docs[i]!);
  }
  parts.push(CLOSE);
  return Buffer.concat(parts);
}

/** The JSON text that `docs[from..to)` add to a chunk: `[` before the chunk's first object, else `,`. */
function segmentText(docs: Buffer[], from: number, to: number, chunkStart: boolean): Buffer {
  const parts: Buffer[] = [];
  for (let i = from; i < to; i++) parts.push(i === from && chunkStart ? OPEN : COMMA, docs[i]!);
  return Buffer.concat(parts);
}

/** Compressed size of `text` as it would be after `history` in one deflate stream (estimate). */
function deflatedSize(text: Buffer, history: Buffer): number {
  if (text.length === 0) return 0;
  return deflateRawSync(text, history.length > 0 ? { level: GZIP_LEVEL, dictionary: history } : { level: GZIP_LEVEL })
    .length;
}

/**
 * How many objects from `docs[start]` on a chunk can take, by estimate (at least 1).
 *
 * Segments of objects are compressed one after another, each with the previous 32 KiB of the
 * chunk's JSON as a preset dictionary, so the sum of their sizes tracks the size of the whole chunk
 * compressed at once (within about 0.1%), at a cost linear in the chunk's size. Segments are at most
 * SEGMENT_BYTES; near the end of the budget each is sized to what is left at the compression ratio
 * seen so far, so the segment that finally overflows is small and searchCut finds the cut inside it
 * in a few probes.
 */
function planChunk(docs: Buffer[], start: number, maxGzipBytes: number): number {
  const budget = maxGzipBytes - GZIP_FRAMING_BYTES - CLOSING_ALLOWANCE_BYTES;
  let used = 0;
  let rawUsed = 0;
  let history = Buffer.alloc(0);
  let i = start;
  while (i < docs.length) {
    // Until something is measured, assume no compression at all: the first segment is then at
    // most about the budget, which matters when the budget is far smaller than SEGMENT_BYTES.
    const ratio = rawUsed > 0 ? Math.max(used / rawUsed, 0.01) : 1;
    const target = Math.min(SEGMENT_BYTES, Math.ceil((budget - used) / ratio));
    let end = i;
    let raw = 0;
    while (end < docs.length && (end === i || raw + docs[end]!.length + 1 <= target)) raw += docs[end++]!.length + 1;
    const chunkStart = i === start;
    const text = segmentText(docs, i, end, chunkStart);
    const size = deflatedSize(text, history);
    if (used + size <= budget) {
      used += size;
      rawUsed += text.length;
      history = Buffer.concat([history, text]);
      if (history.length > WINDOW_BYTES) history = history.subarray(history.length - WINDOW_BYTES);
      i = end;
      continue;
    }
    const fit = searchCut(end - i, size, budget - used, (k) =>
      deflatedSize(segmentText(docs, i, i + k, chunkStart), history),
    );
    // Zero means even the chunk's first object seems too large: sealChunk decides exactly.
    return Math.max(1, i + fit - start);
  }
  return docs.length - start;
}

/**
 * The largest k < n with sizeOf(k) <= room, given sizeOf(n) = sizeN > room and sizeOf(0) = 0.
 * Compressed size grows about linearly with the objects added, so interpolation usually lands
 * within an object or two of the cut in one probe; every other step bisects, which bounds the
 * probes at about twice log2(n) when the sizes are far from linear.
 */
function searchCut(n: number, sizeN: number, room: number, sizeOf: (k: number) => number): number {
  let lo = 0;
  let loSize = 0;
  let hi = n;
  let hiSize = sizeN;
  for (let step = 0; hi - lo > 1; step++) {
    // Sizes need not grow strictly (deflate is heuristic): interpolate only over a rising pair.
    const interpolate = step % 2 === 0 && hiSize > loSize;
    const guess = interpolate ? lo + Math.floor(((hi - lo) * (room - loSize)) / (hiSize - loSize)) : (lo + hi) >> 1;
    const k = Math.min(hi - 1, Math.max(lo + 1, guess));
    const size = sizeOf(k);
    if (size <= room) {
      lo = k;
      loSize = size;
    } else {
      hi = k;
      hiSize = size;
    }
  }
  return lo;
}

/**
 * Compresses `docs[start..start+count)` once; when the exact result is over the limit (the estimate
 * was low), moves objects from the end to the next chunk and compresses again.
 */
function sealChunk(
  docs: Buffer[],
  ordered: KubeObjectLike[],
  start: number,
  count: number,
  maxDataChars: number,
): { gzip: Buffer; count: number } {
  const maxGzipBytes = 3 * Math.floor(maxDataChars / 4);
  for (;;) {
    const json = jsonArray(docs, start, start + count);
    const gzip = gzipSync(json, { level: GZIP_LEVEL });
    if (gzip.length <= maxGzipBytes) return { gzip, count };
    if (count === 1) {
      throw new ObjectTooLargeError(keyParts(ordered[start]!), base64Length(gzip.length), maxDataChars);
    }
    // Drop about as much JSON as the excess represents at this chunk's compression ratio, plus 10%,
    // so that one more compression nearly always suffices (instead of one per dropped object).
    const excessRaw = ((gzip.length - maxGzipBytes) * json.length * 1.1) / gzip.length;
    let dropped = 0;
    let droppedRaw = 0;
    while (count - dropped > 1 && (dropped === 0 || droppedRaw < excessRaw)) {
      droppedRaw += docs[start + count - 1 - dropped]!.length + 1;
      dropped++;
    }
    count -= dropped;
  }
}

/**
 * Packs objects into chunks of at most `maxDataChars` characters of `data` (default: the CRD's
 * limit). Objects are ordered and deduplicated by orderObjects first, so the same set of objects
 * always gives the same chunks, byte for byte. Chunks are filled greedily in that order. No objects
 * give no chunks (`[]`): an empty capture is a checkpoint without chunks.
 * Throws ObjectTooLargeError for an object that does not fit in a chunk by itself.
 */
export function packChunks(objects: object[], opts?: { maxDataChars?: number }): PackedChunk[] {
  const maxDataChars = opts?.maxDataChars ?? MAX_CHUNK_DATA_CHARS;
  if (!Number.isInteger(maxDataChars) || maxDataChars < MIN_DATA_CHARS || maxDataChars > MAX_CHUNK_DATA_CHARS) {
    throw new RangeError(
      `maxDataChars must be an integer from ${MIN_DATA_CHARS} to ${MAX_CHUNK_DATA_CHARS}, got ${maxDataChars}`,
    );
  }
  // The largest gzip length whose base64 form fits in maxDataChars.
  const maxGzipBytes = 3 * Math.floor(maxDataChars / 4);
  const ordered = orderObjects(objects as KubeObjectLike[]);
  const docs = ordered.map((obj) => {
    const json = JSON.stringify(obj) as string | undefined;
    if (json === undefined) throw new TypeError(`${describeObject(keyParts(obj))} does not serialize to JSON`);
    return Buffer.from(json, 'utf8');
  });
  const chunks: PackedChunk[] = [];
  let start = 0;
  while (start < docs.length) {
    const planned = planChunk(docs, start, maxGzipBytes);
    const { gzip, count } = sealChunk(docs, ordered, start, planned, maxDataChars);
    chunks.push({
      index: chunks.length,
      data: gzip.toString('base64'),
      objectsCount: count,
      sizeBytes: gzip.length,
      checksum: checksumOf(gzip),
    });
    start += count;
  }
  return chunks;
}

/** A chunk that cannot be trusted: bad base64, gzip or JSON, or a checksum, count or index mismatch. */
export class ChunkCorruptError extends Error {
  override readonly name = 'ChunkCorruptError';
  readonly index: number;
  readonly chunkName?: string;
  constructor(index: number, chunkName: string | undefined, problem: string) {
    super(`manifest chunk ${chunkName ? `${chunkName} (index ${index})` : `index ${index}`}: ${problem}`);
    this.index = index;
    if (chunkName !== undefined) this.chunkName = chunkName;
  }
}

function decode(chunk: StoredChunk): { objects: unknown[]; sizeBytes: number } {
  const fail = (problem: string) => new ChunkCorruptError(chunk.index, chunk.name, problem);
  if (typeof chunk.data !== 'string') throw fail('spec.data is not a string');
  const gzip = Buffer.from(chunk.data, 'base64');
  // Node's base64 decoder skips characters outside the alphabet; requiring the canonical
  // encoding back rejects damaged text instead of silently decoding something else.
  if (gzip.toString('base64') !== chunk.data) throw fail('spec.data is not valid base64');
  const actual = checksumOf(gzip);
  if (typeof chunk.checksum !== 'string' || actual !== chunk.checksum.toLowerCase()) {
    throw fail(`checksum mismatch: spec.checksum is ${String(chunk.checksum)}, the data's SHA-256 is ${actual}`);
  }
  let text: string;
  try {
    text = gunzipSync(gzip).toString('utf8');
  } catch (err) {
    throw fail(`spec.data is not valid gzip: ${(err as Error).message}`);
  }
  let objects: unknown;
  try {
    objects = JSON.parse(text);
  } catch (err) {
    throw fail(`spec.data is not valid JSON: ${(err as Error).message}`);
  }
  if (!Array.isArray(objects)) throw fail('spec.data is not a JSON array');
  if (objects.some((o) => typeof o !== 'object' || o === null || Array.isArray(o))) {
    throw fail('spec.data holds something other than objects');
  }
  if (chunk.objectsCount !== undefined && objects.length !== chunk.objectsCount) {
    throw fail(`holds ${objects.length} objects, ${chunk.objectsCount} expected`);
  }
  return { objects, sizeBytes: gzip.length };
}

/**
 * The objects of one chunk, after checking that the SHA-256 of its gzip bytes is `checksum`
 * (hex, any case) and, when `objectsCount` is given, that it holds that many objects.
 * Throws ChunkCorruptError otherwise.
 */
export function decodeChunk(chunk: StoredChunk): unknown[] {
  return decode(chunk).objects;
}

/**
 * All objects of a checkpoint, in chunk order. `expected` is the checkpoint's `status.chunks`;
 * `chunks` are the chunk objects read back, in any order. Every expected index 0..n-1 must be
 * present exactly once, with the name (when given), checksum, size and object count the checkpoint
 * recorded; any missing, extra, duplicated or mismatched chunk throws ChunkCorruptError.
 */
export function reassemble(expected: ChunkInfo[], chunks: StoredChunk[]): unknown[] {
  const infos = [...expected].sort((a, b) => a.index - b.index);
  infos.forEach((info, i) => {
    if (!Number.isInteger(info.index) || info.index < 0) {
      throw new ChunkCorruptError(info.index, info.name, 'the checkpoint status gives this chunk an invalid index');
    }
    if (info.index !== i) {
      throw new ChunkCorruptError(
        info.index,
        info.name,
        info.index < i
          ? 'listed twice in the checkpoint status'
          : `the checkpoint status lists no chunk with index ${i}; indexes must run 0..${infos.length - 1}`,
      );
    }
  });
  const byIndex = new Map<number, StoredChunk>();
  for (const chunk of chunks) {
    if (!Number.isInteger(chunk.index) || chunk.index < 0 || chunk.index >= infos.length) {
      throw new ChunkCorruptError(
        chunk.index,
        chunk.name,
        `the checkpoint has ${infos.length} chunks, so index ${chunk.index} does not belong to it`,
      );
    }
    const other = byIndex.get(chunk.index);
    if (other) {
      throw new ChunkCorruptError(
        chunk.index,
        chunk.name,
        `two chunks have this index${other.name ? ` (the other is ${other.name})` : ''}`,
      );
    }
    byIndex.set(chunk.index, chunk);
  }
  const objects: unknown[] = [];
  for (const info of infos) {
    const chunk = byIndex.get(info.index);
    if (!chunk) throw new ChunkCorruptError(info.index, info.name, 'missing: no chunk with this index was read back');
    const fail = (problem: string) => new ChunkCorruptError(info.index, chunk.name ?? info.name, problem);
    if (chunk.name !== undefined && chunk.name !== info.name) {
      throw fail(`the checkpoint status names the chunk with this index ${info.name}`);
    }
    if (typeof chunk.checksum !== 'string' || chunk.checksum.toLowerCase() !== info.checksum.toLowerCase()) {
      throw fail(`spec.checksum ${String(chunk.checksum)} differs from ${info.checksum} in the checkpoint status`);
    }
    if (chunk.objectsCount !== undefined && chunk.objectsCount !== info.objectsCount) {
      throw fail(`spec.objectsCount ${chunk.objectsCount} differs from ${info.objectsCount} in the checkpoint status`);
    }
    const decoded = decode({ ...chunk, objectsCount: info.objectsCount });
    if (decoded.sizeBytes !== info.sizeBytes) {
      throw fail(`holds ${decoded.sizeBytes} gzip bytes, the checkpoint status records ${info.sizeBytes}`);
    }
    for (const obj of decoded.objects) objects.push(obj);
  }
  return objects;
}
