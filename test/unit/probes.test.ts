import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { Probes, type ProbeOptions } from '../../src/health/probes.js';

let server: http.Server | undefined;
afterEach(() => void server?.close());

async function serve(o: ProbeOptions) {
  const probes = new Probes(o);
  server = http.createServer((req, res) => void (probes.handle(req, res) || res.writeHead(404).end()));
  await new Promise<void>((r) => server!.listen(0, '127.0.0.1', r));
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return async (path: string) => {
    const res = await fetch(base + path);
    return { status: res.status, body: await res.text() };
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
    expect(await get('/readyz')).toEqual({ status: 503, body: '[+]apiserver ok\n[-]temporal: connection refused\n' });
    expect(await get('/healthz')).toEqual({ status: 200, body: 'ok' });
    expect((await get('/metrics')).status).toBe(404);
  });

  it('a check that does not answer in time fails as such', async () => {
    const get = await serve({ ready: [{ name: 'slow', run: () => new Promise(() => undefined) }], timeoutMs: 50 });
    expect(await get('/readyz')).toEqual({ status: 503, body: '[-]slow: no answer within 50 ms\n' });
  });

  it('a dead role fails liveness and readiness with why', async () => {
    const get = await serve({ ready: [ok('temporal')], dead: () => 'worker FAILED' });
    expect(await get('/healthz')).toEqual({ status: 503, body: 'worker FAILED' });
    expect(await get('/readyz')).toEqual({ status: 503, body: '[-]alive: worker FAILED\n[+]temporal ok\n' });
  });
});
