/**
 * The admission webhook in the local stack (`dev`, `infra start`, tests): the real
 * `durable-operators admission` role as a supervised child process, with a serving certificate
 * from ./certs.ts, registered with the local apiserver by URL (there is no Service to route
 * through without a kubelet). The apiserver calls it on every CREATE of a capture request, as in
 * a cluster, so local behaviour is the deployed behaviour.
 *
 * It acts with the stack's admin kubeconfig; it only makes discovery calls and
 * SubjectAccessReviews (what deploy/webhook/rbac.yaml grants in a cluster).
 */
import { readFile } from 'node:fs/promises';
import https from 'node:https';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { AllowedCapabilities } from '../domain/sandbox-capabilities.js';
import { BaseComponent } from '../infra/components.js';
import { ManagedProcess, waitUntilReady } from '../infra/process.js';
import { KubeClient } from '../kube/client.js';
import { ensureServingCert, type ServingCert } from './certs.js';
import { validatingWebhookConfiguration } from './webhook.js';

export interface LocalAdmissionOptions {
  port: number;
  /** Its plain-HTTP /metrics port, when it serves one. */
  metricsPort?: number;
  /** Where the CA and serving certificate live (kept across restarts of a dev stack). */
  certDir: string;
  /** Credentials the webhook makes its reviews with. */
  kubeconfig: string;
  logFile: string;
  readyTimeoutMs?: number;
  /** Capabilities SandboxPools may add beyond the default set, per namespace (`--sandbox-capabilities`). */
  sandboxCapabilities?: AllowedCapabilities;
}

const HERE = path.dirname(fileURLToPath(import.meta.url));
/** Run from sources (tsx) or from the compiled package (dist/): start the CLI the same way. */
const FROM_SOURCES = import.meta.url.endsWith('.ts');

export class LocalAdmissionWebhook extends BaseComponent {
  private cert!: ServingCert;

  private constructor(readonly opts: LocalAdmissionOptions) {
    super('admission-webhook');
  }

  /** The server's URL; the apiserver calls each webhook's path under it. */
  get url(): string {
    return `https://127.0.0.1:${this.opts.port}`;
  }

  /** Its Prometheus metrics, when it serves them. */
  get metricsUrl(): string | undefined {
    return this.opts.metricsPort === undefined ? undefined : `http://127.0.0.1:${this.opts.metricsPort}/metrics`;
  }

  get caFile(): string {
    return path.join(this.opts.certDir, 'ca.crt');
  }

  static async start(opts: LocalAdmissionOptions): Promise<LocalAdmissionWebhook> {
    const w = new LocalAdmissionWebhook(opts);
    w.cert = await ensureServingCert(opts.certDir);
    try {
      await w.launch();
    } catch (err) {
      await w.process?.stop(); // never ready: leave no process behind
      throw err;
    }
    return w;
  }

  protected async launch(): Promise<void> {
    const cli = path.resolve(HERE, '..', 'cli', FROM_SOURCES ? 'main.ts' : 'main.js');
    this.process = ManagedProcess.start({
      name: this.name,
      command: process.execPath,
      args: [
        ...(FROM_SOURCES ? ['--import', 'tsx'] : []),
        cli,
        'admission',
        '--host',
        '127.0.0.1',
        '--port',
        String(this.opts.port),
        '--tls-cert-file',
        this.cert.certFile,
        '--tls-key-file',
        this.cert.keyFile,
        '--kubeconfig',
        this.opts.kubeconfig,
        ...(this.opts.metricsPort !== undefined ? ['--metrics-port', String(this.opts.metricsPort)] : []),
        ...(this.opts.sandboxCapabilities
          ? ['--sandbox-capabilities', JSON.stringify(this.opts.sandboxCapabilities)]
          : []),
      ],
      // tsx is resolved from the package root.
      cwd: path.resolve(HERE, '..', '..'),
      logFile: this.opts.logFile,
    });
    const ca = await readFile(this.caFile);
    await waitUntilReady(this.name, () => readyz(`https://127.0.0.1:${this.opts.port}/readyz`, ca), {
      timeoutMs: this.opts.readyTimeoutMs ?? 60_000,
      intervalMs: 250,
      process: this.process,
    });
  }

  /** Registers (or re-points, after a restart on other ports) the ValidatingWebhookConfiguration. */
  async register(adminKubeconfig: string): Promise<void> {
    const kube = KubeClient.fromKubeconfig(adminKubeconfig);
    await kube.apply(
      validatingWebhookConfiguration({ url: this.url, caBundle: Buffer.from(this.cert.caPem).toString('base64') }),
    );
  }
}

function readyz(url: string, ca: Buffer): Promise<boolean> {
  return new Promise((resolve) => {
    const req = https.get(url, { ca, timeout: 2000 }, (res) => {
      res.resume();
      resolve(res.statusCode === 200);
    });
    req.on('timeout', () => req.destroy());
    req.on('error', () => resolve(false));
  });
}
