/**
 * Manifest checkpoint chunk packing, pure CPU (no stack): for N ConfigMaps of about 1 KiB of JSON
 * each, the time of packChunks (order + plan + one gzip per chunk) and of reassemble (base64 +
 * checksum + gunzip + JSON.parse of every chunk), and the chunks and encoded characters produced.
 * The ConfigMaps' data is half repeated config text and half random tokens, so they compress
 * about as much as typical application config rather than ideally well.
 * Usage: npx tsx bench/manifest-chunks.ts [RUNS=10]
 */
import { performance } from 'node:perf_hooks';
import { packChunks, reassemble, type ChunkInfo, type PackedChunk } from '../src/codec/manifest-chunks.js';
import { machine, prng, summary } from './support.js';

const RUNS = Number(process.argv[2] ?? 10);

const ALPHABET = 'abcdefghijklmnopqrstuvwxyz0123456789';

function configMaps(n: number): object[] {
  const rand = prng(n);
  const token = (len: number) => Array.from({ length: len }, () => ALPHABET[Math.floor(rand() * 36)]).join('');
  return Array.from({ length: n }, (_, i) => ({
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: {
      name: `app-config-${i}`,
      namespace: `team-${i % 20}`,
      uid: `${token(8)}-${token(4)}-${token(4)}-${token(4)}-${token(12)}`,
      resourceVersion: String(100_000 + i),
      creationTimestamp: '2026-01-01T00:00:00Z',
      labels: { 'app.kubernetes.io/name': `app-${i % 50}`, 'app.kubernetes.io/part-of': 'shop' },
    },
    data: {
      'application.properties': [
        'server.port=8080',
        'management.endpoints.web.exposure.include=health,info,prometheus',
        `spring.datasource.url=jdbc:postgresql://db-${i % 7}.internal:5432/app_${i}`,
        'spring.jpa.hibernate.ddl-auto=validate',
        'logging.level.root=INFO',
        ...Array.from({ length: 8 }, (_, j) => `feature.${token(6)}.key-${j}=${token(32)}`),
      ].join('\n'),
    },
  }));
}

console.log(`machine: ${machine()}`);
console.log(`command: npx tsx bench/manifest-chunks.ts ${RUNS}`);
for (const n of [1000, 10_000]) {
  const objects = configMaps(n);
  const rawBytes = Buffer.byteLength(JSON.stringify(objects));
  const pack: number[] = [];
  const decode: number[] = [];
  let chunks = packChunks(objects); // warm-up, so the first sample does not include JIT compilation
  for (let r = 0; r < RUNS; r++) {
    const t0 = performance.now();
    chunks = packChunks(objects);
    const t1 = performance.now();
    const infos: (PackedChunk & ChunkInfo)[] = chunks.map((c) => ({ ...c, name: `chunk-${c.index}` }));
    const t2 = performance.now();
    const back = reassemble(infos, infos);
    const t3 = performance.now();
    if (back.length !== n) throw new Error(`reassembled ${back.length} objects, packed ${n}`);
    pack.push(t1 - t0);
    decode.push(t3 - t2);
  }
  const encoded = chunks.reduce((sum, c) => sum + c.data.length, 0);
  const gzip = chunks.reduce((sum, c) => sum + c.sizeBytes, 0);
  console.log(
    `\n${n} ConfigMaps, ${(rawBytes / n).toFixed(0)} B of JSON each (${(rawBytes / 2 ** 20).toFixed(2)} MiB): ` +
      `${chunks.length} chunks, ${encoded.toLocaleString('en-US')} encoded characters in total ` +
      `(${gzip.toLocaleString('en-US')} gzip bytes, ${((100 * gzip) / rawBytes).toFixed(1)}% of the JSON)`,
  );
  console.log(`   ${summary('packChunks', pack)}`);
  console.log(`   ${summary('reassemble (verify + decode)', decode)}`);
}
