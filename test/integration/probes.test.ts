/**
 * Every role's probes, on the worker (the other roles serve the same src/health/probes.ts): alive
 * while its Temporal worker runs, ready while Temporal and the apiserver answer — unready, naming
 * Temporal, while the way to Temporal is cut or hangs, and ready again once it is back. A hung
 * Temporal is answered within the readiness probe's own timeout (deploy/worker.yaml), as the
 * kubelet would wait, so the reason reaches `kubectl describe pod`.
 */
import net from 'node:net';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it, inject } from 'vitest';
import { createWorker, type OperatorWorker } from '../../src/workers/worker.js';
import { REPO_ROOT, eventually, stackInfo, testConfig, uniq } from '../support/env.js';
import { readObjects } from '../support/manifests.js';

/**
 * A TCP relay to Temporal that the test can cut (every connection refused), hang (connections
 * accepted, nothing ever answered) and restore.
 */
class CuttableRelay {
  private readonly sockets = new Set<net.Socket>();
  private mode: 'open' | 'cut' | 'hung' = 'open';
  readonly server = net.createServer((client) => {
    if (this.mode === 'cut') return void client.destroy();
    if (this.mode === 'hung') {
      this.sockets.add(client);
      client.on('close', () => this.sockets.delete(client));
      return void client.on('error', () => undefined);
    }
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
  /** Every open connection ends: the client's next ones meet the new mode. */
  set(mode: 'open' | 'cut' | 'hung'): void {
    this.mode = mode;
    for (const s of this.sockets) s.destroy();
  }
  close(): void {
    this.set('cut');
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
  relay.set('open');
  worker?.worker.shutdown();
  await running?.catch(() => undefined);
  relay.close();
});

/** The worker's readiness probe as deploy/worker.yaml gives it to the kubelet (whose default timeout is 1 s). */
const readinessProbe = (
  readObjects(path.join(REPO_ROOT, 'deploy/worker.yaml'))[0]!.spec as {
    template: { spec: { containers: { readinessProbe: { timeoutSeconds?: number } }[] } };
  }
).template.spec.containers[0]!.readinessProbe;

/** A probe's GET, given up after `timeoutSeconds` as the kubelet does. */
const probe = async (path: string, timeoutSeconds = 30) => {
  const res = await fetch(`http://127.0.0.1:${worker.probePort}${path}`, {
    signal: AbortSignal.timeout(timeoutSeconds * 1000),
  });
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

    relay.set('cut');
    const unready = await eventually('unready', async () => {
      const r = await probe('/readyz');
      return r.status === 503 ? r : undefined;
    });
    expect(unready.body).toMatch(/\[-\]temporal: /);
    expect(unready.body).toContain('[+]apiserver ok');
    // Cut off is not dead: the kubelet must not restart a worker that waits for Temporal.
    expect((await probe('/healthz')).status).toBe(200);

    relay.set('open');
    await eventually('ready again', async () => (await probe('/readyz')).status === 200, { timeoutMs: 120_000 });
  });

  it('a Temporal that hangs: /readyz still answers within the probe’s timeoutSeconds, naming it', async () => {
    await eventually('ready', async () => (await probe('/readyz')).status === 200, { timeoutMs: 120_000 });
    relay.set('hung');
    // Each try 5 s after the last, as the kubelet's period: a try never joins the round of checks
    // a given-up one left running (src/health/probes.ts shares a round between probes).
    const unready = await eventually(
      'unready within the probe’s timeout',
      async () => {
        const r = await probe('/readyz', readinessProbe.timeoutSeconds ?? 1);
        return r.status === 503 && /\[-\]temporal: no answer within \d+ ms/.test(r.body) ? r : undefined;
      },
      { timeoutMs: 60_000, intervalMs: 5_000 },
    );
    expect(unready.body).toContain('[+]apiserver ok');
    expect((await probe('/healthz')).status).toBe(200);
    relay.set('open');
    await eventually('ready again', async () => (await probe('/readyz')).status === 200, { timeoutMs: 120_000 });
  });

  it('serves build_info, its process metrics and its apiserver calls on the same port, as every role does', async () => {
    const metrics = await probe('/metrics');
    expect(metrics.status).toBe(200);
    expect(metrics.body).toMatch(
      /^durable_operators_build_info\{version="\d+\.\d+\.\d+",role="worker",node_version="v[\d.]+"\} 1$/m,
    );
    // The role with the largest heap (the workflow cache) says how large (review M3).
    expect(metrics.body).toMatch(/^process_resident_memory_bytes \d+/m);
    expect(metrics.body).toMatch(/^nodejs_heap_size_used_bytes \d+/m);
    // Its readiness checks' GET /version, at least, went through the one client (review M6).
    expect(metrics.body).toMatch(/^durable_operators_kube_requests_total\{method="GET",code="200"\} [1-9]/m);
    expect(metrics.body).toMatch(/^durable_operators_kube_request_duration_seconds_count\{method="GET"\} [1-9]/m);
  });
});
