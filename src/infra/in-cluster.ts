/**
 * The product installed into the stack's own cluster the way a platform team installs it: the
 * chart (charts/durable-operators) by the real helm, with the project's image from the stack's
 * registry, every role a Pod of the stack's node. Used by `dev --in-cluster` and by the cluster
 * tests (test/cluster/install.test.ts), so both install the same release.
 *
 * What a team would write by hand is written here: the webhook's serving certificate (no
 * cert-manager in the stack), the fast path's agent key, the values naming this cluster's
 * Temporal, tenant etcd and registry.
 */
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { randomBytes } from 'node:crypto';
import { issueLeaf, newCa } from '../admission/certs.js';
import { isAlreadyExists, type KubeClient } from '../kube/client.js';
import { ensureBinary } from './binaries.js';
import type { StackInfo } from './stack.js';

const run = promisify(execFile);

export const RELEASE = 'durable-operators';
export const RELEASE_NAMESPACE = 'durable-operators';

export interface ReleaseImage {
  repository: string;
  tag: string;
}

export interface ReleaseOptions {
  image: ReleaseImage;
  /** Namespaces where SandboxPools will live: the fast path may create agent Pods there. */
  poolNamespaces: string[];
  /** The Cloudflare API the worker calls (the emulator on the node's address), if any. */
  cloudflareBaseUrl?: string;
  /** Replicas per role (default 1; the webhook 2, so its disruption budget holds one). */
  replicas?: Partial<Record<'worker' | 'watcher' | 'fastpath' | 'admission', number>>;
  tenantPrefix?: string;
}

/** The values a platform team writes for this cluster: its registry, Temporal, tenant etcd, no cert-manager. */
export function releaseValues(stack: StackInfo, release: ReleaseOptions, admissionCaBundle: string): object {
  const node = nodeOf(stack);
  const port = (address: string) => address.slice(address.lastIndexOf(':') + 1);
  return {
    image: { repository: release.image.repository, tag: release.image.tag, pullPolicy: 'IfNotPresent' },
    temporal: { address: node.temporalAddress, namespace: stack.temporal.namespace },
    worker: {
      replicas: release.replicas?.worker ?? 1,
      env: {
        DO_REQUEST_TTL: '1h',
        ...(release.cloudflareBaseUrl ? { CLOUDFLARE_API_BASE_URL: release.cloudflareBaseUrl } : {}),
      },
    },
    watcher: { replicas: release.replicas?.watcher ?? 1 },
    fastpath: {
      replicas: release.replicas?.fastpath ?? 1,
      tenantEtcd: `http://${node.address}:${port(stack.tenantEtcd.endpoint)}`,
      ...(release.tenantPrefix ? { tenantPrefix: release.tenantPrefix } : {}),
      agentPodNamespaces: release.poolNamespaces,
    },
    admission: { replicas: release.replicas?.admission ?? 2, certManager: false, caBundle: admissionCaBundle },
  };
}

/**
 * A SandboxPool's agent Pod on this node: deploy/examples/sandbox-pool.yaml's, with the stack's
 * containerd (its socket by hostPath at the same path, its runc state root) instead of the node's
 * default one.
 */
export function agentTemplate(stack: StackInfo, image: string, pool: string, opts: { gvisor?: boolean } = {}): object {
  const c = stack.containerd;
  if (!c) throw new Error('the stack runs no containerd: agent Pods need one');
  const ioDir = `/run/fast-sandbox-${path.basename(stack.stateDir)}`;
  // For runtimeType gvisor: the node's runsc (the stack's wrapper with this host's flags), at the
  // same path in the Pod as on the node, where the runc shim runs it.
  const runsc = opts.gvisor ? c.runscBinary : undefined;
  if (opts.gvisor && !runsc) throw new Error('the stack has no runsc: a gVisor pool needs it on the node');
  return {
    metadata: { labels: { app: 'sandbox-agent', 'fast-sandbox.io/pool': pool } },
    spec: {
      automountServiceAccountToken: false,
      terminationGracePeriodSeconds: 10,
      containers: [
        {
          name: 'agent',
          image,
          args: ['agent', '--containerd-socket', c.socket, '--runtime-root', c.runcRoot, '--io-dir', ioDir],
          ports: [{ name: 'agent', containerPort: 5758 }],
          env: [
            { name: 'POD_NAME', valueFrom: { fieldRef: { fieldPath: 'metadata.name' } } },
            { name: 'NODE_NAME', valueFrom: { fieldRef: { fieldPath: 'spec.nodeName' } } },
            { name: 'POD_IP', valueFrom: { fieldRef: { fieldPath: 'status.podIP' } } },
            { name: 'HOST_IP', valueFrom: { fieldRef: { fieldPath: 'status.hostIP' } } },
            ...(runsc ? [{ name: 'RUNSC_BINARY', value: runsc }] : []),
          ],
          securityContext: { runAsUser: 0, privileged: true, readOnlyRootFilesystem: true },
          volumeMounts: [
            { name: 'containerd-socket', mountPath: c.socket },
            { name: 'sandbox-io', mountPath: ioDir },
            { name: 'netns', mountPath: '/run/netns', mountPropagation: 'Bidirectional' },
            { name: 'run', mountPath: '/run/durable-operators' },
            { name: 'tmp', mountPath: '/tmp' },
            ...(runsc ? [{ name: 'runsc', mountPath: runsc, readOnly: true }] : []),
          ],
        },
      ],
      volumes: [
        { name: 'containerd-socket', hostPath: { path: c.socket, type: 'Socket' } },
        { name: 'sandbox-io', hostPath: { path: ioDir, type: 'DirectoryOrCreate' } },
        { name: 'netns', hostPath: { path: '/run/netns', type: 'DirectoryOrCreate' } },
        { name: 'run', emptyDir: {} },
        { name: 'tmp', emptyDir: {} },
        ...(runsc ? [{ name: 'runsc', hostPath: { path: runsc, type: 'File' } }] : []),
      ],
    },
  };
}

/**
 * `helm upgrade --install` of the chart, waiting until every role's Pods are Ready: first the
 * release namespace, the webhook's serving certificate and the agents' key (kept if present),
 * then the values file (written beside the stack's state). Returns that file.
 */
export async function installRelease(stack: StackInfo, kube: KubeClient, release: ReleaseOptions): Promise<string> {
  for (const name of [RELEASE_NAMESPACE, ...release.poolNamespaces])
    await kube.core.createNamespace({ body: { metadata: { name } } }).catch(ignoreExisting);
  const ca = await newCa('durable-operators-admission-ca');
  const leaf = await issueLeaf(ca, {
    subject: 'CN=durable-operators-admission',
    usage: 'server',
    hosts: [`durable-operators-admission.${RELEASE_NAMESPACE}.svc`],
  });
  const tls = {
    metadata: { name: 'durable-operators-admission-tls', namespace: RELEASE_NAMESPACE },
    type: 'kubernetes.io/tls',
    stringData: { 'tls.crt': leaf.certPem, 'tls.key': leaf.keyPem },
  };
  // A new CA each install: the Secret and the caBundle the chart registers change together.
  await kube.core.deleteNamespacedSecret({ namespace: RELEASE_NAMESPACE, name: tls.metadata.name }).catch(() => {});
  await kube.core.createNamespacedSecret({ namespace: RELEASE_NAMESPACE, body: tls });
  await kube.core
    .createNamespacedSecret({
      namespace: RELEASE_NAMESPACE,
      body: { metadata: { name: 'sandbox-agent-token' }, stringData: { token: randomBytes(24).toString('hex') } },
    })
    .catch(ignoreExisting);
  const valuesFile = path.join(stack.stateDir, 'release-values.json');
  await writeFile(
    valuesFile,
    JSON.stringify(releaseValues(stack, release, Buffer.from(ca.certPem).toString('base64'))),
  );
  await helm(stack, [
    'upgrade',
    '--install',
    RELEASE,
    'charts/durable-operators',
    '-n',
    RELEASE_NAMESPACE,
    '-f',
    valuesFile,
    '--wait',
    '--timeout',
    '8m',
  ]);
  return valuesFile;
}

/** The real helm (built from its Go module, cached) on the stack's cluster, from the checkout. */
export async function helm(stack: StackInfo, args: string[], timeoutMs = 600_000): Promise<string> {
  const bin = (await ensureBinary('helm')).path;
  try {
    const { stdout } = await run(bin, [...args, '--kubeconfig', stack.kubeconfig], {
      cwd: path.resolve(import.meta.dirname, '../..'),
      timeout: timeoutMs,
      maxBuffer: 64 << 20,
    });
    return stdout;
  } catch (err) {
    const e = err as { stderr?: string; message: string };
    throw new Error(`helm ${args.join(' ')}: ${e.stderr || e.message}`);
  }
}

function nodeOf(stack: StackInfo) {
  if (!stack.node) throw new Error('the stack runs no node: start it with a node (dev --in-cluster)');
  return stack.node;
}

function ignoreExisting(err: unknown): void {
  if (!isAlreadyExists(err)) throw err;
}
