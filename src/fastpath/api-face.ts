/** What both faces of the sandbox API (gRPC, ./grpc.ts; HTTP/JSON, ./http.ts) serve with. */
import type { Logger } from '../log.js';
import type { HoldsTenantSnapshot } from '../tenancy/index.js';
import type { SandboxIo } from './sandbox-io.js';
import type { FastPathService } from './service.js';
import type { ServingTls } from './tls.js';

export interface ApiFaceOptions {
  service: FastPathService;
  tenants: HoldsTenantSnapshot;
  host: string;
  port: number;
  log: Logger;
  /** Logs and exec (sandbox_io.proto; the HTTP face's routes of the same); without it only the five operations are served. */
  io?: SandboxIo;
  /** Serve TLS (reloaded certificate, optional client certificates); plain text without it. */
  tls?: ServingTls;
}

export interface RunningApiFace {
  port: number;
  close(): Promise<void>;
}
