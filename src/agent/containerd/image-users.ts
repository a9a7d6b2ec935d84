/**
 * Named image users (`USER app`, `USER app:staff`) as uid/gid, as containerd's WithUser does: from
 * the image's own /etc/passwd and /etc/group. They are read from the image's layers in
 * containerd's content store (tar, gzip-compressed or not; the last layer holding a file wins),
 * once per image, so the agent needs no access to the node's filesystem.
 */
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import zlib from 'node:zlib';
import tar from 'tar-stream';
import type { ContainerdClient, Descriptor } from './client.js';

const WANTED = new Set(['etc/passwd', 'etc/group']);

/** /etc/passwd and /etc/group of an image (empty when it has none), from its layers, top layer winning. */
export async function readUserFiles(client: ContainerdClient, layers: Descriptor[]): Promise<Record<string, string>> {
  const found: Record<string, string> = {};
  for (const layer of layers) {
    const files = await filesOfLayer(client, layer);
    Object.assign(found, files);
  }
  return found;
}

async function filesOfLayer(client: ContainerdClient, layer: Descriptor): Promise<Record<string, string>> {
  const out: Record<string, string> = {};
  const extract = tar.extract();
  extract.on('entry', (header, stream, next) => {
    const name = header.name.replace(/^\.?\//, '');
    if (!WANTED.has(name) || header.type !== 'file') {
      stream.resume();
      stream.on('end', next);
      return;
    }
    const chunks: Buffer[] = [];
    stream.on('data', (c) => chunks.push(c as Buffer));
    stream.on('end', () => {
      out[name] = Buffer.concat(chunks).toString('utf8');
      next();
    });
  });
  const source = Readable.from(
    (async function* () {
      for await (const m of client.stream('content', 'read', { digest: layer.digest })) yield m.data;
    })(),
  );
  const gzip = /gzip/.test(layer.mediaType);
  if (/zstd/.test(layer.mediaType)) throw new Error(`layer ${layer.digest}: zstd layers cannot be read for users`);
  const sink = extract as unknown as NodeJS.WritableStream; // a streamx Writable
  await (gzip ? pipeline(source, zlib.createGunzip(), sink) : pipeline(source, sink));
  return out;
}

/** `name` or numeric id in a passwd/group file: [uid or gid, primary gid (passwd only)]. */
function lookup(file: string | undefined, name: string): [number, number] | undefined {
  for (const line of (file ?? '').split('\n')) {
    const f = line.split(':');
    if (f[0] === name && f.length >= 3) return [Number(f[2]), Number(f[3] ?? f[2])];
  }
  return undefined;
}

/** The image's `User` as uid/gid, resolving names through its passwd/group files; or what cannot be resolved. */
export function resolveNamedUser(
  user: string,
  files: Record<string, string>,
): { uid: number; gid: number } | { error: string } {
  const [u = '', g] = user.split(':');
  const num = (s: string) => (/^\d+$/.test(s) ? Number(s) : undefined);
  const pw = num(u) === undefined ? lookup(files['etc/passwd'], u) : undefined;
  const uid = num(u) ?? pw?.[0];
  if (uid === undefined) return { error: `the image's user ${JSON.stringify(u)} is not in its /etc/passwd` };
  let gid = g === undefined ? (pw?.[1] ?? uid) : num(g);
  if (gid === undefined && g !== undefined) gid = lookup(files['etc/group'], g)?.[0];
  if (gid === undefined) return { error: `the image's group ${JSON.stringify(g)} is not in its /etc/group` };
  return { uid, gid };
}
