/**
 * A client of `fastpath.v1.FastPathService` built with @grpc/grpc-js from the repo's .proto (the
 * same definition the server loads), promisified, sending the tenant in the resolver's default
 * header and, for a tenant with API keys, its key as `authorization: Bearer <key>`; over TLS when
 * given (with a client certificate for a tenant that names it). For tests, benchmarks and the CLI;
 * any standard gRPC client works the same way.
 */
import * as grpc from '@grpc/grpc-js';
import { loadFastpathDefinition, loadSandboxIoDefinition } from './proto.js';

/** The tenant resolver's default header (`X-Tenant-ID`), as gRPC metadata keys are lower case. */
export const TENANT_HEADER = 'x-tenant-id';

export interface FastPathGrpc {
  /** One unary call; `tenant` '' sends no tenant header; `extra`: more metadata (e.g. a W3C `traceparent`). */
  call<Res = Record<string, unknown>>(
    method: string,
    req: Record<string, unknown>,
    tenant?: string,
    extra?: Record<string, string>,
  ): Promise<Res>;
  close(): void;
}

type UnaryMethod = (r: unknown, m: grpc.Metadata, cb: (e: grpc.ServiceError | null, v: unknown) => void) => void;

/** TLS to a fast path serving it: the CA to verify it with (default: the system's), and a client certificate. */
export interface ClientTls {
  ca?: Buffer;
  cert?: Buffer;
  key?: Buffer;
}

function channelCredentials(tls?: ClientTls): grpc.ChannelCredentials {
  if (!tls) return grpc.credentials.createInsecure();
  return grpc.credentials.createSsl(tls.ca ?? null, tls.key ?? null, tls.cert ?? null);
}

/** The call's metadata: the tenant header, and the tenant's API key when it has keys. */
function metadata(tenant: string, apiKey?: string): grpc.Metadata {
  const md = new grpc.Metadata();
  if (tenant !== '') md.set(TENANT_HEADER, tenant);
  if (apiKey) md.set('authorization', `Bearer ${apiKey}`);
  return md;
}

export function fastPathClient(address: string, defaultTenant: string, apiKey?: string, tls?: ClientTls): FastPathGrpc {
  const pkg = grpc.loadPackageDefinition(loadFastpathDefinition()) as unknown as {
    fastpath: { v1: { FastPathService: grpc.ServiceClientConstructor } };
  };
  const client = new pkg.fastpath.v1.FastPathService(address, channelCredentials(tls));
  return {
    call<Res>(
      method: string,
      req: Record<string, unknown>,
      tenant = defaultTenant,
      extra: Record<string, string> = {},
    ) {
      const md = metadata(tenant, apiKey);
      for (const [k, v] of Object.entries(extra)) md.set(k, v);
      // The caller names the answer's type (the .proto's message, read by proto-loader).
      return new Promise<Res>((resolve, reject) =>
        (client[method] as UnaryMethod)(req, md, (err, res) => (err ? reject(err) : resolve(res as Res))),
      );
    },
    close: () => client.close(),
  };
}

export interface SandboxIoGrpc {
  /** One server-streaming call of SandboxIOService; its messages as they come. */
  stream<Msg = Record<string, unknown>>(
    method: 'StreamLogs' | 'Exec',
    req: Record<string, unknown>,
  ): AsyncIterable<Msg>;
  close(): void;
}

/** A client of the added `fastpath.v1.SandboxIOService` (sandbox_io.proto): logs and exec. */
export function sandboxIoClient(address: string, tenant: string, apiKey?: string, tls?: ClientTls): SandboxIoGrpc {
  const pkg = grpc.loadPackageDefinition(loadSandboxIoDefinition()) as unknown as {
    fastpath: { v1: { SandboxIOService: grpc.ServiceClientConstructor } };
  };
  const client = new pkg.fastpath.v1.SandboxIOService(address, channelCredentials(tls));
  return {
    stream(method, req) {
      const md = metadata(tenant, apiKey);
      // A grpc-js ClientReadableStream is a Readable: iterable, and it throws the call's status.
      return (client[method] as (r: unknown, m: grpc.Metadata) => AsyncIterable<never>)(req, md);
    },
    close: () => client.close(),
  };
}
