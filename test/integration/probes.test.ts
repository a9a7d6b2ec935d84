/**
 * Every role's probes, on the worker (the other roles serve the same src/health/probes.ts): alive
 * while its Temporal worker runs, ready while Temporal and the apiserver answer — unready, naming
 * Temporal, while the way to Temporal is cut, and ready again once it is back.
 */
import net from 'node:net';
import { afterAll, beforeAll, describe, expect, it, inject } from 'vitest';
import { createWorker, type OperatorWorker } from '../../src/workers/worker.js';
import { eventually, stackInfo, testConfig, uniq } from '../support/env.js';

/** A TCP relay to Temporal that the test can cut (every connection refused) and restore. */
class CuttableRelay {
  private readonly sockets = new Set<net.Socket>();
  private cut = false;
  readonly server = net.createServer((client) => {
    if (this.cut) return void client.destroy();
    const [host, port] = stackInfo().temporal.address.split(':');
    const upstream = net.connect(Number(port), host);
    for (const s of [client, upstream]) {
      this.sockets.add(s);
      s.on('close', () => this.sockets.delete(s));
      s.on('error', () => undefined);
    }
    client.pipe(upstream).pipe(client);
  });
  async listen(): Promise<string> {
    await new Promise<void>((r) => this.server.listen(0, '127.0.0.1', r));
    return `127.0.0.1:${(this.server.address() as net.AddressInfo).port}`;
  }
  setCut(cut: boolean): void {
    this.cut = cut;
    if (cut) for (const s of this.sockets) s.destroy();
  }
  close(): void {
    this.setCut(true);
    this.server.close();
  }
}

const relay = new CuttableRelay();
let worker: OperatorWorker;
let running: Promise<void>;

beforeAll(async () => {
  const cfg = testConfig(uniq('probes'), { metricsPort: 0 });
  cfg.temporal.address = await relay.listen();
  worker = await createWorker(cfg, { workflowBundlePath: inject('workflowBundle') });
  running = worker.run();
}, 120_000);

afterAll(async () => {
  relay.setCut(false);
  worker?.worker.shutdown();
  await running?.catch(() => undefined);
  relay.close();
});

const probe = async (path: string) => {
  const res = await fetch(`http://127.0.0.1:${worker.probePort}${path}`);
  return { status: res.status, body: await res.text() };
};

describe('the worker’s probes', () => {
  it('ready while Temporal and the apiserver answer; unready naming Temporal while it is cut off; ready again after', async () => {
    await eventually('ready', async () => (await probe('/readyz')).status === 200);
    const ready = await probe('/readyz');
    expect(ready.body).toContain('[+]temporal ok');
    expect(ready.body).toContain('[+]apiserver ok');
    expect(ready.body).toContain('[+]worker ok');
    expect(await probe('/healthz')).toEqual({ status: 200, body: 'ok' });

    relay.setCut(true);
    const unready = await eventually('unready', async () => {
      const r = await probe('/readyz');
      return r.status === 503 ? r : undefined;
    });
    expect(unready.body).toMatch(/\[-\]temporal: /);
    expect(unready.body).toContain('[+]apiserver ok');
    // Cut off is not dead: the kubelet must not restart a worker that waits for Temporal.
    expect((await probe('/healthz')).status).toBe(200);

    relay.setCut(false);
    await eventually('ready again', async () => (await probe('/readyz')).status === 200, { timeoutMs: 120_000 });
  });

  it('serves durable_operators_build_info on the same port, as every role does', async () => {
    const metrics = await probe('/metrics');
    expect(metrics.status).toBe(200);
    expect(metrics.body).toMatch(
      /^durable_operators_build_info\{version="\d+\.\d+\.\d+",role="worker",node_version="v[\d.]+"\} 1$/m,
    );
  });
});
