import { Counter, Registry } from 'prom-client';
import { afterEach, describe, expect, it } from 'vitest';
import { startOpsServer, type OpsServer } from '../../src/health/ops-server.js';
import { Probes, type ProbeOptions } from '../../src/health/probes.js';

let server: OpsServer | undefined;
afterEach(() => server?.close());

/** The probes behind every role's ops server (src/health/ops-server.ts), as the kubelet reaches them. */
async function serve(o?: ProbeOptions) {
  const registry = new Registry();
  new Counter({ name: 'probe_test_total', help: 'a metric', registers: [registry] }).inc();
  server = await startOpsServer({ port: 0, registry, probes: o && new Probes(o) });
  const base = `http://127.0.0.1:${server.port}`;
  return async (path: string, method = 'GET') => {
    const res = await fetch(base + path, { method });
    return { status: res.status, body: await res.text(), type: res.headers.get('content-type') };
  };
}

const ok = (name: string) => ({ name, run: async () => undefined });
const failing = (name: string, why: string) => ({
  name,
  run: async () => {
    throw new Error(why);
  },
});

describe('Probes', () => {
  it('readiness lists every check; one failing makes it 503 with the reason', async () => {
    const get = await serve({ ready: [ok('apiserver'), failing('temporal', 'connection refused')] });
    expect(await get('/readyz')).toEqual({
      status: 503,
      body: '[+]apiserver ok\n[-]temporal: connection refused\n',
      type: 'text/plain',
    });
    expect(await get('/healthz')).toEqual({ status: 200, body: 'ok', type: 'text/plain' });
  });

  it('serves the metrics beside the probes, nothing else', async () => {
    const get = await serve({ ready: [ok('apiserver')] });
    const metrics = await get('/metrics?x=1');
    expect(metrics).toMatchObject({ status: 200, type: expect.stringMatching(/^text\/plain; version=0\.0\.4/) });
    expect(metrics.body).toContain('probe_test_total 1');
    expect(await get('/livez')).toEqual({ status: 404, body: '', type: null });
    expect((await get('/healthz', 'HEAD')).status).toBe(200);
    // Without probes (a role that has none), only the metrics.
    await server!.close();
    const bare = await serve();
    expect((await bare('/metrics')).status).toBe(200);
    expect((await bare('/healthz')).status).toBe(404);
  });

  it('a check that does not answer in time fails as such', async () => {
    const get = await serve({ ready: [{ name: 'slow', run: () => new Promise(() => undefined) }], timeoutMs: 50 });
    expect(await get('/readyz')).toMatchObject({ status: 503, body: '[-]slow: no answer within 50 ms\n' });
  });

  it('a dead role fails liveness and readiness with why', async () => {
    const get = await serve({ ready: [ok('temporal')], dead: () => 'worker FAILED' });
    expect(await get('/healthz')).toMatchObject({ status: 503, body: 'worker FAILED' });
    expect(await get('/readyz')).toMatchObject({ status: 503, body: '[-]alive: worker FAILED\n[+]temporal ok\n' });
  });
});
