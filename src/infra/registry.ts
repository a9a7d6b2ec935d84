/**
 * An OCI image registry for the local stack (CNCF distribution, `docker-registry serve`): plain
 * HTTP on loopback, no auth (htpasswd auth when asked, for tests). The stack pushes its demo images here and its containerd pulls them
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
  /** An htpasswd file (bcrypt): every request then needs basic auth (tests of private images). */
  htpasswd?: string;
}

export function renderRegistryConfig(storageDir: string, port: number, htpasswd?: string): string {
  return stringify({
    version: '0.1',
    log: { level: 'warn', accesslog: { disabled: true } },
    storage: { filesystem: { rootdirectory: storageDir }, delete: { enabled: true } },
    http: { addr: `127.0.0.1:${port}` },
    ...(htpasswd ? { auth: { htpasswd: { realm: 'durable-operators', path: htpasswd } } } : {}),
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
    await writeFile(config, renderRegistryConfig(storage, opts.port, opts.htpasswd));
    // Up when it answers /v2/: 200, or 401 when it asks for credentials.
    const up = opts.htpasswd ? [200, 401] : [200];
    await this.spawnUntilReady(
      { binary: opts.binary, logFile: opts.logFile, args: ['serve', config] },
      async () => up.includes((await fetch(`http://${this.host}/v2/`, { signal: AbortSignal.timeout(2000) })).status),
      { timeoutMs: opts.readyTimeoutMs ?? 30_000, intervalMs: 50 },
    );
  }
}
