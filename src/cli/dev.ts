/**
 * `durable-operators dev`: the real local stack plus worker, watcher, the sandbox fast path
 * with a default pool of agents and the Cloudflare API emulator, in one process tree. Worker, watcher and fast path run as child
 * processes of this one (as they would as separate Deployments); the agents run as processes
 * whose Pods dev writes the way a kubelet would (there is no kubelet here). Ctrl-C stops
 * everything, children first.
 */
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { CloudflareCredentialsKind } from '../api/cloudflare.js';
import { AGENT_APP_LABEL, AGENT_APP_VALUE, AGENT_POOL_LABEL, SandboxPoolKind } from '../api/sandbox.js';
import { AgentFleet } from '../infra/agent-fleet.js';
import { PoolKubelets } from '../infra/pool-kubelets.js';
import { LocalStack, localTemporalEnv } from '../infra/stack.js';
import { RELEASE, RELEASE_NAMESPACE, agentTemplate, installRelease } from '../infra/in-cluster.js';
import { buildProjectImage, pushProjectImage } from '../infra/project-image.js';
import { ManagedProcess, getFreePort, isPortFree, waitUntilReady } from '../infra/process.js';
import { KubeClient } from '../kube/client.js';
import { DEFAULT_CODEC_SERVER_PORT } from './codec-server.js';
import { untilShutdownSignal } from './signals.js';
import { DEMO_TENANT, seedDemoTenant } from './tenants.js';

/** The pool `dev` keeps ready in namespace `default`. */
export const DEV_POOL = 'default-pool';
const DEV_AGENTS = 2;
const DEV_AGENT_CAPACITY = 5;

/** dev's default pool in namespace `default`: DEV_AGENTS agents, whatever runs their Pods. */
async function applyDevPool(kube: KubeClient, agentTemplate: object): Promise<void> {
  await kube.apply({
    apiVersion: SandboxPoolKind.apiVersion,
    kind: SandboxPoolKind.kind,
    metadata: { name: DEV_POOL, namespace: 'default' },
    spec: {
      capacity: { poolMin: DEV_AGENTS, poolMax: DEV_AGENTS, bufferMin: 0, bufferMax: DEV_AGENT_CAPACITY },
      maxSandboxesPerPod: DEV_AGENT_CAPACITY,
      agentTemplate,
    },
  });
}

/** A stable secret per state dir (0600): the agents' token, the emulator's API token. */
async function stateSecret(stateDir: string, name: string): Promise<{ token: string; file: string }> {
  const file = path.join(stateDir, name);
  if (!existsSync(file)) await writeFile(file, randomBytes(24).toString('hex'), { mode: 0o600 });
  return { token: (await readFile(file, 'utf8')).trim(), file };
}

/**
 * The Cloudflare API emulator's entry point: a test tool under test/ (never in the image), run
 * by tsx (a dev dependency, as dev itself is). Its port: `wrangler dev` uses 8787, this one stays
 * clear of it.
 */
const CF_EMULATOR_MAIN = fileURLToPath(new URL('../../test/emulators/cloudflare/main.ts', import.meta.url));
const DEFAULT_CF_EMULATOR_PORT = 28787;

/** The account and zone the dev emulator starts with (what deploy/examples/cloudflare/ targets). */
export const DEV_CLOUDFLARE = {
  accountId: '0d0d0d0d0d0d0d0d0d0d0d0d0d0d0d0d',
  zoneId: '0e0e0e0e0e0e0e0e0e0e0e0e0e0e0e0e',
  zone: 'example.com',
  /** The operator's namespace, where the credentials' Secret lives (as in deploy/). */
  namespace: 'durable-operators',
} as const;

/**
 * The local Cloudflare API emulator as a child process, seeded with one account and zone, and
 * the Secret + default CloudflareCredentials pointing the operator at it — what a user does
 * with deploy/examples/cloudflare/credentials.yaml against the real API.
 */
async function startCloudflareEmulatorProcess(
  opts: DevOptions,
  info: { logsDir: string; kubeconfig: string },
  env: NodeJS.ProcessEnv,
  /** Where it listens: loopback, or the node's address when the worker is a Pod. */
  host = '127.0.0.1',
): Promise<{ process: ManagedProcess; baseURL: string; token: string; tokenFile: string }> {
  const { token, file: tokenFile } = await stateSecret(opts.stateDir, 'cloudflare-token');
  const port = await portOr(DEFAULT_CF_EMULATOR_PORT);
  const seed = path.join(opts.stateDir, 'cloudflare-seed.json');
  await writeFile(
    seed,
    JSON.stringify({
      accounts: [{ id: DEV_CLOUDFLARE.accountId, name: 'dev account' }],
      zones: [{ id: DEV_CLOUDFLARE.zoneId, name: DEV_CLOUDFLARE.zone, account_id: DEV_CLOUDFLARE.accountId }],
    }),
  );
  const proc = ManagedProcess.start({
    name: 'cloudflare-emulator',
    command: process.execPath,
    args: [
      '--import',
      import.meta.resolve('tsx'),
      CF_EMULATOR_MAIN,
      '--port',
      String(port),
      '--host',
      host,
      '--tokens-file',
      tokenFile,
      '--seed',
      seed,
    ],
    env,
    logFile: path.join(info.logsDir, 'cloudflare-emulator.log'),
  });
  const baseURL = `http://${host}:${port}/client/v4`;
  await waitUntilReady(
    'cloudflare emulator',
    async () => (await fetch(`${baseURL}/user/tokens/verify`, { headers: { authorization: `Bearer ${token}` } })).ok,
    { timeoutMs: 30_000, process: proc },
  );
  const kube = KubeClient.fromKubeconfig(info.kubeconfig);
  await kube.apply({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: DEV_CLOUDFLARE.namespace } });
  await kube.apply({
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: { name: 'cloudflare-api-token', namespace: DEV_CLOUDFLARE.namespace },
    stringData: { CLOUDFLARE_API_TOKEN: token },
  });
  await kube.apply({
    apiVersion: CloudflareCredentialsKind.apiVersion,
    kind: CloudflareCredentialsKind.kind,
    metadata: { name: 'default' },
    spec: {
      accountId: DEV_CLOUDFLARE.accountId,
      authType: 'apiToken',
      isDefault: true,
      // A local playground: every namespace may use the default, set priorities and adopt records.
      allowedNamespaces: ['*'],
      priorityNamespaces: ['*'],
      adoptNamespaces: ['*'],
      secretRef: {
        name: 'cloudflare-api-token',
        namespace: DEV_CLOUDFLARE.namespace,
        apiTokenKey: 'CLOUDFLARE_API_TOKEN',
      },
    },
  });
  return { process: proc, baseURL, token, tokenFile };
}

/**
 * The payload key of the state dir (made once, kept: the dev server's database outlives a run)
 * and a token for the codec server, whose endpoint the Web UI gets with the token as its first
 * path segment (the dev UI has no login to forward a token from).
 */
async function devPayloadEncryption(stateDir: string) {
  const keysDir = path.join(stateDir, 'payload-keys');
  await mkdir(keysDir, { recursive: true, mode: 0o700 });
  const keyFile = path.join(keysDir, 'dev-1');
  if (!existsSync(keyFile)) await writeFile(keyFile, randomBytes(32).toString('base64'), { mode: 0o600 });
  const { token, file: tokensFile } = await stateSecret(stateDir, 'codec-server-token');
  const port = await portOr(DEFAULT_CODEC_SERVER_PORT);
  return { keysDir, token, tokensFile, port, uiEndpoint: `http://127.0.0.1:${port}/${token}` };
}

/** The codec server as a child process, for the Web UI's origin; `ready` once it answers (the other roles start meanwhile). */
function startCodecServerProcess(
  codec: Awaited<ReturnType<typeof devPayloadEncryption>>,
  info: { logsDir: string; temporal: { uiUrl?: string } },
  self: string[],
  env: NodeJS.ProcessEnv,
): { process: ManagedProcess; ready: Promise<void> } {
  const proc = ManagedProcess.start({
    name: 'codec-server',
    command: process.execPath,
    // Path tokens: the dev UI has no login to forward a token from (loopback only).
    args: [...self, 'codec-server', '--host', '127.0.0.1', '--port', String(codec.port), '--path-tokens'],
    env: {
      ...env,
      DO_CODEC_SERVER_TOKENS_FILE: codec.tokensFile,
      DO_CODEC_SERVER_CORS_ORIGINS: info.temporal.uiUrl ?? '',
    },
    logFile: path.join(info.logsDir, 'codec-server.log'),
  });
  const ready = waitUntilReady('codec server', async () => (await fetch(`http://127.0.0.1:${codec.port}/healthz`)).ok, {
    timeoutMs: 60_000,
    process: proc,
  });
  ready.catch(() => undefined); // awaited before the banner; not an unhandled rejection meanwhile
  return { process: proc, ready };
}

async function portOr(preferred: number): Promise<number> {
  return (await isPortFree(preferred)) ? preferred : getFreePort();
}

export interface DevOptions {
  stateDir: string;
  worker: boolean;
  watcher: boolean;
  /** The fast path and its default pool of agents. */
  fastpath?: boolean;
  /** The Cloudflare API emulator, with credentials for the operator. */
  cloudflare?: boolean;
  /** The roles as Pods of the stack's own node, installed by helm from the image built here. */
  inCluster?: boolean;
}

export async function runDev(opts: DevOptions): Promise<void> {
  if (opts.inCluster) return runDevInCluster(opts);
  const codec = await devPayloadEncryption(opts.stateDir);
  const stack = await LocalStack.start({ stateDir: opts.stateDir, mode: 'dev', uiCodecEndpoint: codec.uiEndpoint });
  const { info } = stack;
  // Every role encrypts payloads with the state dir's key, as a Deployment with the keys' Secret.
  const env = { ...localTemporalEnv(info), KUBECONFIG: info.kubeconfig, DO_PAYLOAD_KEYS_DIR: codec.keysDir };
  // A demo tenant (and the default resolver config unless one is set) in the tenant etcd, with an
  // API key for the sandbox fast path (the same across runs: kept in the state dir).
  const { token: demoApiKey } = await stateSecret(opts.stateDir, 'demo-api-key');
  await seedDemoTenant(info.tenantEtcd.endpoint, { apiKey: demoApiKey });
  // Re-run this same CLI (same Node flags, e.g. the tsx loader) for each role.
  const self = [...process.execArgv, process.argv[1]!];
  const codecServer = startCodecServerProcess(codec, info, self, env);
  const children: ManagedProcess[] = [codecServer.process];
  const cloudflare = opts.cloudflare !== false ? await startCloudflareEmulatorProcess(opts, info, env) : undefined;
  if (cloudflare) children.push(cloudflare.process);
  if (opts.worker) {
    children.push(
      ManagedProcess.start({
        name: 'worker',
        command: process.execPath,
        args: [...self, 'worker'],
        env: { ...env, ...(cloudflare ? { CLOUDFLARE_API_BASE_URL: cloudflare.baseURL } : {}) },
        logFile: path.join(info.logsDir, 'worker.log'),
      }),
    );
  }
  if (opts.watcher) {
    children.push(
      ManagedProcess.start({
        name: 'watcher',
        command: process.execPath,
        args: [...self, 'watcher', '--metrics-port', '0'],
        env,
        logFile: path.join(info.logsDir, 'watcher.log'),
      }),
    );
  }
  let fleet: AgentFleet | undefined;
  let kubelets: PoolKubelets | undefined;
  let fastpathPorts: { grpc: number; http: number } | undefined;
  if (opts.fastpath !== false) {
    const kube = KubeClient.fromKubeconfig(info.kubeconfig);
    const { token, file: tokenFile } = await stateSecret(opts.stateDir, 'agent-token');
    await applyDevPool(kube, {});
    // Agent Pods of an earlier run: their processes died with it (a node that went away).
    for await (const pod of kube.listAll('v1', 'Pod', {
      namespace: 'default',
      labelSelector: `${AGENT_APP_LABEL}=${AGENT_APP_VALUE},${AGENT_POOL_LABEL}=${DEV_POOL}`,
    }))
      await kube.core
        .deleteNamespacedPod({ name: pod.metadata!.name!, namespace: 'default', gracePeriodSeconds: 0 })
        .catch(() => undefined);
    fleet = await AgentFleet.start({
      kube,
      namespace: 'default',
      pool: DEV_POOL,
      count: DEV_AGENTS,
      capacity: DEV_AGENT_CAPACITY,
      agentKey: token,
      stateDir: opts.stateDir,
      // Containers under the stack's containerd whenever it runs one (root, tools installed).
      ...(info.containerd && info.registry
        ? { containerd: info.containerd, warmImages: [{ image: info.registry.images.busybox, count: 1 }] }
        : {}),
    });
    // Every other pool's agent Pods run too (as a kubelet would), so pool sizing can be tried.
    kubelets = new PoolKubelets(
      kube,
      {
        capacity: DEV_AGENT_CAPACITY,
        agentKey: token,
        stateDir: opts.stateDir,
        ...(info.containerd && info.registry ? { containerd: info.containerd } : {}),
      },
      (namespace, pool) => namespace === 'default' && pool === DEV_POOL,
    ).start();
    fastpathPorts = { grpc: await portOr(9090), http: await portOr(9080) };
    children.push(
      ManagedProcess.start({
        name: 'fastpath',
        command: process.execPath,
        args: [
          ...self,
          'fastpath',
          '--grpc-port',
          String(fastpathPorts.grpc),
          '--http-port',
          String(fastpathPorts.http),
          '--host',
          '127.0.0.1',
          '--metrics-port',
          '0',
        ],
        env: { ...env, DO_AGENT_TOKEN_FILE: tokenFile, DO_TENANT_ETCD: info.tenantEtcd.endpoint },
        logFile: path.join(info.logsDir, 'fastpath.log'),
      }),
    );
  }
  await codecServer.ready;
  // The image-only create of the banner: the demo image's own entrypoint (the process runtime needs a command).
  const demoImage = info.registry?.images.busybox ?? 'demo';
  // Short paths when under the working directory, absolute otherwise.
  const rel = (p: string) => {
    const r = path.relative(process.cwd(), p);
    return r && !r.startsWith('..') ? r : p;
  };
  console.log(
    [
      '',
      'durable-operators dev is running. Ctrl-C stops everything.',
      '',
      `  Temporal UI       ${info.temporal.uiUrl}  (payloads encrypted; the UI decodes them through the codec server)`,
      `  codec server      http://127.0.0.1:${codec.port}  (temporal workflow show --codec-endpoint http://127.0.0.1:${codec.port} --codec-auth "Bearer $(cat ${rel(codec.tokensFile)})" …)`,
      `  Temporal gRPC     ${info.temporal.address}  (temporal --address ${info.temporal.address} workflow list)`,
      `  kube-apiserver    ${info.kube.server}`,
      ...(info.admission
        ? [
            `  admission webhook ${info.admission.url}  (capture requests: their creator must be able to read each target)`,
          ]
        : []),
      `  kubeconfig        ${rel(info.kubeconfig)}`,
      `  tenant etcd       ${info.tenantEtcd.endpoint}  (demo tenant ${DEMO_TENANT.id}: npm run cli -- tenants get ${DEMO_TENANT.id} --etcd ${info.tenantEtcd.endpoint})`,
      `  logs              ${rel(info.logsDir)}/  (worker.log, watcher.log, kube-apiserver.log, ...)`,
      '',
      'Try it:',
      `  export KUBECONFIG=${rel(info.kubeconfig)}`,
      '  kubectl apply -f deploy/examples/objectkeeper-ttl.yaml -l durable-operators.io/example-step=1',
      '  kubectl get objectkeepers        # then follow the steps in deploy/examples/*.yaml',
      `  open ${info.temporal.uiUrl}  and search: K8sKind="ObjectKeeper"`,
      '',
      '  kubectl apply -f deploy/examples/manifest-capture.yaml && kubectl get mcr capture-demo -w',
      '  npm run cli -- checkpoint export "$(kubectl get mcr capture-demo -o jsonpath={.status.checkpointName})"',
      `  open ${info.temporal.uiUrl}  and search: K8sKind="ManifestCaptureRequest"`,
      '',
      ...(fastpathPorts
        ? [
            `Sandbox fast path (pool ${DEV_POOL} in namespace default: ${DEV_AGENTS} agents × ${DEV_AGENT_CAPACITY} sandboxes; tenant ${DEMO_TENANT.id}):`,
            info.containerd && info.registry
              ? `  runtime containerd/runc (containerd ${rel(info.containerd.socket)}; images from the registry ${info.registry.host}, demo image ${info.registry.images.busybox}, kept warm)\n` +
                `  network: a namespace per sandbox, egress policy internet (public addresses only: never the agents, this machine, other sandboxes, private or link-local ranges; docs/sandbox.md, Network)` +
                (info.isolationNote ? `\n  ${info.isolationNote}` : '')
              : `  runtime process: NOT ISOLATED (sandboxes are plain processes of this user)\n  ${info.isolationNote ?? 'containerd isolation off'}`,
            `  gRPC  127.0.0.1:${fastpathPorts.grpc}  (fastpath.v1.FastPathService, src/api/proto/fastpath/v1/fastpath.proto)`,
            `  HTTP  http://127.0.0.1:${fastpathPorts.http}/api/v1/sandboxes`,
            `  API key of tenant ${DEMO_TENANT.id}: ${demoApiKey}  (npm run cli -- tenants api-key add|remove)`,
            `  grpcurl -plaintext -import-path src/api/proto -proto fastpath/v1/fastpath.proto -H 'x-tenant-id: ${DEMO_TENANT.id}' -H 'authorization: Bearer ${demoApiKey}' \\`,
            `    -d '{"name":"hello","image":"${demoImage}","pool_ref":"${DEV_POOL}"${info.registry ? '' : ',"command":["/bin/sleep","3600"]'}}' \\`,
            `    127.0.0.1:${fastpathPorts.grpc} fastpath.v1.FastPathService/CreateSandbox`,
            `  curl -H 'x-tenant-id: ${DEMO_TENANT.id}' -H 'authorization: Bearer ${demoApiKey}' -d '{"name":"hi","image":"${demoImage}","poolRef":"${DEV_POOL}","command":["/bin/sleep","3600"]}' \\`,
            `    http://127.0.0.1:${fastpathPorts.http}/api/v1/sandboxes`,
            `  curl -H 'x-tenant-id: ${DEMO_TENANT.id}' -H 'authorization: Bearer ${demoApiKey}' http://127.0.0.1:${fastpathPorts.http}/api/v1/namespaces/default/sandboxes`,
            `  curl -X DELETE -H 'x-tenant-id: ${DEMO_TENANT.id}' -H 'authorization: Bearer ${demoApiKey}' http://127.0.0.1:${fastpathPorts.http}/api/v1/namespaces/default/sandboxes/hi`,
            '  kubectl get sandboxes -o wide   # Phase, Agent, Endpoints',
            `  open ${info.temporal.uiUrl}  and search: K8sKind="Sandbox"`,
            '',
          ]
        : []),
      ...(cloudflare
        ? [
            `Cloudflare (the local API emulator; the worker uses it via CLOUDFLARE_API_BASE_URL; account ${DEV_CLOUDFLARE.accountId}, zone ${DEV_CLOUDFLARE.zone}):`,
            `  API base URL  ${cloudflare.baseURL}`,
            `  API token     ${cloudflare.token}  (also in ${rel(cloudflare.tokenFile)})`,
            '  kubectl apply -f deploy/examples/cloudflare/zone-rulesets.yaml -f deploy/examples/cloudflare/device-settings-policies.yaml',
            '  kubectl get cfss            # one CloudflareSyncState per Cloudflare target: sources, status, version',
            `  curl -s -H "Authorization: Bearer ${cloudflare.token}" ${cloudflare.baseURL}/zones/${DEV_CLOUDFLARE.zoneId}/rulesets/phases/http_request_firewall_custom/entrypoint`,
            `  temporal workflow signal --address ${info.temporal.address} --workflow-id cloudflare-sync/ZoneRuleset/${DEV_CLOUDFLARE.zoneId}/http_request_firewall_custom --name reaggregate`,
            `  open ${info.temporal.uiUrl}  and search: CloudflareTarget="ZoneRuleset/${DEV_CLOUDFLARE.zoneId}/http_request_firewall_custom"`,
            '',
          ]
        : []),
    ].join('\n'),
  );
  let stopping = false;
  for (const c of children) {
    void c.exited.then((code) => {
      if (!stopping) console.error(`${c.spec.name} exited unexpectedly (${code}); see ${c.spec.logFile}`);
    });
  }
  await untilShutdownSignal();
  stopping = true;
  console.log('stopping…');
  await Promise.all(children.map((c) => c.stop()));
  if (fleet) {
    console.log('stopping the agents…');
    await Promise.all([fleet.stop(), kubelets?.stop()]);
  }
  console.log('stopping the local stack…');
  await stack.stop();
  console.log('stopped.');
}

/**
 * `dev --in-cluster`: the stack with a real node, the project's image built here and pushed to
 * the stack's registry, and the chart installed by helm — worker, watcher, fast path and webhook
 * as Pods, the default pool's agents as Pods the kubelet runs. Temporal and the Cloudflare
 * emulator stay host processes, on the node's address.
 */
async function runDevInCluster(opts: DevOptions): Promise<void> {
  const t0 = Date.now();
  const log = (l: string) => process.stderr.write(`[dev] ${l} (${Date.now() - t0} ms)\n`);
  const stack = await LocalStack.start({ stateDir: opts.stateDir, mode: 'dev', node: true });
  const { info } = stack;
  const children: ManagedProcess[] = [];
  try {
    const image = await buildProjectImage({ log });
    const ref = await pushProjectImage(image, info.registry!.host);
    log(`image ${ref} ${image.built ? 'built' : 'from the cache'}`);
    const { token: demoApiKey } = await stateSecret(opts.stateDir, 'demo-api-key');
    await seedDemoTenant(info.tenantEtcd.endpoint, { apiKey: demoApiKey });
    const cloudflare =
      opts.cloudflare !== false
        ? await startCloudflareEmulatorProcess(opts, info, process.env, info.node!.address)
        : undefined;
    if (cloudflare) children.push(cloudflare.process);
    const kube = KubeClient.fromKubeconfig(info.kubeconfig);
    const release = { repository: ref.slice(0, ref.lastIndexOf(':')), tag: image.tag };
    await installRelease(info, kube, {
      image: release,
      poolNamespaces: ['default'],
      ...(cloudflare && { cloudflareBaseUrl: cloudflare.baseURL }),
    });
    log('release installed: every role Ready');
    await applyDevPool(kube, agentTemplate(info, `${release.repository}:${release.tag}`, DEV_POOL));
    const rel = (p: string) => path.relative(process.cwd(), p) || '.';
    process.stdout.write(
      [
        '',
        `durable-operators installed in the local cluster (${Math.round((Date.now() - t0) / 1000)} s): every role a Pod of node ${info.node!.name}`,
        `  kubeconfig        ${rel(info.kubeconfig)}  (kubectl -n ${RELEASE_NAMESPACE} get pods)`,
        `  release           helm -n ${RELEASE_NAMESPACE} status ${RELEASE}  (image ${ref})`,
        `  Temporal UI       ${info.temporal.uiUrl ?? '(headless)'}   gRPC ${info.temporal.address}`,
        `  sandbox pool      default/${DEV_POOL}: ${DEV_AGENTS} agent Pods (kubectl get pods -l fast-sandbox.io/pool=${DEV_POOL})`,
        `  demo tenant       ${DEMO_TENANT.id}, API key in ${rel(path.join(opts.stateDir, 'demo-api-key'))}`,
        ...(cloudflare
          ? [`  Cloudflare API    ${cloudflare.baseURL}  (the emulator; token in ${rel(cloudflare.tokenFile)})`]
          : []),
        `  Pod logs          ${rel(info.node!.podLogsDir)}/`,
        '',
        'Ctrl-C stops everything.',
        '',
      ].join('\n'),
    );
    await untilShutdownSignal();
  } finally {
    await Promise.allSettled(children.map((c) => c.stop()));
    await stack.stop();
  }
}
