/**
 * Helpers for the tenancy integration tests: a private etcd per test file (so tests can kill,
 * restart and compact it without touching the shared stack), a TCP gate to cut a provider off
 * from etcd while the test keeps writing to it, and polling.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { findBinary } from '../../src/infra/binaries.js';
import { Etcd } from '../../src/infra/components.js';
import { getFreePort } from '../../src/infra/process.js';
import { logger } from '../../src/log.js';

export const quietLogger = logger.child({ component: 'tenancy', test: true });
quietLogger.level = process.env.DO_TEST_LOG_LEVEL ?? 'silent';

export interface TestEtcd {
  etcd: Etcd;
  dir: string;
  /** Stops etcd and removes its data. */
  dispose(): Promise<void>;
}

export async function startTestEtcd(name: string): Promise<TestEtcd> {
  const binary = findBinary('etcd');
  if (!binary) throw new Error('etcd binary not provisioned: run `npm run infra` (durable-operators infra provision)');
  const dir = await mkdtemp(path.join(os.tmpdir(), `${name}-`));
  const etcd = await Etcd.start({
    name,
    binary: binary.path,
    dataDir: path.join(dir, 'data'),
    clientPort: await getFreePort(),
    peerPort: await getFreePort(),
    logFile: path.join(dir, 'etcd.log'),
  });
  return {
    etcd,
    dir,
    async dispose() {
      await etcd.stop();
      await rm(dir, { recursive: true, force: true });
    },
  };
}

/**
 * A TCP forwarder in front of etcd. close() drops every connection and refuses new ones (etcd is
 * unreachable for whoever goes through the gate); open() lets traffic through again on the same
 * port.
 */
export class TcpGate {
  private server: net.Server | undefined;
  private readonly sockets = new Set<net.Socket>();

  private constructor(
    readonly port: number,
    private readonly targetPort: number,
  ) {}

  static async start(targetEndpoint: string): Promise<TcpGate> {
    const gate = new TcpGate(await getFreePort(), Number(new URL(targetEndpoint).port));
    await gate.open();
    return gate;
  }

  get endpoint(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  async open(): Promise<void> {
    if (this.server) return;
    const server = net.createServer((client) => {
      const upstream = net.connect(this.targetPort, '127.0.0.1');
      for (const s of [client, upstream]) {
        this.sockets.add(s);
        s.on('close', () => this.sockets.delete(s));
        s.on('error', () => {
          client.destroy();
          upstream.destroy();
        });
      }
      client.pipe(upstream).pipe(client);
    });
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(this.port, '127.0.0.1', () => resolve());
    });
    this.server = server;
  }

  async close(): Promise<void> {
    const server = this.server;
    this.server = undefined;
    for (const s of this.sockets) s.destroy();
    this.sockets.clear();
    if (server) await new Promise<void>((resolve) => server.close(() => resolve()));
  }
}
