/**
 * Every role's operations port (DO_METRICS_PORT, the Pods' `metrics` port): `/metrics` for
 * Prometheus, `/healthz` and `/readyz` for the kubelet. Plain HTTP, as the kubelet and a
 * ServiceMonitor scrape it; it serves nothing a user sent.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Registry } from 'prom-client';
import type { Probes } from './probes.js';

export interface OpsServer {
  port: number;
  close(): Promise<void>;
}

export async function startOpsServer(opts: {
  /** 0 = any free port. */
  port: number;
  registry: Registry;
  probes?: Probes;
}): Promise<OpsServer> {
  const { registry, probes } = opts;
  const server = http.createServer((req, res) => {
    if ((req.url ?? '').split('?')[0] === '/metrics') {
      // Gauges with a collect() read their source here, at scrape time.
      registry.metrics().then(
        (body) => res.writeHead(200, { 'content-type': registry.contentType }).end(body),
        (err: Error) => res.writeHead(500, { 'content-type': 'text/plain' }).end(err.message),
      );
      return;
    }
    if (probes?.handle(req, res)) return;
    res.writeHead(404).end();
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(opts.port, () => {
      server.off('error', reject);
      resolve();
    });
  });
  return {
    port: (server.address() as AddressInfo).port,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
