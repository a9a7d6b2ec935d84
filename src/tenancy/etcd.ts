/**
 * etcd access shared by the provider and the publisher: a consistent prefix read, paged so a
 * large namespace never exceeds gRPC's message size limit, and client construction — with TLS
 * (a CA, a client certificate) and etcd's user/password auth, as a production etcd requires.
 */
import { readFileSync } from 'node:fs';
import { createSecureContext } from 'node:tls';
import { Etcd3, Range, type IOptions } from 'etcd3';
import type { EtcdSecurity } from '../config.js';
import { sameBytes } from '../credential-files.js';

export interface ListedKey {
  /** Relative to the listed prefix. */
  readonly key: string;
  readonly value: string;
  readonly modRevision: number;
}

export interface PrefixListing {
  /** Every page was read at this revision: one point-in-time view. */
  readonly revision: number;
  readonly kvs: ListedKey[];
}

export interface ListOptions {
  pageSize?: number;
  /** Deadline of each page request. */
  timeoutMs?: number;
}

const COMPACTED = /required revision has been compacted/;

/**
 * All keys under `prefix` at one revision. Pages after the first pin the first page's revision;
 * if that revision is compacted away mid-read, the read starts over at the newest revision.
 */
export async function listPrefix(client: Etcd3, prefix: string, options: ListOptions = {}): Promise<PrefixListing> {
  const pageSize = options.pageSize ?? 2000;
  const timeoutMs = options.timeoutMs ?? 5000;
  const end = Range.prefix(prefix).end;
  for (let attempt = 1; ; attempt++) {
    try {
      const kvs: ListedKey[] = [];
      let revision = 0;
      let start = Buffer.from(prefix);
      for (;;) {
        let query = client
          .getAll()
          .inRange(new Range(start, end))
          .limit(pageSize)
          .options({ deadline: Date.now() + timeoutMs });
        if (revision > 0) query = query.revision(revision);
        const res = await query.exec();
        if (revision === 0) revision = Number(res.header.revision);
        for (const kv of res.kvs) {
          kvs.push({
            key: kv.key.toString('utf8').slice(prefix.length),
            value: kv.value.toString('utf8'),
            modRevision: Number(kv.mod_revision),
          });
        }
        const last = res.kvs.at(-1);
        if (!res.more || last === undefined) return { revision, kvs };
        start = Buffer.concat([last.key, Buffer.from([0])]);
      }
    } catch (err) {
      if (attempt < 3 && COMPACTED.test(String(err))) continue;
      throw err;
    }
  }
}

/** `http://a:2379,http://b:2379` or a list → client hosts. */
export function parseEndpoints(endpoints: string | readonly string[]): string[] {
  const list = (typeof endpoints === 'string' ? endpoints.split(',') : [...endpoints])
    .map((e) => e.trim())
    .filter(Boolean);
  if (list.length === 0) throw new Error('no etcd endpoint given');
  return list;
}

export function createEtcdClient(endpoints: string | readonly string[], extra: Partial<IOptions> = {}): Etcd3 {
  return new Etcd3({
    hosts: parseEndpoints(endpoints),
    dialTimeout: 5000,
    grpcOptions: {
      // A watch on a silently dead connection would otherwise look healthy forever. etcd accepts
      // pings every 5 s or slower (--grpc-keepalive-min-time).
      'grpc.keepalive_time_ms': 10_000,
      'grpc.keepalive_timeout_ms': 5_000,
    },
    ...extra,
  });
}

/** The etcd3 `credentials` and `auth` options of `sec`, its files read now. */
export function etcdSecurityOptions(
  endpoints: string | readonly string[],
  sec: EtcdSecurity | undefined,
): Partial<IOptions> {
  if (!sec) return {};
  const tls = sec.caFile !== undefined || sec.certFile !== undefined;
  if (tls && parseEndpoints(endpoints).some((e) => e.startsWith('http://')))
    throw new Error(`etcd TLS is configured but an endpoint is plain http:// (${String(endpoints)}): use https://`);
  const read = (file: string, what: string) => {
    try {
      return readFileSync(file);
    } catch (err) {
      throw new Error(`cannot read the etcd ${what} ${file}: ${(err as Error).message}`);
    }
  };
  const ca = sec.caFile ? read(sec.caFile, 'CA') : undefined;
  const cert = sec.certFile ? read(sec.certFile, 'client certificate') : undefined;
  const key = sec.keyFile ? read(sec.keyFile, 'client key') : undefined;
  // A set caught mid-rotation (a key that does not match its certificate yet) fails here, not at a handshake.
  if (tls) {
    try {
      createSecureContext({ cert, key, ...(ca && { ca }) });
    } catch (err) {
      throw new Error(`the etcd TLS files do not form a usable set: ${(err as Error).message}`);
    }
  }
  return {
    ...(tls && {
      credentials: {
        // Without a CA file, the system's CAs (grpc-js's default for a null root).
        rootCertificate: (ca ?? null) as Buffer,
        ...(cert && { certChain: cert }),
        ...(key && { privateKey: key }),
      },
    }),
    ...(sec.username &&
      sec.passwordFile && {
        auth: { username: sec.username, password: read(sec.passwordFile, 'password file').toString('utf8').trim() },
      }),
  };
}

/** Whether two results of etcdSecurityOptions hold the same files' content. */
export function sameEtcdSecurity(a: Partial<IOptions>, b: Partial<IOptions>): boolean {
  const same = (x?: Buffer | null, y?: Buffer | null) => sameBytes(x ?? undefined, y ?? undefined);
  const [ca, cb] = [a.credentials, b.credentials];
  return (
    same(ca?.rootCertificate, cb?.rootCertificate) &&
    same(ca?.certChain, cb?.certChain) &&
    same(ca?.privateKey, cb?.privateKey) &&
    a.auth?.username === b.auth?.username &&
    a.auth?.password === b.auth?.password
  );
}
