/**
 * The gRPC face: `fastpath.v1.FastPathService` served with @grpc/grpc-js from the repo's .proto
 * (wire-compatible with the original's clients). Each call's metadata (and its :authority, as
 * the Host) is what the tenant resolver reads, as it reads an HTTP request's headers.
 */
import * as grpc from '@grpc/grpc-js';
import type { HoldsTenantSnapshot } from '../tenancy/index.js';
import type { Logger } from '../log.js';
import { loadFastpathDefinition } from './proto.js';
import { FastPathError, type FastPathService } from './service.js';
import { tenantOf } from './tenant.js';

const GRPC_CODES: Record<FastPathError['code'], grpc.status> = {
  InvalidArgument: grpc.status.INVALID_ARGUMENT,
  NotFound: grpc.status.NOT_FOUND,
  AlreadyExists: grpc.status.ALREADY_EXISTS,
  ResourceExhausted: grpc.status.RESOURCE_EXHAUSTED,
  FailedPrecondition: grpc.status.FAILED_PRECONDITION,
  Unavailable: grpc.status.UNAVAILABLE,
  Internal: grpc.status.INTERNAL,
  Unauthenticated: grpc.status.UNAUTHENTICATED,
  PermissionDenied: grpc.status.PERMISSION_DENIED,
};

/** The gRPC call as the tenant resolver sees an HTTP request. */
function requestLike(call: grpc.ServerUnaryCall<unknown, unknown>) {
  const headers: Record<string, string> = {};
  for (const [k, v] of Object.entries(call.metadata.getMap())) if (typeof v === 'string') headers[k.toLowerCase()] = v;
  const host = (call as { getHost?: () => string }).getHost?.();
  if (host && !headers.host) headers.host = host;
  return { url: call.getPath(), headers };
}

export interface RunningGrpc {
  port: number;
  close(): Promise<void>;
}

export async function startGrpcServer(opts: {
  service: FastPathService;
  tenants: HoldsTenantSnapshot;
  host: string;
  port: number;
  log: Logger;
}): Promise<RunningGrpc> {
  const pkg = grpc.loadPackageDefinition(loadFastpathDefinition()) as unknown as {
    fastpath: { v1: { FastPathService: grpc.ServiceClientConstructor } };
  };
  const unary =
    <Req, Res>(fn: (req: Req, tenant: string) => Promise<Res>): grpc.handleUnaryCall<Req, Res> =>
    (call, callback) => {
      let tenant: string;
      try {
        tenant = tenantOf(opts.tenants, requestLike(call));
      } catch (err) {
        return reply(err, callback);
      }
      fn(call.request, tenant).then(
        (res) => callback(null, res),
        (err: unknown) => reply(err, callback),
      );
    };
  const reply = (err: unknown, callback: grpc.sendUnaryData<never>) => {
    if (err instanceof FastPathError) return callback({ code: GRPC_CODES[err.code], details: err.message });
    opts.log.error({ err }, 'fast-path call failed');
    callback({ code: grpc.status.INTERNAL, details: (err as Error).message });
  };
  const s = opts.service;
  const server = new grpc.Server();
  server.addService(pkg.fastpath.v1.FastPathService.service, {
    CreateSandbox: unary(s.create.bind(s)),
    DeleteSandbox: unary(s.delete.bind(s)),
    UpdateSandbox: unary(s.update.bind(s)),
    ListSandboxes: unary(s.list.bind(s)),
    GetSandbox: unary(s.get.bind(s)),
  });
  const port = await new Promise<number>((resolve, reject) =>
    server.bindAsync(`${opts.host}:${opts.port}`, grpc.ServerCredentials.createInsecure(), (err, p) =>
      err ? reject(err) : resolve(p),
    ),
  );
  return {
    port,
    close: () =>
      new Promise<void>((resolve) => {
        const t = setTimeout(() => server.forceShutdown(), 5_000);
        server.tryShutdown(() => {
          clearTimeout(t);
          resolve();
        });
      }),
  };
}
