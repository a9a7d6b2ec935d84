/**
 * The one config loader. Every process reads its settings here, from environment variables
 * (what a Deployment sets) overridden by CLI flags. Secrets (API keys, private keys) come only
 * from the environment or files and never enter workflow inputs.
 */
import { existsSync } from 'node:fs';
import { loadClientConfigProfile, toClientOptions } from '@temporalio/envconfig';
import type { NativeConnectionOptions } from '@temporalio/worker';
import { VERSION } from './build-info.js';
import { parseGoDuration } from './domain/duration.js';
import { readApiKeyFile } from './temporal/credentials.js';
import { payloadKeysFromEnv, type PayloadKeyRing } from './temporal/payload-encryption.js';
import { VERSIONING_MODES, type VersioningMode, type WorkerVersioning } from './workers/versioning.js';

/**
 * Where and how every role reaches Temporal: loaded as the `temporal` CLI does (a TOML profile,
 * then the `TEMPORAL_*` variables over it, then our flags), so one profile serves both.
 */
export interface TemporalConfig {
  address: string;
  namespace: string;
  taskQueue: string;
  /** Temporal Cloud / secured clusters: API key (sent as a bearer token, over TLS unless TLS is turned off). */
  apiKey?: string;
  /** Off, on (system CAs), or the server CA, server name and client certificate (mTLS). */
  tls?: NativeConnectionOptions['tls'];
  /** gRPC headers sent with every call (`TEMPORAL_GRPC_META_*`, a profile's `grpc_meta`). */
  metadata?: Record<string, string>;
  /**
   * The files `tls` and `apiKey` were read from (`TEMPORAL_TLS_*_PATH`, a profile's `*_path`,
   * `DO_TEMPORAL_API_KEY_FILE`): re-read every `reloadIntervalMs`, and the connections renewed
   * when they change (src/temporal/credentials.ts).
   */
  files?: { clientCert?: string; clientKey?: string; serverCa?: string; apiKey?: string };
  /** How often `files` are re-read (`DO_TEMPORAL_CREDENTIALS_RELOAD_INTERVAL`, default 10s). */
  reloadIntervalMs?: number;
  /**
   * The keys payloads are encrypted with (`DO_PAYLOAD_KEYS_DIR`, `DO_PAYLOAD_KEY_ID`): unset,
   * payloads go to Temporal in plain text (src/temporal/payload-encryption.ts).
   */
  payloadKeys?: PayloadKeyRing;
}

/** The CLI flags that override a profile and the environment. */
export interface TemporalOverrides {
  temporalAddress: string;
  namespace: string;
  /** A profile of the TOML file (`TEMPORAL_PROFILE`; default `default`). */
  temporalProfile: string;
  /** The TOML file (`TEMPORAL_CONFIG_FILE`; default `~/.config/temporalio/temporal.toml`). */
  temporalConfigFile: string;
}

export interface OperatorConfig {
  temporal: TemporalConfig;
  /** Path to a kubeconfig; unset = $KUBECONFIG, ~/.kube/config, or in-cluster. */
  kubeconfig?: string;
  /** Backstop re-check period of following ObjectKeepers. */
  keeperVerifyIntervalMs: number;
  /** Watcher resync: every object is re-dispatched this often (self-heals terminated workflows). */
  resyncMs: number;
  /** Port of the /metrics and /healthz endpoint (0 = any free port, unset = disabled). */
  metricsPort?: number;
  /** host:port where the worker serves the Temporal SDK's Prometheus metrics (unset = off). */
  workerMetricsAddress?: string;
  /** Identity shown in the Temporal UI for this process. */
  identity?: string;
  requests: RequestPolicy;
  cloudflare: CloudflareConfig;
  /** Worker Deployment Versioning of the roles that run Workers (src/workers/versioning.ts); absent: off. */
  versioning?: WorkerVersioning;
}

/** How the Cloudflare aggregation talks to Cloudflare and marks what it owns. */
export interface CloudflareConfig {
  /** API base URL (`CLOUDFLARE_API_BASE_URL`, the original's variable); unset = the real API. */
  baseURL?: string;
  /**
   * This cluster's id in ownership markers (`DO_CLUSTER_ID`, default `default`): set a distinct
   * one per cluster when several clusters write to the same Cloudflare account.
   */
  clusterId: string;
  /** Take over items carrying the original's marker (no cluster id) as ours. Default off. */
  adoptLegacyMarkers: boolean;
  /** Quiet window after a source change before the one write (default 500ms). */
  debounceMs: number;
  /** Longest a stream of changes can delay a write (default 5s). */
  maxDebounceMs: number;
  /** Period of the drift observation of every target (default 5m). */
  observeIntervalMs: number;
  /** `repair` (default): re-apply what drifted; `observe`: report it only. */
  driftPolicy: 'repair' | 'observe';
  /**
   * Cloudflare's API limit per user (`DO_CLOUDFLARE_API_LIMIT`, default `1200/5m`): every call is
   * paced by its credentials' owner's budget (src/activities/cloudflare/call-budget.ts).
   */
  apiLimit: { requests: number; windowMs: number };
  /** The fraction of `apiLimit` the operator uses (`DO_CLOUDFLARE_API_SHARE`, default 0.8). */
  apiShare: number;
  /**
   * Optional cap on Cloudflare activity starts per second per account task queue, enforced by
   * Temporal (`DO_CLOUDFLARE_ACTIVITIES_PER_SECOND`; unset: none — the call budget is the throttle).
   */
  activitiesPerSecond?: number;
  /** Image of a Tunnel's cloudflared Deployment when its spec names none (`DO_CLOUDFLARED_IMAGE`). */
  cloudflaredImage: string;
}

/** Controller-wide policy of fire-and-forget requests (the original's controller config). */
export interface RequestPolicy {
  /** How long a terminal request lives after completionTimestamp (0 = never reaped). Default 24h. */
  ttlMs: number;
  /** Period of the TTL sweep Schedule, which deletes terminal requests past their TTL. Default 5m. */
  ttlSweepIntervalMs: number;
  /** Deadline of every wait on an external actor (snapshot ready, PVC bound). Default 30m. */
  waitTimeoutMs: number;
  /**
   * How a Snapshot capture creates its snapshot: `VolumeSnapshot` (stock external-snapshotter: a
   * VolumeSnapshot in the PVC's namespace, content made by the snapshot-controller) or `Content`
   * (Deckhouse's patched snapshotter: a VolumeSnapshotContent without a VolumeSnapshot).
   */
  snapshotMode: 'VolumeSnapshot' | 'Content';
}

export const DEFAULT_TASK_QUEUE = 'durable-operators';

function durationEnv(env: NodeJS.ProcessEnv, name: string, fallback: string): number {
  const raw = env[name] || fallback;
  if (raw === '0') return 0; // as Go's time.ParseDuration: a bare 0 needs no unit
  try {
    return parseGoDuration(raw);
  } catch {
    throw new Error(`${name} must be a Go duration such as 30s, 10m or 24h, got ${JSON.stringify(raw)}`);
  }
}

function intEnv(env: NodeJS.ProcessEnv, name: string, fallback: number): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < 0)
    throw new Error(`${name} must be a non-negative integer, got ${JSON.stringify(raw)}`);
  return n;
}

export function loadConfig(
  overrides: Partial<
    TemporalOverrides & {
      taskQueue: string;
      kubeconfig: string;
      metricsPort: number;
    }
  > = {},
  env: NodeJS.ProcessEnv = process.env,
): OperatorConfig {
  return {
    temporal: {
      ...loadTemporalConnection(overrides, env),
      taskQueue: overrides.taskQueue ?? env.DO_TASK_QUEUE ?? DEFAULT_TASK_QUEUE,
    },
    kubeconfig: overrides.kubeconfig ?? (env.KUBECONFIG || undefined),
    keeperVerifyIntervalMs: intEnv(env, 'DO_KEEPER_VERIFY_INTERVAL_MS', 5 * 60_000),
    resyncMs: intEnv(env, 'DO_RESYNC_MS', 15 * 60_000),
    metricsPort: overrides.metricsPort ?? (env.DO_METRICS_PORT ? intEnv(env, 'DO_METRICS_PORT', 0) : undefined),
    identity: env.DO_IDENTITY || undefined,
    workerMetricsAddress: env.DO_WORKER_METRICS_ADDRESS || undefined,
    requests: {
      ttlMs: durationEnv(env, 'DO_REQUEST_TTL', '24h'),
      ttlSweepIntervalMs: durationEnv(env, 'DO_REQUEST_TTL_SWEEP_INTERVAL', '5m'),
      waitTimeoutMs: durationEnv(env, 'DO_REQUEST_WAIT_TIMEOUT', '30m'),
      snapshotMode: snapshotModeEnv(env),
    },
    cloudflare: loadCloudflareConfig(env),
    versioning: loadWorkerVersioning(env),
  };
}

/** `DO_WORKER_VERSIONING` (off | on | auto-promote, default off) and `DO_BUILD_ID` (default the package version). */
export function loadWorkerVersioning(env: NodeJS.ProcessEnv = process.env): WorkerVersioning {
  const mode = env.DO_WORKER_VERSIONING || 'off';
  if (!(VERSIONING_MODES as readonly string[]).includes(mode))
    throw new Error(`DO_WORKER_VERSIONING must be one of ${VERSIONING_MODES.join(', ')}, got ${JSON.stringify(mode)}`);
  const buildId = env.DO_BUILD_ID || VERSION;
  if (mode !== 'off' && !/^\S{1,255}$/.test(buildId))
    throw new Error(`DO_BUILD_ID must be 1–255 characters without spaces, got ${JSON.stringify(buildId)}`);
  return { mode: mode as VersioningMode, buildId };
}

/**
 * The Temporal connection with `@temporalio/envconfig`, the `temporal` CLI's rules: the profile
 * `TEMPORAL_PROFILE` (or `default`) of `TEMPORAL_CONFIG_FILE` (or the user's temporal.toml, if
 * any), `TEMPORAL_ADDRESS`, `_NAMESPACE`, `_API_KEY`, `_TLS`, `_TLS_CLIENT_CERT_PATH`/`_DATA`,
 * `_TLS_CLIENT_KEY_PATH`/`_DATA`, `_TLS_SERVER_CA_CERT_PATH`/`_DATA`, `_TLS_SERVER_NAME` and
 * `_GRPC_META_*` over it, then the flags; or the API key from `DO_TEMPORAL_API_KEY_FILE`. Files
 * are re-read while the role runs (`files`). An empty variable counts as unset, as it did before
 * envconfig (a Deployment's optional Secret reference yields one). Also the payload keys
 * (`DO_PAYLOAD_KEYS_DIR`): every client and worker of a connection encodes payloads alike.
 */
export function loadTemporalConnection(
  overrides: Partial<TemporalOverrides> = {},
  env: NodeJS.ProcessEnv = process.env,
): Omit<TemporalConfig, 'taskQueue'> {
  const vars = Object.fromEntries(
    Object.entries(env).filter(
      (e): e is [string, string] => e[1] !== undefined && (e[1] !== '' || e[0].startsWith('TEMPORAL_GRPC_META_')),
    ),
  );
  // A Deployment mounts its credential Secrets optionally (the chart, deploy/): a file the
  // absent Secret would hold counts as unset.
  if (vars.DO_TEMPORAL_CREDENTIAL_FILES_OPTIONAL === 'true')
    for (const name of CREDENTIAL_FILE_VARIABLES) if (vars[name] && !existsSync(vars[name])) delete vars[name];
  const configFile = overrides.temporalConfigFile ?? vars.TEMPORAL_CONFIG_FILE;
  // envconfig reads a missing file as "no profiles"; a file named on purpose must exist.
  if (configFile !== undefined && !existsSync(configFile))
    throw new Error(`Temporal config file ${configFile} (TEMPORAL_CONFIG_FILE) does not exist`);
  const profile = loadClientConfigProfile({
    profile: overrides.temporalProfile,
    ...(configFile !== undefined && { configSource: { path: configFile } }),
    overrideEnvVars: vars,
  });
  const apiKeyFile = vars.DO_TEMPORAL_API_KEY_FILE;
  if (apiKeyFile !== undefined) {
    if (profile.apiKey !== undefined)
      throw new Error(
        "Set the Temporal API key once: DO_TEMPORAL_API_KEY_FILE, or TEMPORAL_API_KEY / the profile's api_key",
      );
    profile.apiKey = readApiKeyFile(apiKeyFile);
  }
  const { clientCert, clientKey, serverCACert } = profile.tls ?? {};
  if ((clientCert === undefined) !== (clientKey === undefined))
    throw new Error(
      'A Temporal client certificate needs both the certificate and its key ' +
        '(TEMPORAL_TLS_CLIENT_CERT_PATH/_DATA and TEMPORAL_TLS_CLIENT_KEY_PATH/_DATA, or client_cert_* and client_key_* in the profile)',
    );
  // TLS as the SDK's connections take it: certificate files read here, once.
  let tls: NativeConnectionOptions['tls'];
  try {
    tls = toClientOptions(profile).connectionOptions.tls;
  } catch (err) {
    throw new Error(`cannot read a Temporal TLS file (certificate, key or server CA): ${(err as Error).message}`);
  }
  const pathOf = (src?: { path: string } | { data: unknown }) => (src && 'path' in src ? src.path : undefined);
  const files = {
    ...(tls && pathOf(clientCert) && { clientCert: pathOf(clientCert) }),
    ...(tls && pathOf(clientKey) && { clientKey: pathOf(clientKey) }),
    ...(tls && pathOf(serverCACert) && { serverCa: pathOf(serverCACert) }),
    ...(apiKeyFile !== undefined && { apiKey: apiKeyFile }),
  };
  return {
    address: overrides.temporalAddress ?? profile.address ?? '127.0.0.1:7233',
    namespace: overrides.namespace ?? profile.namespace ?? 'default',
    ...(profile.apiKey !== undefined && { apiKey: profile.apiKey }),
    ...(tls !== undefined && { tls }),
    ...(profile.grpcMeta !== undefined && Object.keys(profile.grpcMeta).length > 0 && { metadata: profile.grpcMeta }),
    ...(Object.keys(files).length > 0 && {
      files,
      reloadIntervalMs: durationEnv(env, 'DO_TEMPORAL_CREDENTIALS_RELOAD_INTERVAL', '10s'),
    }),
    ...(env.DO_PAYLOAD_KEYS_DIR && { payloadKeys: payloadKeysFromEnv(env) }),
  };
}

const CREDENTIAL_FILE_VARIABLES = [
  'TEMPORAL_TLS_CLIENT_CERT_PATH',
  'TEMPORAL_TLS_CLIENT_KEY_PATH',
  'TEMPORAL_TLS_SERVER_CA_CERT_PATH',
  'DO_TEMPORAL_API_KEY_FILE',
];

export const DEFAULT_CLOUDFLARED_IMAGE = 'cloudflare/cloudflared:2025.4.0';

export function loadCloudflareConfig(env: NodeJS.ProcessEnv = process.env): CloudflareConfig {
  // Unset: '' — the worker derives it from the kube-system namespace's UID (src/kube/cluster-identity.ts).
  const clusterId = env.DO_CLUSTER_ID || '';
  if (clusterId && !/^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$/.test(clusterId))
    throw new Error(`DO_CLUSTER_ID must be 1–63 letters, digits, '.', '_' or '-', got ${JSON.stringify(clusterId)}`);
  const driftPolicy = env.DO_CLOUDFLARE_DRIFT_POLICY || 'repair';
  if (driftPolicy !== 'repair' && driftPolicy !== 'observe')
    throw new Error(`DO_CLOUDFLARE_DRIFT_POLICY must be repair or observe, got ${JSON.stringify(driftPolicy)}`);
  const rate = env.DO_CLOUDFLARE_ACTIVITIES_PER_SECOND ? Number(env.DO_CLOUDFLARE_ACTIVITIES_PER_SECOND) : undefined;
  if (rate !== undefined && !(rate > 0))
    throw new Error('DO_CLOUDFLARE_ACTIVITIES_PER_SECOND must be a positive number');
  const limit = /^(\d+)\/(.+)$/.exec(env.DO_CLOUDFLARE_API_LIMIT || '1200/5m');
  const apiLimit = limit && {
    requests: Number(limit[1]),
    windowMs: durationEnv({ w: limit[2] }, 'w', '5m'),
  };
  if (!apiLimit || !(apiLimit.requests > 0) || !(apiLimit.windowMs > 0))
    throw new Error(
      `DO_CLOUDFLARE_API_LIMIT must be requests/duration such as 1200/5m, got ${JSON.stringify(env.DO_CLOUDFLARE_API_LIMIT)}`,
    );
  const apiShare = Number(env.DO_CLOUDFLARE_API_SHARE || '0.8');
  if (!(apiShare > 0 && apiShare <= 1)) throw new Error('DO_CLOUDFLARE_API_SHARE must be a number in (0, 1]');
  return {
    baseURL: env.CLOUDFLARE_API_BASE_URL || undefined,
    clusterId,
    adoptLegacyMarkers: env.DO_CLOUDFLARE_ADOPT_LEGACY_MARKERS === 'true',
    debounceMs: durationEnv(env, 'DO_CLOUDFLARE_DEBOUNCE', '500ms'),
    maxDebounceMs: durationEnv(env, 'DO_CLOUDFLARE_MAX_DEBOUNCE', '5s'),
    observeIntervalMs: durationEnv(env, 'DO_CLOUDFLARE_OBSERVE_INTERVAL', '5m'),
    driftPolicy,
    apiLimit,
    apiShare,
    ...(rate !== undefined ? { activitiesPerSecond: rate } : {}),
    // The original's default (its v1alpha1 CRD): a pinned release, not `latest`.
    cloudflaredImage: env.DO_CLOUDFLARED_IMAGE || DEFAULT_CLOUDFLARED_IMAGE,
  };
}

/** The task queue of one Cloudflare account's API calls. */
export function cloudflareTaskQueue(taskQueue: string, accountId: string): string {
  return `${taskQueue}-cloudflare-${accountId}`;
}

function snapshotModeEnv(env: NodeJS.ProcessEnv): RequestPolicy['snapshotMode'] {
  const raw = env.DO_VOLUME_SNAPSHOT_MODE || 'VolumeSnapshot';
  if (raw !== 'VolumeSnapshot' && raw !== 'Content') {
    throw new Error(`DO_VOLUME_SNAPSHOT_MODE must be VolumeSnapshot or Content, got ${JSON.stringify(raw)}`);
  }
  return raw;
}

/**
 * The task queue of the sandbox workflows. Only fast-path processes poll it: the sandbox
 * workflows' local activities use the placement table those processes keep in memory.
 */
export function sandboxTaskQueue(taskQueue: string): string {
  return `${taskQueue}-sandbox`;
}

/**
 * How the client proves itself to etcd, as files (a mounted Secret): the CA of etcd's serving
 * certificate, this client's certificate and key (etcd's `--client-cert-auth`), and a user whose
 * password is in a file (etcd's auth). The tenant provider re-reads them while it runs and moves
 * to a new client on a change (docs/tenancy.md, Securing etcd).
 */
export interface EtcdSecurity {
  caFile?: string;
  certFile?: string;
  keyFile?: string;
  username?: string;
  passwordFile?: string;
}

/** `DO_TENANT_ETCD_CA`, `_CERT`, `_KEY` (files), `DO_TENANT_ETCD_USER` and `DO_TENANT_ETCD_PASSWORD_FILE`. */
export function etcdSecurityFromEnv(env: NodeJS.ProcessEnv): EtcdSecurity | undefined {
  const sec: EtcdSecurity = {
    ...(env.DO_TENANT_ETCD_CA && { caFile: env.DO_TENANT_ETCD_CA }),
    ...(env.DO_TENANT_ETCD_CERT && { certFile: env.DO_TENANT_ETCD_CERT }),
    ...(env.DO_TENANT_ETCD_KEY && { keyFile: env.DO_TENANT_ETCD_KEY }),
    ...(env.DO_TENANT_ETCD_USER && { username: env.DO_TENANT_ETCD_USER }),
    ...(env.DO_TENANT_ETCD_PASSWORD_FILE && { passwordFile: env.DO_TENANT_ETCD_PASSWORD_FILE }),
  };
  if (!sec.certFile !== !sec.keyFile)
    throw new Error('DO_TENANT_ETCD_CERT and DO_TENANT_ETCD_KEY (the client certificate and its key) go together');
  if (!sec.username !== !sec.passwordFile)
    throw new Error('DO_TENANT_ETCD_USER and DO_TENANT_ETCD_PASSWORD_FILE go together');
  return Object.keys(sec).length > 0 ? sec : undefined;
}

/** The fast path's settings (the original's flags where it had them). */
export interface FastPathConfig {
  grpcPort: number;
  httpPort: number;
  host: string;
  /** `--fastpath-consistency-mode`: fast (default) or strong, unless a request says STRONG. */
  consistencyMode: 'fast' | 'strong';
  /** `--fastpath-orphan-timeout`: how old an unrecorded sandbox must be before the janitor removes it. */
  orphanTimeoutMs: number;
  /** How often the janitor Schedule runs. */
  janitorIntervalMs: number;
  /** `--fastpath-scale-up-timeout`: how long a Strong create waits for a pool scaling up from zero. */
  scaleUpTimeoutMs: number;
  /** How often the registry lists agent Pods and asks each agent for its status. */
  pollIntervalMs: number;
  /** Only this namespace's agents and sandboxes (default: all). */
  namespace?: string;
  tenantEtcd: string;
  /** TLS and auth towards the tenant etcd (`DO_TENANT_ETCD_CA`, `_CERT`, `_KEY`, `_USER`, `_PASSWORD_FILE`). */
  tenantEtcdSecurity?: EtcdSecurity;
  /** Key prefix of the tenant configuration (default `jxt/`, as the tenants CLI). */
  tenantPrefix?: string;
  tenantCacheFile?: string;
  agentTokenFile?: string;
  /** TLS on the gRPC and HTTP ports (`DO_FASTPATH_TLS_*`); plain text without it. */
  tls?: {
    certFile: string;
    keyFile: string;
    clientCaFile?: string;
    requireClientCert: boolean;
    reloadIntervalMs: number;
  };
}

/** `DO_FASTPATH_TLS_CERT_FILE` + `_KEY_FILE` turn TLS on; `_CLIENT_CA_FILE` asks clients for certificates. */
function fastPathTls(env: NodeJS.ProcessEnv): FastPathConfig['tls'] {
  const certFile = env.DO_FASTPATH_TLS_CERT_FILE || undefined;
  const keyFile = env.DO_FASTPATH_TLS_KEY_FILE || undefined;
  const clientCaFile = env.DO_FASTPATH_TLS_CLIENT_CA_FILE || undefined;
  const require = env.DO_FASTPATH_TLS_REQUIRE_CLIENT_CERT || 'false';
  if (!['true', 'false'].includes(require))
    throw new Error(`DO_FASTPATH_TLS_REQUIRE_CLIENT_CERT must be true or false, got ${JSON.stringify(require)}`);
  if (!certFile !== !keyFile)
    throw new Error('DO_FASTPATH_TLS_CERT_FILE and DO_FASTPATH_TLS_KEY_FILE must be set together');
  if (!certFile) {
    if (clientCaFile || require === 'true')
      throw new Error('client certificates need TLS: set DO_FASTPATH_TLS_CERT_FILE and DO_FASTPATH_TLS_KEY_FILE');
    return undefined;
  }
  if (require === 'true' && !clientCaFile)
    throw new Error('DO_FASTPATH_TLS_REQUIRE_CLIENT_CERT needs DO_FASTPATH_TLS_CLIENT_CA_FILE to verify them with');
  return {
    certFile,
    keyFile: keyFile!,
    ...(clientCaFile && { clientCaFile }),
    requireClientCert: require === 'true',
    reloadIntervalMs: durationEnv(env, 'DO_FASTPATH_TLS_RELOAD_INTERVAL', '30s'),
  };
}

/** The settings the `fastpath` command has flags for, parsed (commander read their env vars when no flag was given). */
export type FastPathFlags = Partial<
  Pick<
    FastPathConfig,
    | 'grpcPort'
    | 'httpPort'
    | 'host'
    | 'consistencyMode'
    | 'orphanTimeoutMs'
    | 'janitorIntervalMs'
    | 'scaleUpTimeoutMs'
    | 'agentTokenFile'
    | 'tenantEtcd'
  >
>;

/** The fast path's settings: `flags` where given, else the environment (tests, benches, embedders). */
export function loadFastPathConfig(env: NodeJS.ProcessEnv = process.env, flags: FastPathFlags = {}): FastPathConfig {
  const mode = flags.consistencyMode ?? (env.DO_FASTPATH_CONSISTENCY_MODE || 'fast');
  if (mode !== 'fast' && mode !== 'strong')
    throw new Error(`DO_FASTPATH_CONSISTENCY_MODE must be fast or strong, got ${JSON.stringify(mode)}`);
  return {
    grpcPort: flags.grpcPort ?? intEnv(env, 'DO_FASTPATH_GRPC_PORT', 9090),
    httpPort: flags.httpPort ?? intEnv(env, 'DO_FASTPATH_HTTP_PORT', 9080),
    host: flags.host || env.DO_FASTPATH_HOST || '0.0.0.0',
    consistencyMode: mode,
    orphanTimeoutMs: flags.orphanTimeoutMs ?? durationEnv(env, 'DO_FASTPATH_ORPHAN_TIMEOUT', '10s'),
    janitorIntervalMs: flags.janitorIntervalMs ?? durationEnv(env, 'DO_FASTPATH_JANITOR_INTERVAL', '10s'),
    scaleUpTimeoutMs: flags.scaleUpTimeoutMs ?? durationEnv(env, 'DO_FASTPATH_SCALE_UP_TIMEOUT', '60s'),
    pollIntervalMs: durationEnv(env, 'DO_FASTPATH_POLL_INTERVAL', '1s'),
    namespace: env.DO_FASTPATH_NAMESPACE || undefined,
    tenantEtcd: flags.tenantEtcd || env.DO_TENANT_ETCD || 'http://127.0.0.1:2379',
    tenantEtcdSecurity: etcdSecurityFromEnv(env),
    tenantPrefix: env.DO_TENANT_PREFIX || undefined,
    tenantCacheFile: env.DO_TENANT_CACHE_FILE || undefined,
    agentTokenFile: flags.agentTokenFile || env.DO_AGENT_TOKEN_FILE || undefined,
    tls: fastPathTls(env),
  };
}
