/**
 * The admission webhook's HTTPS server (`durable-operators admission`): AdmissionReview v1 on
 * each webhook's path (WEBHOOK_PATHS; LEGACY_WEBHOOK_PATH for every kind, for one release),
 * `/healthz` and `/readyz` for probes. node:https is enough for one JSON endpoint;
 * the apiserver is the only client of the webhook path.
 *
 * The serving certificate is re-read when its file changes, so a certificate renewed by
 * cert-manager (a mounted Secret) is served without a restart.
 */
import { Probes, apiserverReachable } from '../health/probes.js';
import { unwatchFile, watchFile } from 'node:fs';
import { readFile } from 'node:fs/promises';
import https from 'node:https';
import { performance } from 'node:perf_hooks';
import type { AddressInfo } from 'node:net';
import { registerBuildInfo } from '../build-info.js';
import { startOpsServer, type OpsServer } from '../health/ops-server.js';
import { createKubeRequestMetrics, type KubeClient } from '../kube/client.js';
import { logger as rootLogger, type Logger } from '../log.js';
import type { AllowedCapabilities } from '../domain/sandbox-capabilities.js';
import { AccessReviewer } from './access.js';
import { createAdmissionMetrics } from './metrics.js';
import { credentialsUseRefusalOf } from './cloudflare-credentials.js';
import { tunnelRecordRefusalOf } from './cloudflare-id.js';
import {
  allow,
  checksFor,
  describeUser,
  refuse,
  refusalMessage,
  sandboxPoolCapabilitiesRefusal,
  type AdmissionRequest,
  type AdmissionResponse,
  type AdmissionReview,
} from './review.js';
import { WEBHOOK_PATHS, webhookAt, webhookOfKind } from './webhook.js';

export interface AdmissionServerOptions {
  kube: KubeClient;
  /** 0 = any free port. */
  port: number;
  host?: string;
  certFile: string;
  keyFile: string;
  /** Per capability, the namespaces whose SandboxPools may add it (`*`: all); none when unset. */
  allowedCapabilities?: AllowedCapabilities;
  /** Plain-HTTP port of /metrics, /healthz and /readyz for Prometheus (0 = any free port); none when unset. */
  metricsPort?: number;
  log?: Logger;
}

export interface RunningAdmissionServer {
  port: number;
  metricsPort?: number;
  close(): Promise<void>;
}

/** AdmissionReview bodies are bounded by the apiserver's own request limit (3 MiB); allow some slack. */
const MAX_BODY_BYTES = 6 * 1024 * 1024;

export async function startAdmissionServer(opts: AdmissionServerOptions): Promise<RunningAdmissionServer> {
  const log = opts.log ?? rootLogger.child({ role: 'admission' });
  const metrics = createAdmissionMetrics();
  registerBuildInfo(metrics.registry, 'admission');
  opts.kube.recordRequests(createKubeRequestMetrics(metrics.registry));
  const reviewer = new AccessReviewer(opts.kube);
  const loadTls = async () => ({ cert: await readFile(opts.certFile), key: await readFile(opts.keyFile) });

  // Every review asks the apiserver (SubjectAccessReview): not ready while it cannot.
  const probes = new Probes({ ready: [apiserverReachable(opts.kube)] });
  const server = https.createServer({ ...(await loadTls()), minVersion: 'TLSv1.2' }, (req, res) => {
    const path = (req.url ?? '/').split('?')[0]!;
    const probe = req.method === 'GET' ? probes.answer(path) : undefined;
    if (probe)
      return void probe.then(({ status, text }) => res.writeHead(status, { 'content-type': 'text/plain' }).end(text));
    const webhook = webhookAt(path);
    if (req.method !== 'POST' || !webhook) {
      res.writeHead(404).end();
      return;
    }
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (c: Buffer) => {
      size += c.length;
      if (size > MAX_BODY_BYTES) req.destroy(new Error('AdmissionReview too large'));
      else chunks.push(c);
    });
    req.on('error', (err) => log.warn({ err }, 'admission request body not read'));
    req.on('end', () => {
      const started = performance.now();
      void answer(Buffer.concat(chunks).toString('utf8'), webhook, path).then(
        (body) => {
          const kind = body.kind;
          const verdict = body.review.response!;
          metrics.reviews.inc({ kind, allowed: String(verdict.allowed), code: verdict.status?.code ?? 200 });
          metrics.duration.observe({ kind }, (performance.now() - started) / 1000);
          res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(body.review));
        },
        (err: unknown) => {
          metrics.reviews.inc({ kind: '', allowed: 'false', code: 400 });
          log.error({ err }, 'admission review failed');
          res.writeHead(400, { 'content-type': 'text/plain' }).end('malformed AdmissionReview');
        },
      );
    });
  });

  async function answer(
    raw: string,
    webhook: ReturnType<typeof webhookAt>,
    path: string,
  ): Promise<{ kind: string; review: AdmissionReview }> {
    const review = JSON.parse(raw) as AdmissionReview;
    const request = review.request;
    if (review.kind !== 'AdmissionReview' || !request?.uid)
      throw new Error('not an admission.k8s.io/v1 AdmissionReview');
    const response =
      webhook === 'legacy' || webhookOfKind(request.kind) === webhook
        ? await decide(request)
        : misrouted(request, path);
    return {
      kind: request.kind.kind,
      review: { apiVersion: 'admission.k8s.io/v1', kind: 'AdmissionReview', response },
    };
  }

  /** A kind sent to another webhook's path: a registration that does not match this server, refused (fail closed). */
  function misrouted(request: AdmissionRequest, path: string): AdmissionResponse {
    const own = webhookOfKind(request.kind);
    log.error({ uid: request.uid, kind: request.kind.kind, path }, 'admission: a review sent to another kind’s path');
    return refuse(
      request.uid,
      400,
      `the admission webhook's path ${path} does not review ${request.kind.kind}` +
        (own ? ` (its path is ${WEBHOOK_PATHS[own]})` : '') +
        `: re-apply the ValidatingWebhookConfiguration durable-operators-admission of this release`,
    );
  }

  async function decide(request: AdmissionRequest): Promise<AdmissionResponse> {
    const { uid, userInfo } = request;
    const kind = request.kind.kind;
    const checks = checksFor(request);
    // Who asked and for what: names and verbs only, never the object's content or any credential.
    const ctx = {
      uid,
      kind,
      namespace: request.namespace,
      name: request.object?.metadata?.name ?? request.name,
      user: userInfo.username,
    };
    if (!checks) {
      log.debug(ctx, 'admission: not reviewed');
      return allow(uid);
    }
    try {
      const refusals = await reviewer.refusals(checks, userInfo);
      const capabilities =
        refusals.length === 0 ? sandboxPoolCapabilitiesRefusal(request, opts.allowedCapabilities ?? {}) : undefined;
      if (capabilities) {
        log.info(ctx, 'admission: refused by the allowed sandbox capabilities');
        return refuse(uid, 403, capabilities);
      }
      const tunnelRecord = refusals.length === 0 ? await tunnelRecordRefusalOf(opts.kube, request) : undefined;
      if (tunnelRecord) {
        log.info(ctx, "admission: refused, the worker's tunnel record");
        return refuse(uid, 403, tunnelRecord);
      }
      const credentialsUse = refusals.length === 0 ? await credentialsUseRefusalOf(opts.kube, request) : undefined;
      if (credentialsUse) {
        log.info(ctx, 'admission: refused by the credentials');
        return refuse(uid, 403, credentialsUse);
      }
      if (refusals.length === 0) {
        log.info({ ...ctx, targets: checks.length }, 'admission: allowed');
        return allow(uid);
      }
      const message = refusalMessage(kind, refusals, userInfo);
      log.info({ ...ctx, refused: refusals.length }, 'admission: refused');
      return refuse(uid, 403, message);
    } catch (err) {
      // Fail closed: an access check that could not be made is not a pass.
      log.error({ ...ctx, err }, 'admission: access check failed');
      return refuse(
        uid,
        500,
        `could not check whether ${describeUser(userInfo)} may use the targets of this ${kind}; try again`,
      );
    }
  }

  // Polling stat follows the symlink swap kubelet does when a mounted Secret changes.
  const reload = () => {
    loadTls().then(
      (tls) => {
        server.setSecureContext({ ...tls, minVersion: 'TLSv1.2' });
        log.info('admission: serving certificate reloaded');
      },
      (err: unknown) => log.warn({ err }, 'admission: serving certificate not reloaded'),
    );
  };
  watchFile(opts.certFile, { interval: 30_000 }, reload);
  // Longer than the apiserver's idle timeout for webhook connections (90 s): the client closes an
  // idle connection first, never reusing one this server is closing (Node's default 5 s made a
  // review fail now and then with "write: broken pipe" — with failurePolicy Fail, a refused create).
  server.keepAliveTimeout = 120_000;

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(opts.port, opts.host ?? '0.0.0.0', () => {
      server.off('error', reject);
      resolve();
    });
  });
  const port = (server.address() as AddressInfo).port;
  const ops: OpsServer | undefined =
    opts.metricsPort === undefined
      ? undefined
      : await startOpsServer({ port: opts.metricsPort, registry: metrics.registry, probes });
  log.info({ port, paths: Object.values(WEBHOOK_PATHS), metricsPort: ops?.port }, 'admission webhook serving');
  return {
    port,
    metricsPort: ops?.port,
    async close() {
      await ops?.close();
      unwatchFile(opts.certFile, reload);
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
