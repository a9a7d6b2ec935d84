/**
 * The gRPC face: `fastpath.v1.FastPathService` served with @grpc/grpc-js from the repo's .proto
 * (wire-compatible with the original's clients), and the added `fastpath.v1.SandboxIOService`
 * (sandbox_io.proto: logs and exec, server-streaming). Each call's metadata (and its :authority, as
 * the Host) is what the tenant resolver reads, as it reads an HTTP request's headers.
 */
import * as grpc from '@grpc/grpc-js';
import { writeWithBackpressure } from '../concurrency.js';
import type { HoldsTenantSnapshot } from '../tenancy/index.js';
import { inServerSpan } from '../tracing/server-spans.js';
import type { AgentExecEvent } from './agent-client.js';
import type { ProtoGrpcType as FastpathProto } from './gen/fastpath.js';
import type { FastPathServiceHandlers } from './gen/fastpath/v1/FastPathService.js';
import type { SandboxIOServiceHandlers } from './gen/fastpath/v1/SandboxIOService.js';
import type { ProtoGrpcType as SandboxIoProto } from './gen/sandbox_io.js';
import { loadFastpathDefinition, loadSandboxIoDefinition } from './proto.js';
import { retryMetadata } from './retry-info.js';
import type { ApiFaceOptions, RunningApiFace } from './api-face.js';
import { FastPathError } from './service.js';
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

const FAST_PATH_SERVICE = 'fastpath.v1.FastPathService';

/** The statuses that are the server's failure rather than the caller's (OpenTelemetry's gRPC conventions). */
const SERVER_ERRORS = new Set<grpc.status>([
  grpc.status.UNKNOWN,
  grpc.status.DEADLINE_EXCEEDED,
  grpc.status.UNIMPLEMENTED,
  grpc.status.INTERNAL,
  grpc.status.UNAVAILABLE,
  grpc.status.DATA_LOSS,
]);

/** The status a call that failed with `err` ends with. */
function statusOf(err: unknown): grpc.status {
  return err instanceof FastPathError ? GRPC_CODES[err.code] : grpc.status.INTERNAL;
}

/** The caller's tenant: resolved from the call's metadata, authenticated by its key or verified certificate. */
function callerTenant(tenants: HoldsTenantSnapshot, call: grpc.ServerUnaryCall<unknown, unknown>): string {
  // grpc-js gives the peer certificate only when the TLS layer verified it against the client CA.
  return tenantOf(tenants, requestLike(call), call.getAuthContext()?.sslPeerCertificate);
}

/** The gRPC call as the tenant resolver sees an HTTP request. */
function requestLike(call: grpc.ServerUnaryCall<unknown, unknown>) {
  const headers: Record<string, string> = {};
  for (const [k, v] of Object.entries(call.metadata.getMap())) if (typeof v === 'string') headers[k.toLowerCase()] = v;
  const host = (call as { getHost?: () => string }).getHost?.();
  if (host && !headers.host) headers.host = host;
  return { url: call.getPath(), headers };
}

export async function startGrpcServer(opts: ApiFaceOptions): Promise<RunningApiFace> {
  const pkg = grpc.loadPackageDefinition(loadFastpathDefinition()) as unknown as FastpathProto;
  const unary =
    <Req, Res>(method: string, fn: (req: Req, tenant: string) => Promise<Res>): grpc.handleUnaryCall<Req, Res> =>
    (call, callback) => {
      inServerSpan(
        `${FAST_PATH_SERVICE}/${method}`,
        call.metadata.getMap(),
        { 'rpc.system': 'grpc', 'rpc.service': FAST_PATH_SERVICE, 'rpc.method': method },
        async () => fn(call.request, callerTenant(opts.tenants, call)),
        (r) => {
          const code = 'err' in r ? statusOf(r.err) : grpc.status.OK;
          return { error: SERVER_ERRORS.has(code), attributes: { 'rpc.grpc.status_code': code } };
        },
      ).then(
        (res) => callback(null, res),
        (err: unknown) => reply(err, callback),
      );
    };
  const reply = (err: unknown, callback: grpc.sendUnaryData<never>) => {
    if (err instanceof FastPathError) {
      const code = statusOf(err);
      // A refusal that will pass (a pool scaling up from zero) says when to try again.
      const retry = err.retryAfterSeconds !== undefined && {
        metadata: retryMetadata(code, err.message, err.retryAfterSeconds),
      };
      return callback({ code, details: err.message, ...retry });
    }
    opts.log.error({ err }, 'fast-path call failed');
    callback({ code: grpc.status.INTERNAL, details: (err as Error).message });
  };
  /**
   * A server-streaming call: tenant check, then every item the stream yields, then the end; a
   * caller that cancels aborts the agent call behind it.
   */
  const streaming =
    <Req, Item, Out>(
      open: (req: Req, tenant: string, abort: AbortSignal) => Promise<AsyncIterable<Item>>,
      toMessage: (item: Item) => Out,
    ): grpc.handleServerStreamingCall<Req, Out> =>
    (call) => {
      const abort = new AbortController();
      call.on('cancelled', () => abort.abort());
      const fail = (err: unknown) => {
        if (abort.signal.aborted) return;
        if (!(err instanceof FastPathError)) opts.log.error({ err }, 'fast-path stream failed');
        call.emit('error', {
          code: err instanceof FastPathError ? GRPC_CODES[err.code] : grpc.status.INTERNAL,
          details: (err as Error).message,
        });
      };
      void (async () => {
        try {
          const tenant = callerTenant(opts.tenants, call);
          // At the client's pace (gRPC flow control): the agent's stream is read no faster.
          for await (const item of await open(call.request, tenant, abort.signal))
            await writeWithBackpressure(call, toMessage(item));
          call.end();
        } catch (err) {
          fail(err);
        }
      })();
    };
  const s = opts.service;
  const server = new grpc.Server();
  if (opts.io) {
    const io = opts.io;
    const ioPkg = grpc.loadPackageDefinition(loadSandboxIoDefinition()) as unknown as SandboxIoProto;
    server.addService(ioPkg.fastpath.v1.SandboxIOService.service, {
      StreamLogs: streaming(io.logs.bind(io), (data: Buffer) => ({ data })),
      Exec: streaming(io.exec.bind(io), (e: AgentExecEvent) =>
        'exitCode' in e ? { exitCode: e.exitCode ?? -1, signal: e.signal ?? '' } : e,
      ),
    } satisfies SandboxIOServiceHandlers);
  }
  server.addService(pkg.fastpath.v1.FastPathService.service, {
    CreateSandbox: unary('CreateSandbox', s.create.bind(s)),
    DeleteSandbox: unary('DeleteSandbox', s.delete.bind(s)),
    UpdateSandbox: unary('UpdateSandbox', s.update.bind(s)),
    ListSandboxes: unary('ListSandboxes', s.list.bind(s)),
    GetSandbox: unary('GetSandbox', s.get.bind(s)),
  } satisfies FastPathServiceHandlers);
  const port = await new Promise<number>((resolve, reject) =>
    server.bindAsync(
      `${opts.host}:${opts.port}`,
      opts.tls?.grpcCredentials() ?? grpc.ServerCredentials.createInsecure(),
      (err, p) => (err ? reject(err) : resolve(p)),
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
