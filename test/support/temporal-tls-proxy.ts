/**
 * A Temporal frontend secured like a production one, for tests: nginx (Debian `nginx-light`)
 * terminates TLS in front of the stack's dev server, which has no TLS, and admits only clients
 * whose certificate the test CA signed (`ssl_verify_client on`). It speaks HTTP/2 with ALPN `h2`
 * and names only `serverName` in its certificate, so both the client (grpc-js) and the worker's
 * NativeConnection (Rust core: tonic + rustls, which insist on both) must be configured as for a
 * real mTLS cluster: server CA, server name, client certificate.
 *
 * A request without a valid client certificate gets what an authenticating gRPC server answers,
 * UNAUTHENTICATED, rather than nginx's HTTP 400 page (which each SDK reports differently).
 *
 * `rotate()` moves it to a new CA as an operator would: first it also accepts client certificates
 * of the new CA, then (`revokeOld()`) it serves a certificate of the new CA and accepts only the
 * new CA's clients — a client still presenting the old certificate is refused from then on. Each
 * step restarts nginx, which cuts every connection. `requireApiKey()` restarts it refusing any call without `authorization: Bearer
 * <key>` (the dev server checks no API key).
 */
import { existsSync } from 'node:fs';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import net from 'node:net';
import path from 'node:path';
import { ManagedProcess, getFreePort, waitUntilReady } from '../../src/infra/process.js';
import { createTestCa, type Pem, type TestCa } from './tls-certs.js';

export interface TemporalTlsProxy {
  /** host:port of the TLS frontend. */
  address: string;
  /** The name its certificate holds (not the address's host: a client must set the server name). */
  serverName: string;
  /** Files a client points TEMPORAL_TLS_*_PATH at. */
  files: {
    serverCa: string;
    clientCert: string;
    clientKey: string;
    otherCaClientCert: string;
    otherCaClientKey: string;
  };
  /** The CA of the frontend's certificate and of the client certificates it accepts. */
  ca: TestCa;
  /** Also accepts client certificates of a new CA (returned); `revokeOld()` then moves to it alone. */
  rotate(): Promise<{ next: TestCa; revokeOld(): Promise<void> }>;
  /** Restarts accepting only calls with this API key (undefined: any). */
  requireApiKey(key: string | undefined): Promise<void>;
  stop(): Promise<void>;
}

const SERVER_NAME = 'temporal-frontend.test';

export function findNginx(): string {
  for (const dir of [...(process.env.PATH ?? '').split(':'), '/usr/sbin', '/usr/local/sbin']) {
    const candidate = path.join(dir, 'nginx');
    if (dir && existsSync(candidate)) return candidate;
  }
  throw new Error('nginx not found: the TLS tests need it (Debian: apt-get install nginx-light)');
}

export async function startTemporalTlsProxy(opts: {
  upstream: string;
  dir: string;
  logFile: string;
}): Promise<TemporalTlsProxy> {
  const nginx = findNginx();
  await mkdir(path.join(opts.dir, 'tmp'), { recursive: true, mode: 0o700 });
  const ca = await createTestCa('temporal-test-ca');
  const otherCa = await createTestCa('some-other-ca');
  const write = async (name: string, pem: string) => {
    const file = path.join(opts.dir, name);
    await writeFile(file, pem, { mode: 0o600 });
    return file;
  };
  const pair = async (name: string, p: Pem) => ({
    cert: await write(`${name}.crt`, p.cert),
    key: await write(`${name}.key`, p.key),
  });
  const server = await pair('server', await ca.issue(SERVER_NAME, { server: [SERVER_NAME] }));
  const client = await pair('client', await ca.issue('durable-operators', 'client'));
  const stranger = await pair('other-ca-client', await otherCa.issue('durable-operators', 'client'));
  const caFile = await write('ca.crt', ca.cert);

  const port = await getFreePort();
  const tmp = path.join(opts.dir, 'tmp');
  let serving = { ...server, ca: caFile };
  let apiKey: string | undefined;
  let generation = 0;
  const start = async () => {
    const conf = await write('nginx.conf', nginxConf({ port, tmp, upstream: opts.upstream, serving, apiKey }));
    const proc = ManagedProcess.start({
      name: 'nginx',
      command: nginx,
      args: ['-e', 'stderr', '-p', opts.dir, '-c', conf],
      logFile: opts.logFile,
    });
    await waitUntilReady('TLS proxy (nginx)', () => canConnect(port), {
      timeoutMs: 20_000,
      process: proc,
      intervalMs: 100,
    });
    return proc;
  };
  let proc = await start();
  const restart = async () => {
    await proc.stop();
    proc = await start();
  };
  return {
    address: `127.0.0.1:${port}`,
    serverName: SERVER_NAME,
    files: {
      serverCa: caFile,
      clientCert: client.cert,
      clientKey: client.key,
      otherCaClientCert: stranger.cert,
      otherCaClientKey: stranger.key,
    },
    ca,
    async rotate() {
      const g = ++generation;
      const next = await createTestCa(`temporal-test-ca-${g}`);
      const old = await readFile(serving.ca, 'utf8');
      serving = { ...serving, ca: await write(`client-cas-${g}.crt`, old + next.cert) };
      await restart();
      return {
        next,
        async revokeOld() {
          const p = await pair(`server-${g}`, await next.issue(SERVER_NAME, { server: [SERVER_NAME] }));
          serving = { ...p, ca: await write(`ca-${g}.crt`, next.cert) };
          await restart();
        },
      };
    },
    async requireApiKey(key) {
      apiKey = key;
      await restart();
    },
    stop: () => proc.stop(),
  };
}

function nginxConf(o: {
  port: number;
  tmp: string;
  upstream: string;
  serving: { cert: string; key: string; ca: string };
  apiKey?: string;
}): string {
  const { tmp } = o;
  return `daemon off;
master_process off;
pid ${path.join(tmp, '..', 'nginx.pid')};
error_log stderr warn;
events { worker_connections 1024; }
http {
  access_log off;
  client_body_temp_path ${tmp}/body;
  proxy_temp_path ${tmp}/proxy;
  fastcgi_temp_path ${tmp}/fastcgi;
  uwsgi_temp_path ${tmp}/uwsgi;
  scgi_temp_path ${tmp}/scgi;
  server {
    listen 127.0.0.1:${o.port} ssl http2;
    ssl_certificate ${o.serving.cert};
    ssl_certificate_key ${o.serving.key};
    ssl_client_certificate ${o.serving.ca};
    ssl_verify_client on;
    # Temporal's long polls hold a call for up to 70 s; a worker keeps one connection for hours.
    client_max_body_size 0;
    client_body_timeout 1h;
    keepalive_timeout 1h;
    keepalive_requests 1000000;
    http2_max_concurrent_streams 1000;
    grpc_read_timeout 1h;
    grpc_send_timeout 1h;
    # 495: a certificate that does not verify; 496: none.
    error_page 495 496 = @unauthenticated;
    error_page 403 = @wrong_api_key;
    location / {
${o.apiKey === undefined ? '' : `      if ($http_authorization != "Bearer ${o.apiKey}") { return 403; }\n`}      grpc_pass grpc://${o.upstream};
    }
    location @unauthenticated {
      default_type application/grpc;
      add_header grpc-status 16 always;
      add_header grpc-message "a client certificate signed by the cluster's CA is required" always;
      return 204;
    }
    location @wrong_api_key {
      default_type application/grpc;
      add_header grpc-status 16 always;
      add_header grpc-message "invalid API key" always;
      return 204;
    }
  }
}
`;
}

function canConnect(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect(port, '127.0.0.1');
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}
