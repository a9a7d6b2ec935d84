/**
 * Every role's operations port (DO_METRICS_PORT, the Pods' `metrics` port): `/metrics` for
 * Prometheus, `/healthz` and `/readyz` for the kubelet (src/health/probes.ts decides the answers).
 * Plain HTTP, as the kubelet and a ServiceMonitor scrape it; it serves nothing a user sent.
 */
import type { Registry } from 'prom-client';
import { closeHttpApp, httpApp, listen } from '../http/server.js';
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
  const app = httpApp({});
  const text = { 'content-type': 'text/plain' };
  // Gauges with a collect() read their source here, at scrape time.
  app.all('/metrics', async (_req, reply) => {
    try {
      const body = await registry.metrics();
      return reply.code(200).header('content-type', registry.contentType).send(body);
    } catch (err) {
      return reply
        .code(500)
        .headers(text)
        .send((err as Error).message);
    }
  });
  for (const path of ['/healthz', '/readyz'])
    app.all(path, async (_req, reply) => {
      const answer = probes?.answer(path);
      if (!answer) return reply.code(404).send();
      const { status, text: body } = await answer;
      return reply.code(status).headers(text).send(body);
    });
  app.setNotFoundHandler(async (_req, reply) => reply.code(404).send());
  return { port: await listen(app, opts.port), close: () => closeHttpApp(app) };
}
