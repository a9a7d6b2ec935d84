/**
 * The Cloudflare side of the aggregation tests: the emulator (in the test process), an SDK
 * client on it, and the Kubernetes objects the operator reads credentials from. Tests read and
 * seed Cloudflare only through the real `cloudflare` SDK; the emulator hooks only reset, count
 * requests and inject faults.
 */
import { randomBytes } from 'node:crypto';
import Cloudflare from 'cloudflare';
import { afterAll, beforeAll } from 'vitest';
import { CLOUDFLARE_API_VERSION, CLOUDFLARE_GROUP } from '../../src/api/cloudflare.js';
import { EmulatorAdmin, startCloudflareEmulator, type RunningEmulator } from '../emulators/cloudflare/index.js';
import { loadCloudflareConfig, type CloudflareConfig } from '../../src/config.js';
import type { KubeClient } from '../../src/kube/client.js';
import type { RunningWatcher } from '../../src/watcher/main.js';
import { historiesText, kube, startTestWatcher, startTestWorker, uniq } from './env.js';

export const CF_TOKEN = `cf-test-${randomBytes(6).toString('hex')}`;

/** Every secret value this test file gave the operator (API tokens, identity-provider secrets…). */
const usedSecrets = new Set<string>([CF_TOKEN]);

/**
 * Marks a value as secret: at the end of the file, no workflow history of the file's task queue
 * may contain it (`cloudflareSuite` checks in `afterAll`).
 */
export function secret<T extends string>(value: T): T {
  usedSecrets.add(value);
  return value;
}

/** The secrets that show up in the histories of the workflows on `taskQueue`, with where. */
export async function secretsInHistories(taskQueue: string): Promise<string[]> {
  const found: string[] = [];
  for (const text of await historiesText(`TaskQueue = ${JSON.stringify(taskQueue)}`))
    for (const value of usedSecrets)
      if (text.includes(value)) found.push(`${JSON.stringify(value)} in ${text.slice(0, text.indexOf('\n'))}`);
  return found;
}

export interface CloudflareFixture {
  emulator: RunningEmulator;
  admin: EmulatorAdmin;
  cf: Cloudflare;
  close(): Promise<void>;
}

export async function startCloudflare(): Promise<CloudflareFixture> {
  const emulator = await startCloudflareEmulator({ tokens: [{ token: CF_TOKEN }] });
  const admin = new EmulatorAdmin(emulator.url, emulator.adminToken);
  const cf = new Cloudflare({ apiToken: CF_TOKEN, baseURL: emulator.baseURL, maxRetries: 4 });
  return { emulator, admin, cf, close: () => emulator.close() };
}

export function hexId(): string {
  return randomBytes(16).toString('hex');
}

/** CloudflareCredentials this test file created (cluster-scoped: they outlive the file unless deleted). */
const createdCredentials = new Set<string>();

/**
 * Deletes every CloudflareCredentials this file created. Call it in `afterAll`: a default one left
 * behind would make the next file's default ambiguous.
 */
export async function deleteCreatedCredentials(kube: KubeClient): Promise<void> {
  for (const name of createdCredentials)
    await kube
      .delete({ apiVersion: CLOUDFLARE_API_VERSION, kind: 'CloudflareCredentials', name })
      .catch(() => undefined);
  createdCredentials.clear();
}

/**
 * A Secret with the token and a CloudflareCredentials for `accountId` naming it, as a user would
 * create them.
 */
export async function createCredentials(
  kube: KubeClient,
  opts: {
    name: string;
    namespace: string;
    accountId: string;
    token?: string;
    isDefault?: boolean;
    /** The Cloudflare user they act as (whose API budget they share). */
    user?: string;
    /** Who may use them; unset: every namespace, and every namespace may set priorities (tests of other things). */
    use?: {
      allowedNamespaces?: string[];
      allowedZones?: string[];
      priorityNamespaces?: string[];
      adoptNamespaces?: string[];
    };
  },
): Promise<void> {
  await kube.apply({
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: { name: `${opts.name}-token`, namespace: opts.namespace },
    stringData: { CLOUDFLARE_API_TOKEN: secret(opts.token ?? CF_TOKEN) },
  } as never);
  createdCredentials.add(opts.name);
  await kube.apply({
    apiVersion: CLOUDFLARE_API_VERSION,
    kind: 'CloudflareCredentials',
    metadata: { name: opts.name },
    spec: {
      accountId: opts.accountId,
      authType: 'apiToken',
      secretRef: { name: `${opts.name}-token`, namespace: opts.namespace },
      isDefault: opts.isDefault ?? false,
      ...(opts.user ? { user: opts.user } : {}),
      ...(opts.use ?? { allowedNamespaces: ['*'], priorityNamespaces: ['*'], adoptNamespaces: ['*'] }),
    },
  });
}

export type Rule = {
  id: string;
  description?: string;
  expression: string;
  action: string;
  version: string;
  [k: string]: unknown;
};

/** The rules of a zone's phase entrypoint ([] before it exists). */
export async function entrypointRules(cf: Cloudflare, zoneId: string, phase: string): Promise<Rule[]> {
  try {
    const rs = (await cf.rulesets.phases.get(phase as never, { zone_id: zoneId })) as unknown as { rules?: Rule[] };
    return rs.rules ?? [];
  } catch (err) {
    if ((err as { status?: number }).status === 404) return [];
    throw err;
  }
}

export async function includeList(
  cf: Cloudflare,
  accountId: string,
): Promise<{ address?: string; host?: string; description?: string }[]> {
  return (await cf.zeroTrust.devices.policies.default.includes.get({ account_id: accountId })).result as never;
}

/** The emulator's last request sequence number: a mark to count requests after (0 when none yet). */
export async function requestMark(admin: EmulatorAdmin): Promise<number> {
  const all = await admin.requests();
  return all.length ? all[all.length - 1]!.seq : 0;
}

/** The requests the emulator answered after `mark` on paths matching `path` (a regular expression). */
export async function requestsSince(
  admin: EmulatorAdmin,
  mark: number,
  filter: { path?: string; method?: string } = {},
): Promise<Awaited<ReturnType<EmulatorAdmin['requests']>>> {
  return (await admin.requests(filter)).filter((r) => r.seq > mark);
}

/** A DNS record as the tests compare them. */
export interface ZoneRecord {
  id: string;
  name: string;
  type: string;
  content: string;
  ttl: number;
  proxied: boolean;
  comment: string | null;
}

/** A zone's records, through the SDK (every page). */
export async function zoneRecords(cf: Cloudflare, zoneId: string): Promise<ZoneRecord[]> {
  const out: ZoneRecord[] = [];
  for await (const r of cf.dns.records.list({ zone_id: zoneId }))
    out.push({
      id: r.id,
      name: r.name,
      type: r.type,
      content: r.content as string,
      ttl: r.ttl,
      proxied: r.proxied as boolean,
      comment: r.comment ?? null,
    });
  return out;
}

/** An IngressClass whose `parameters` are the TunnelIngressClassConfig `config` of `namespace`. */
export const tunnelIngressClass = (name: string, config: string, namespace: string) => ({
  apiVersion: 'networking.k8s.io/v1',
  kind: 'IngressClass',
  metadata: { name },
  spec: {
    controller: 'cloudflare-operator.io/ingress-controller',
    parameters: {
      apiGroup: CLOUDFLARE_GROUP,
      kind: 'TunnelIngressClassConfig',
      name: config,
      namespace,
      scope: 'Namespace',
    },
  },
});

/** A Cloudflare source object of `kind` (namespaced when `ns` is given), as a user would apply it. */
export const sourceObject = (kind: string, name: string, spec: Record<string, unknown>, ns?: string) => ({
  apiVersion: CLOUDFLARE_API_VERSION,
  kind,
  metadata: { name, ...(ns ? { namespace: ns } : {}) },
  spec,
});

export type ReadyCondition = { type: string; status: string; reason: string; message: string };

/** The source's Ready condition (undefined while it has none). */
export async function readyOf(
  k: KubeClient,
  kind: string,
  name: string,
  ns?: string,
): Promise<ReadyCondition | undefined> {
  const obj = await k.get<{ status?: { conditions?: ReadyCondition[] } } & never>({
    apiVersion: CLOUDFLARE_API_VERSION,
    kind,
    name,
    namespace: ns,
  });
  return (obj as { status?: { conditions?: ReadyCondition[] } } | undefined)?.status?.conditions?.find(
    (c) => c.type === 'Ready',
  );
}

export interface CloudflareSuiteOptions {
  /** Prefixes of the file's task queue and namespace (made unique). */
  taskQueue: string;
  namespace: string;
  /** An account seeded in the emulator before the worker starts. */
  account?: { id: string; name: string };
  /** A zone of `account` seeded with it (its id is `suite.zoneId`). */
  zone?: string;
  /** CloudflareCredentials (and its Secret) for `account`, created before the worker starts. */
  credentials?: { name: string; isDefault?: boolean };
  /** Set on top of `loadCloudflareConfig({})` and the emulator's baseURL. */
  configOverrides?: Partial<CloudflareConfig>;
  /** Start the in-process worker in `beforeAll` (default true); otherwise the file calls `startWorker`. */
  inProcessWorker?: boolean;
  /** Start a watcher on the file's task queue in `beforeAll` (default true). */
  watcher?: boolean;
  /** Runs in `afterAll` after the in-process worker stopped, before the emulator closes. */
  afterWorkerStop?: () => Promise<void>;
}

export interface CloudflareSuite {
  k: KubeClient;
  taskQueue: string;
  namespace: string;
  readonly fx: CloudflareFixture;
  /** The id of `opts.zone` once seeded. */
  readonly zoneId: string;
  readonly watcher: RunningWatcher;
  /** The in-process worker while one runs. */
  readonly worker: { stop(): Promise<void> } | undefined;
  /** The worker's Cloudflare settings: the defaults, the emulator's baseURL and `configOverrides`. */
  cloudflareConfig(): CloudflareConfig;
  startWorker(): Promise<void>;
  stopWorker(): Promise<void>;
  /** The Ready condition of a source of this suite. */
  readyOf(kind: string, name: string, ns?: string): Promise<ReadyCondition | undefined>;
}

/**
 * The setup of a Cloudflare integration file: registers `beforeAll` (the emulator, a namespace,
 * the optional account and credentials, the in-process worker on the file's task queue with
 * Cloudflare enabled, a watcher) and `afterAll` (created credentials deleted, watcher and worker
 * stopped, emulator closed, namespace deleted).
 */
export function cloudflareSuite(opts: CloudflareSuiteOptions): CloudflareSuite {
  const k = kube();
  const taskQueue = uniq(opts.taskQueue);
  const namespace = uniq(opts.namespace);
  let fx: CloudflareFixture | undefined;
  let watcher: RunningWatcher | undefined;
  let worker: { stop(): Promise<void> } | undefined;
  let zoneId = '';

  const cloudflareConfig = (): CloudflareConfig => ({
    ...loadCloudflareConfig({}),
    // The markers the files expect; '' (derived from kube-system) where a file overrides it.
    clusterId: 'default',
    baseURL: fx!.emulator.baseURL,
    ...opts.configOverrides,
  });
  const startWorker = async (): Promise<void> => {
    worker = await startTestWorker(taskQueue, { cloudflare: cloudflareConfig() }, { cloudflare: true });
  };
  const stopWorker = async (): Promise<void> => {
    await worker?.stop();
    worker = undefined;
  };

  beforeAll(async () => {
    fx = await startCloudflare();
    await k.apply({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: namespace } });
    if (opts.account) {
      const seeded = await fx.admin.seed({
        accounts: [{ id: opts.account.id, name: opts.account.name }],
        ...(opts.zone ? { zones: [{ name: opts.zone, account_id: opts.account.id }] } : {}),
      });
      zoneId = seeded.zones[0]?.id ?? '';
    }
    if (opts.account && opts.credentials)
      await createCredentials(k, {
        name: opts.credentials.name,
        namespace,
        accountId: opts.account.id,
        ...(opts.credentials.isDefault !== undefined ? { isDefault: opts.credentials.isDefault } : {}),
      });
    if (opts.inProcessWorker ?? true) await startWorker();
    if (opts.watcher ?? true) watcher = await startTestWatcher(taskQueue);
  });

  afterAll(async () => {
    // No secret this file used (tokens, identity-provider secrets…) is in any workflow history
    // of its task queue: the Temporal UI and CLI show histories to whoever may read them.
    const leaked = await secretsInHistories(taskQueue);
    await deleteCreatedCredentials(k);
    await watcher?.stop();
    await stopWorker();
    await opts.afterWorkerStop?.();
    await fx?.close();
    await k.delete({ apiVersion: 'v1', kind: 'Namespace', name: namespace }).catch(() => undefined);
    if (leaked.length) throw new Error(`secrets in workflow history: ${leaked.join('; ')}`);
  });

  return {
    k,
    taskQueue,
    namespace,
    get fx() {
      return fx as CloudflareFixture;
    },
    get zoneId() {
      return zoneId;
    },
    get watcher() {
      return watcher as RunningWatcher;
    },
    get worker() {
      return worker;
    },
    cloudflareConfig,
    startWorker,
    stopWorker,
    readyOf: (kind, name, ns) => readyOf(k, kind, name, ns),
  };
}

/**
 * Empties a custom object's status the way a restore without status does (Velero, `kubectl get
 * -o yaml | kubectl apply` into a new cluster): every key of it nulled through the status subresource.
 */
export async function clearStatus(
  k: KubeClient,
  ref: { apiVersion: string; kind: string; plural: string; name: string; namespace?: string },
): Promise<void> {
  const obj = (await k.get(ref)) as { status?: Record<string, unknown> } | undefined;
  const keys = Object.keys(obj?.status ?? {});
  if (keys.length) await k.patchCustomStatus(ref, Object.fromEntries(keys.map((key) => [key, null])));
}
