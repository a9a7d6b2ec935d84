/**
 * One function per real server of the local stack. Each starts the process, waits until it
 * answers its own health endpoint, and returns a handle that can stop or restart it on the same
 * ports and data directory (tests use restart to simulate outages).
 */
import { generateKeyPairSync, randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import https from 'node:https';
import path from 'node:path';
import { Connection } from '@temporalio/client';
import { ManagedProcess, waitUntilReady } from './process.js';
import { SEARCH_ATTRIBUTE_DEFINITIONS } from '../temporal/search-attributes.js';

export interface Component {
  readonly name: string;
  readonly process: ManagedProcess;
  stop(): Promise<void>;
  /** SIGKILL (a crash), then start again with the same ports and data. */
  restart(opts?: { kill?: boolean }): Promise<void>;
}

/** A component that is one supervised process: stop and restart are the same for all of them. */
export abstract class BaseComponent implements Component {
  process!: ManagedProcess;
  constructor(readonly name: string) {}
  protected abstract launch(): Promise<void>;
  async stop(): Promise<void> {
    await this.process?.stop();
  }
  async restart(opts: { kill?: boolean } = {}): Promise<void> {
    if (opts.kill) await this.process.kill();
    else await this.process.stop();
    await this.launch();
  }
  /** Starts the server process and waits until `ready` says it serves (or it exits). */
  protected async spawnUntilReady(
    spec: { binary: string; logFile: string; args: string[] },
    ready: () => Promise<boolean>,
    wait: { timeoutMs: number; intervalMs?: number },
  ): Promise<void> {
    this.process = ManagedProcess.start({
      name: this.name,
      command: spec.binary,
      args: spec.args,
      logFile: spec.logFile,
    });
    await waitUntilReady(this.name, ready, { ...wait, process: this.process });
  }
}

// ---------------------------------------------------------------------------------------------
// etcd

export interface EtcdOptions {
  name: string;
  binary: string;
  dataDir: string;
  clientPort: number;
  peerPort: number;
  logFile: string;
  readyTimeoutMs?: number;
  /** Also serve clients on this address (the node's, for Pods), besides loopback. */
  extraClientHost?: string;
}

export class Etcd extends BaseComponent {
  constructor(readonly opts: EtcdOptions) {
    super(opts.name);
  }
  get endpoint(): string {
    return `http://127.0.0.1:${this.opts.clientPort}`;
  }
  static async start(opts: EtcdOptions): Promise<Etcd> {
    const etcd = new Etcd(opts);
    await etcd.launch();
    return etcd;
  }
  protected async launch(): Promise<void> {
    const { opts } = this;
    await mkdir(opts.dataDir, { recursive: true });
    const peer = `http://127.0.0.1:${opts.peerPort}`;
    await this.spawnUntilReady(
      {
        binary: opts.binary,
        logFile: opts.logFile,
        args: [
          `--name=${opts.name}`,
          `--data-dir=${opts.dataDir}`,
          `--listen-client-urls=${[this.endpoint, ...(opts.extraClientHost ? [`http://${opts.extraClientHost}:${opts.clientPort}`] : [])].join(',')}`,
          `--advertise-client-urls=${this.endpoint}`,
          `--listen-peer-urls=${peer}`,
          `--initial-advertise-peer-urls=${peer}`,
          `--initial-cluster=${opts.name}=${peer}`,
          '--unsafe-no-fsync=true',
          '--log-level=warn',
        ],
      },
      async () => {
        const res = await fetch(`${this.endpoint}/health`, { signal: AbortSignal.timeout(2000) });
        return res.ok && ((await res.json()) as { health?: string }).health === 'true';
      },
      { timeoutMs: opts.readyTimeoutMs ?? 60_000 },
    );
  }
}

// ---------------------------------------------------------------------------------------------
// Kubernetes control plane credentials

export interface ControlPlaneCredentials {
  adminToken: string;
  controllerManagerToken: string;
  tokenFile: string;
  saPublicKey: string;
  saPrivateKey: string;
}

/** Creates (once per state dir) the static tokens and the service-account signing key pair. */
export async function ensureCredentials(pkiDir: string): Promise<ControlPlaneCredentials> {
  await mkdir(pkiDir, { recursive: true, mode: 0o700 });
  const tokensJson = path.join(pkiDir, 'tokens.json');
  let tokens: { admin: string; controllerManager: string };
  if (existsSync(tokensJson)) {
    tokens = JSON.parse(await readFile(tokensJson, 'utf8'));
  } else {
    tokens = { admin: randomBytes(24).toString('hex'), controllerManager: randomBytes(24).toString('hex') };
    await writeFile(tokensJson, JSON.stringify(tokens), { mode: 0o600 });
  }
  const tokenFile = path.join(pkiDir, 'tokens.csv');
  await writeFile(
    tokenFile,
    `${tokens.admin},admin,admin-uid,"system:masters"\n` +
      `${tokens.controllerManager},system:kube-controller-manager,kcm-uid,"system:masters"\n`,
    { mode: 0o600 },
  );
  const saPublicKey = path.join(pkiDir, 'sa.pub');
  const saPrivateKey = path.join(pkiDir, 'sa.key');
  if (!existsSync(saPrivateKey)) {
    const { publicKey, privateKey } = generateKeyPairSync('rsa', {
      modulusLength: 2048,
      publicKeyEncoding: { type: 'spki', format: 'pem' },
      privateKeyEncoding: { type: 'pkcs8', format: 'pem' },
    });
    await writeFile(saPublicKey, publicKey, { mode: 0o600 });
    await writeFile(saPrivateKey, privateKey, { mode: 0o600 });
  }
  return {
    adminToken: tokens.admin,
    controllerManagerToken: tokens.controllerManager,
    tokenFile,
    saPublicKey,
    saPrivateKey,
  };
}

export function renderKubeconfig(server: string, caData: string, user: string, token: string): string {
  return [
    'apiVersion: v1',
    'kind: Config',
    'clusters:',
    '- name: durable-operators-local',
    '  cluster:',
    `    server: ${server}`,
    `    certificate-authority-data: ${caData}`,
    'users:',
    `- name: ${user}`,
    '  user:',
    `    token: ${token}`,
    'contexts:',
    '- name: durable-operators-local',
    '  context:',
    '    cluster: durable-operators-local',
    `    user: ${user}`,
    'current-context: durable-operators-local',
    '',
  ].join('\n');
}

/** GET over TLS to the local apiserver (self-signed CA), returns the status code. */
export function httpsStatus(url: string, token: string | undefined, ca: Buffer | undefined): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = https.get(
      url,
      {
        headers: token ? { Authorization: `Bearer ${token}` } : {},
        ca,
        rejectUnauthorized: ca !== undefined,
        timeout: 3000,
      },
      (res) => {
        res.resume();
        resolve(res.statusCode ?? 0);
      },
    );
    req.on('timeout', () => req.destroy(new Error('timeout')));
    req.on('error', reject);
  });
}

// ---------------------------------------------------------------------------------------------
// kube-apiserver

export interface KubeApiServerOptions {
  binary: string;
  etcdEndpoint: string;
  port: number;
  certDir: string;
  credentials: ControlPlaneCredentials;
  logFile: string;
  /** Audit log: the policy file (see AUDIT_POLICY) and where the events go, one JSON per line. */
  audit?: { policyFile: string; logFile: string };
  readyTimeoutMs?: number;
  /**
   * The stack runs a node: serve on (and advertise) the node's address, which Pods reach through
   * the `kubernetes` Service, and give Pods their ServiceAccount tokens (the ServiceAccount
   * admission plugin; the controller manager then runs the serviceaccount controller).
   */
  nodeAddress?: string;
}

/**
 * What the local apiserver audits: Metadata (who, verb, resource, response code; no bodies) of
 * requests by ServiceAccounts only (group system:serviceaccounts, i.e. every
 * `system:serviceaccount:*` user), one event per request when its response is complete. The
 * admin, the controller manager and the apiserver itself are not audited, so the log stays small;
 * test/integration/deploy.test.ts reads it to check deploy/rbac against what the code calls.
 */
export const AUDIT_POLICY = [
  'apiVersion: audit.k8s.io/v1',
  'kind: Policy',
  'omitStages: [RequestReceived, ResponseStarted, Panic]',
  'rules:',
  '  - level: Metadata',
  '    userGroups: ["system:serviceaccounts"]',
  '  - level: None',
  '',
].join('\n');

export class KubeApiServer extends BaseComponent {
  constructor(readonly opts: KubeApiServerOptions) {
    super('kube-apiserver');
  }
  get url(): string {
    return `https://${this.opts.nodeAddress ?? '127.0.0.1'}:${this.opts.port}`;
  }
  /** The self-signed serving certificate bundle the apiserver wrote into its cert dir. */
  get caFile(): string {
    return path.join(this.opts.certDir, 'apiserver.crt');
  }
  static async start(opts: KubeApiServerOptions): Promise<KubeApiServer> {
    const s = new KubeApiServer(opts);
    await s.launch();
    return s;
  }
  protected async launch(): Promise<void> {
    const { opts } = this;
    await mkdir(opts.certDir, { recursive: true });
    await this.spawnUntilReady(
      {
        binary: opts.binary,
        logFile: opts.logFile,
        args: [
          `--etcd-servers=${opts.etcdEndpoint}`,
          `--cert-dir=${opts.certDir}`,
          `--secure-port=${opts.port}`,
          `--bind-address=${opts.nodeAddress ?? '127.0.0.1'}`,
          `--advertise-address=${opts.nodeAddress ?? '127.0.0.1'}`,
          '--service-cluster-ip-range=10.0.0.0/24',
          '--allow-privileged=true',
          // Without a node no serviceaccount controller runs, so the admission plugin would block pods.
          ...(opts.nodeAddress ? [] : ['--disable-admission-plugins=ServiceAccount']),
          '--authorization-mode=RBAC',
          '--anonymous-auth=false',
          `--token-auth-file=${opts.credentials.tokenFile}`,
          `--service-account-issuer=https://127.0.0.1:${opts.port}`,
          `--service-account-key-file=${opts.credentials.saPublicKey}`,
          `--service-account-signing-key-file=${opts.credentials.saPrivateKey}`,
          '--enable-priority-and-fairness=false',
          ...(opts.audit
            ? [
                `--audit-policy-file=${opts.audit.policyFile}`,
                `--audit-log-path=${opts.audit.logFile}`,
                '--audit-log-format=json',
                // Written before the response is sent, so a client that got its answer finds the event.
                '--audit-log-mode=blocking',
                '--audit-log-maxsize=100',
                '--audit-log-maxbackup=1',
              ]
            : []),
          '--v=1',
        ],
      },
      async () => {
        if (!existsSync(this.caFile)) return false;
        const ca = await readFile(this.caFile);
        return (await httpsStatus(`${this.url}/readyz`, opts.credentials.adminToken, ca)) === 200;
      },
      { timeoutMs: opts.readyTimeoutMs ?? 180_000, intervalMs: 500 },
    );
  }
}

// ---------------------------------------------------------------------------------------------
// kube-controller-manager (garbage collector + namespace lifecycle)

export interface ControllerManagerOptions {
  binary: string;
  kubeconfig: string;
  port: number;
  certDir: string;
  logFile: string;
  readyTimeoutMs?: number;
  /**
   * The stack runs a node: also the controllers Pods need (Deployments, ReplicaSets, Jobs,
   * EndpointSlices, ServiceAccounts, the root CA ConfigMap, PodDisruptionBudgets, Pod GC), with
   * this CA published to every namespace as kube-root-ca.crt.
   */
  node?: { rootCaFile: string };
}

/** The controllers of a stack with a node; without one only the garbage collector and namespaces. */
export const NODE_CONTROLLERS = [
  'garbage-collector-controller',
  'namespace-controller',
  'serviceaccount-controller',
  'root-ca-certificate-publisher-controller',
  'clusterrole-aggregation-controller',
  'deployment-controller',
  'replicaset-controller',
  'statefulset-controller',
  'daemonset-controller',
  'job-controller',
  'cronjob-controller',
  'ttl-after-finished-controller',
  'endpoints-controller',
  'endpointslice-controller',
  'endpointslice-mirroring-controller',
  'disruption-controller',
  'pod-garbage-collector-controller',
  // Lifts the not-ready taint the kubelet registers with, once the node is Ready.
  'node-lifecycle-controller',
];

export class ControllerManager extends BaseComponent {
  constructor(readonly opts: ControllerManagerOptions) {
    super('kube-controller-manager');
  }
  static async start(opts: ControllerManagerOptions): Promise<ControllerManager> {
    const c = new ControllerManager(opts);
    await c.launch();
    return c;
  }
  protected async launch(): Promise<void> {
    const { opts } = this;
    await mkdir(opts.certDir, { recursive: true });
    await this.spawnUntilReady(
      {
        binary: opts.binary,
        logFile: opts.logFile,
        args: [
          `--kubeconfig=${opts.kubeconfig}`,
          `--authentication-kubeconfig=${opts.kubeconfig}`,
          `--authorization-kubeconfig=${opts.kubeconfig}`,
          `--controllers=${opts.node ? NODE_CONTROLLERS.join(',') : 'garbagecollector,namespace'}`,
          ...(opts.node ? [`--root-ca-file=${opts.node.rootCaFile}`] : []),
          '--leader-elect=false',
          '--use-service-account-credentials=false',
          `--secure-port=${opts.port}`,
          '--bind-address=127.0.0.1',
          `--cert-dir=${opts.certDir}`,
          '--v=1',
        ],
      },
      async () => (await httpsStatus(`https://127.0.0.1:${opts.port}/healthz`, undefined, undefined)) === 200,
      { timeoutMs: opts.readyTimeoutMs ?? 120_000, intervalMs: 500 },
    );
  }
}

// ---------------------------------------------------------------------------------------------
// Temporal dev server (with Web UI)

export interface TemporalOptions {
  binary: string;
  port: number;
  uiPort?: number; // undefined = headless
  /** The UI's remote codec endpoint (its browsers call `<endpoint>/decode`). */
  uiCodecEndpoint?: string;
  /** SQLite file for persistence; undefined = in memory. */
  dbFile?: string;
  namespace: string;
  logFile: string;
  readyTimeoutMs?: number;
}

/**
 * The dev server runs one history shard, and each shard's queue processors poll at most 20 times
 * a second by default: back to back, every new workflow's first task (transfer queue) and every
 * timer (timer queue) then waits up to 50 ms for the next poll, whatever else is going on. A
 * cluster spreads workflows over hundreds of shards and never sees that ceiling at this rate;
 * raising it here keeps the local stack's latency what a cluster's would be (measured in
 * bench/RESULTS.md, "The 50 ms step"). A cluster that runs the fast path with few history shards
 * needs the same two settings.
 */
export const DEV_SERVER_DYNAMIC_CONFIG = {
  'history.transferProcessorMaxPollRPS': 1000,
  'history.timerProcessorMaxPollRPS': 1000,
} as const;

export class TemporalDevServer extends BaseComponent {
  constructor(readonly opts: TemporalOptions) {
    super('temporal');
  }
  get address(): string {
    return `127.0.0.1:${this.opts.port}`;
  }
  get uiUrl(): string | undefined {
    return this.opts.uiPort ? `http://127.0.0.1:${this.opts.uiPort}` : undefined;
  }
  static async start(opts: TemporalOptions): Promise<TemporalDevServer> {
    const t = new TemporalDevServer(opts);
    await t.launch();
    return t;
  }
  protected async launch(): Promise<void> {
    const { opts } = this;
    const args = [
      'server',
      'start-dev',
      '--ip',
      '127.0.0.1',
      '--port',
      String(opts.port),
      '--namespace',
      opts.namespace,
    ];
    if (opts.uiPort) args.push('--ui-port', String(opts.uiPort), '--ui-ip', '127.0.0.1');
    if (opts.uiPort && opts.uiCodecEndpoint) args.push('--ui-codec-endpoint', opts.uiCodecEndpoint);
    else args.push('--headless');
    if (opts.dbFile) args.push('--db-filename', opts.dbFile);
    for (const sa of SEARCH_ATTRIBUTE_DEFINITIONS) args.push('--search-attribute', `${sa.name}=${sa.cliType}`);
    for (const [key, value] of Object.entries(DEV_SERVER_DYNAMIC_CONFIG))
      args.push('--dynamic-config-value', `${key}=${JSON.stringify(value)}`);
    args.push('--log-level', 'warn');
    await this.spawnUntilReady(
      { binary: opts.binary, logFile: opts.logFile, args },
      async () => {
        const conn = await Connection.connect({ address: this.address, connectTimeout: 2000 });
        try {
          const res = await conn.healthService.check({});
          if (res.status !== 1 /* SERVING */) return false;
          // The namespace and search attributes must be usable, not just the port.
          const sas = await conn.operatorService.listSearchAttributes({ namespace: opts.namespace });
          return SEARCH_ATTRIBUTE_DEFINITIONS.every((d) => d.name in (sas.customAttributes ?? {}));
        } finally {
          await conn.close();
        }
      },
      { timeoutMs: opts.readyTimeoutMs ?? 120_000, intervalMs: 500 },
    );
  }
}
