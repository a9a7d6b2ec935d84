/**
 * An OCI image registry for the local stack (CNCF distribution, `docker-registry serve`): plain
 * HTTP on loopback, no auth. The stack pushes its demo images here and its containerd pulls them
 * (see renderHostsToml in containerd.ts).
 */
import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { stringify } from 'yaml';
import { BaseComponent } from './components.js';

export interface ImageRegistryOptions {
  binary: string;
  /** Holds config.yml and storage/ (in the stack `<stateDir>/registry`). */
  dir: string;
  port: number;
  logFile: string;
  readyTimeoutMs?: number;
}

export function renderRegistryConfig(storageDir: string, port: number): string {
  return stringify({
    version: '0.1',
    log: { level: 'warn', accesslog: { disabled: true } },
    storage: { filesystem: { rootdirectory: storageDir }, delete: { enabled: true } },
    http: { addr: `127.0.0.1:${port}` },
  });
}

export class ImageRegistry extends BaseComponent {
  constructor(readonly opts: ImageRegistryOptions) {
    super('registry');
  }
  /** `host:port`, as image references name it. */
  get host(): string {
    return `127.0.0.1:${this.opts.port}`;
  }
  static async start(opts: ImageRegistryOptions): Promise<ImageRegistry> {
    const r = new ImageRegistry(opts);
    await r.launch();
    return r;
  }
  protected async launch(): Promise<void> {
    const { opts } = this;
    const storage = path.join(opts.dir, 'storage');
    await mkdir(storage, { recursive: true });
    const config = path.join(opts.dir, 'config.yml');
    await writeFile(config, renderRegistryConfig(storage, opts.port));
    await this.spawnUntilReady(
      { binary: opts.binary, logFile: opts.logFile, args: ['serve', config] },
      async () => (await fetch(`http://${this.host}/v2/`, { signal: AbortSignal.timeout(2000) })).status === 200,
      { timeoutMs: opts.readyTimeoutMs ?? 30_000, intervalMs: 50 },
    );
  }
}
