/**
 * The one Kubernetes client module. Everything that talks to the apiserver (activities, the
 * watcher, the CLI, tests acting as users) goes through here, so auth, discovery and error
 * classification live in one place. Reads are always uncached GETs against the apiserver.
 */
import {
  ApiException,
  ApiextensionsV1Api,
  CoreV1Api,
  CustomObjectsApi,
  KubeConfig,
  KubernetesObjectApi,
  PatchStrategy,
  VersionApi,
  Watch,
  loadYaml,
  setHeaderOptions,
  type KubernetesObject,
  type V1APIResource,
  type V1Status,
} from '@kubernetes/client-node';
import { createHash } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import { Counter, Histogram, type Registry } from 'prom-client';

export const FIELD_MANAGER = 'durable-operators';

/** Identifies an object the way an ownerReference or followObjectRef does. */
export interface ObjectRef {
  apiVersion: string;
  kind: string;
  namespace?: string;
  name: string;
}

/**
 * Loads credentials: an explicit kubeconfig path, then $KUBECONFIG / ~/.kube/config, then the
 * in-cluster service account (how the Deployments in deploy/ run).
 */
export function loadKubeConfig(kubeconfigPath?: string): KubeConfig {
  const kc = new KubeConfig();
  if (kubeconfigPath) kc.loadFromFile(kubeconfigPath);
  else if (process.env.KUBERNETES_SERVICE_HOST && !process.env.KUBECONFIG) kc.loadFromCluster();
  else kc.loadFromDefault();
  return kc;
}

const REUSING = Symbol('reuses connections');
const REQUEST_METRICS = Symbol('records apiserver requests');

/**
 * Apiserver requests by HTTP method and status code, and the time to the response's status (a
 * watch counts until its stream opens), as client-go's `rest_client_requests_total` and
 * `rest_client_request_duration_seconds`. `code` is `<error>` when no response came.
 */
export function createKubeRequestMetrics(registry: Registry) {
  return {
    requests: new Counter({
      name: 'durable_operators_kube_requests_total',
      help: 'Requests to the Kubernetes apiserver, by HTTP method and status code (<error>: no response).',
      labelNames: ['method', 'code'] as const,
      registers: [registry],
    }),
    duration: new Histogram({
      name: 'durable_operators_kube_request_duration_seconds',
      help: 'Time from sending a request to the apiserver to its response status, by HTTP method.',
      labelNames: ['method'] as const,
      buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
      registers: [registry],
    }),
  };
}

export type KubeRequestMetrics = ReturnType<typeof createKubeRequestMetrics>;

/** What the interceptor needs of client-node's undici dispatcher (undici is not ours to import). */
type Dispatch = (opts: { method?: string }, handler: object) => boolean;
interface Dispatcher {
  compose(interceptor: (dispatch: Dispatch) => Dispatch): Dispatcher;
}

/** The handler callbacks an outcome is read from (undici's current and legacy names). */
const STATUS_CALLBACKS = new Set(['onResponseStart', 'onHeaders']);
const ERROR_CALLBACKS = new Set(['onResponseError', 'onError']);

/**
 * Every request through `dispatcher` counted into the metrics `sink()` names at that moment (none:
 * nothing recorded). One undici interceptor sees every call of the client, watches included.
 */
function recordingRequests(dispatcher: Dispatcher, sink: () => KubeRequestMetrics | undefined): Dispatcher {
  return dispatcher.compose((dispatch) => (opts, handler) => {
    const metrics = sink();
    if (!metrics) return dispatch(opts, handler);
    const method = String(opts.method ?? 'GET').toUpperCase();
    const started = performance.now();
    let recorded = false;
    const record = (code: string) => {
      if (recorded) return;
      recorded = true;
      metrics.requests.inc({ method, code });
      metrics.duration.observe({ method }, (performance.now() - started) / 1000);
    };
    const observed = new Proxy(handler, {
      get(target, key) {
        const value: unknown = Reflect.get(target, key);
        if (typeof value !== 'function') return value;
        const call = value as (...a: unknown[]) => unknown;
        if (typeof key === 'string' && STATUS_CALLBACKS.has(key))
          return (...args: unknown[]) => {
            // onResponseStart(controller, statusCode, …); legacy onHeaders(statusCode, …). 1xx are interim.
            const status = Number(key === 'onHeaders' ? args[0] : args[1]);
            if (status >= 200) record(String(status));
            return call.apply(target, args);
          };
        if (typeof key === 'string' && ERROR_CALLBACKS.has(key))
          return (...args: unknown[]) => {
            record('<error>');
            return call.apply(target, args);
          };
        return call.bind(target);
      },
    });
    return dispatch(opts, observed);
  });
}

/**
 * client-node 2.0 builds a new undici Agent — so a new TCP connection and TLS handshake, and a
 * SecureContext parsed from the CA and client certificate — for every request (its
 * applySecurityAuthentication calls createDispatcher each time). On a busy role that was seconds
 * of CPU a minute and a handshake on every create's path. One dispatcher per (server, TLS
 * material) keeps connections alive; rotated certificates get a new one.
 */
export function reuseConnections(kc: KubeConfig): KubeConfig {
  const target = kc as unknown as { [REUSING]?: boolean; [REQUEST_METRICS]?: KubeRequestMetrics } & {
    createDispatcher: (cluster: { server?: string } | null, agentOptions: Record<string, unknown>) => unknown;
  };
  if (target[REUSING]) return kc;
  const make = target.createDispatcher.bind(kc);
  const cache = new Map<string, unknown>();
  target.createDispatcher = (cluster, agentOptions) => {
    const { ca, cert, key, pfx, passphrase, servername, rejectUnauthorized } = agentOptions;
    const h = createHash('sha256');
    for (const v of [cluster?.server, ca, cert, key, pfx, passphrase, servername, rejectUnauthorized])
      h.update(Buffer.isBuffer(v) ? v : `${typeof v}:${String(v)}`).update('\0');
    const id = h.digest('hex');
    if (!cache.has(id)) {
      // Material changes (a rotation) are rare: keep the newest few, close what falls out.
      if (cache.size >= 4) {
        const [oldest, d] = cache.entries().next().value as [string, { close?: () => Promise<void> } | undefined];
        cache.delete(oldest);
        void d?.close?.().catch(() => undefined);
      }
      const made = make(cluster, agentOptions) as Dispatcher | undefined;
      cache.set(id, made && recordingRequests(made, () => target[REQUEST_METRICS]));
    }
    return cache.get(id);
  };
  target[REUSING] = true;
  return kc;
}

/** The request kinds of KubernetesObjectApi (upstream does not export the type). */
type KubernetesApiAction = 'create' | 'delete' | 'patch' | 'read' | 'list' | 'replace';

/** KubernetesObjectApi with its discovery exposed, so the watcher can build watch paths. */
class DiscoveringObjectApi extends KubernetesObjectApi {
  async resourceFor(apiVersion: string, kind: string): Promise<V1APIResource> {
    const r = await this.resource(apiVersion, kind);
    if (!r) throw new Error(`the apiserver does not serve ${kind} in ${apiVersion}`);
    return r;
  }
  /** The served resource, or undefined when the apiserver does not serve that group/version/kind. */
  async servedResource(apiVersion: string, kind: string): Promise<V1APIResource | undefined> {
    try {
      return (await this.resource(apiVersion, kind)) ?? undefined;
    } catch (err) {
      if (isNotFound(err)) return undefined; // discovery of an unknown group/version answers 404
      throw err;
    }
  }
  pathPrefix(apiVersion: string): string {
    return this.apiVersionPath(apiVersion);
  }
  /**
   * Upstream lowercases the whole path, the object's name included, so an object named
   * `system:controller:Demo` (legal for most kinds) is read, patched or deleted as `…demo`:
   * "not found", or worse, another object. The same path, with the name as it is.
   */
  protected override async specUriPath(spec: KubernetesObject, action: KubernetesApiAction): Promise<string> {
    const path = await super.specUriPath(spec, action);
    const name = spec.metadata?.name;
    if (action === 'create' || action === 'list' || !name) return path;
    // encodeURIComponent yields ASCII, which lowercasing leaves the same length.
    const encoded = encodeURIComponent(name);
    return `${path.slice(0, path.length - encoded.length)}${encoded}`;
  }
}

export class KubeClient {
  readonly objects: DiscoveringObjectApi;
  readonly core: CoreV1Api;
  readonly customObjects: CustomObjectsApi;
  readonly apiextensions: ApiextensionsV1Api;
  /** `/version`: what the readiness probes ask (any authenticated user may). */
  readonly version: VersionApi;

  constructor(readonly kc: KubeConfig) {
    reuseConnections(kc);
    this.objects = kc.makeApiClient(DiscoveringObjectApi);
    this.core = kc.makeApiClient(CoreV1Api);
    this.customObjects = kc.makeApiClient(CustomObjectsApi);
    this.apiextensions = kc.makeApiClient(ApiextensionsV1Api);
    this.version = kc.makeApiClient(VersionApi);
  }

  static fromKubeconfig(kubeconfigPath?: string): KubeClient {
    return new KubeClient(loadKubeConfig(kubeconfigPath));
  }

  /** Counts this client's apiserver requests from now on (a role's /metrics). */
  recordRequests(metrics: KubeRequestMetrics): this {
    (this.kc as unknown as { [REQUEST_METRICS]?: KubeRequestMetrics })[REQUEST_METRICS] = metrics;
    return this;
  }

  /** Uncached GET; undefined when the object does not exist. */
  async get<T extends KubernetesObject = KubernetesObject>(ref: ObjectRef): Promise<T | undefined> {
    try {
      return await this.objects.read<T>({
        apiVersion: ref.apiVersion,
        kind: ref.kind,
        metadata: { name: ref.name, namespace: ref.namespace },
      });
    } catch (err) {
      if (isNotFound(err)) return undefined;
      throw err;
    }
  }

  async create<T extends KubernetesObject>(obj: T): Promise<T> {
    return this.objects.create<T>(toModel(obj), undefined, undefined, FIELD_MANAGER);
  }

  /** Server-side apply (used for CRDs and manifests). */
  async apply<T extends KubernetesObject>(obj: T, opts: { dryRun?: boolean } = {}): Promise<T> {
    return this.objects.patch<T>(
      toModel(obj),
      undefined,
      opts.dryRun ? 'All' : undefined,
      FIELD_MANAGER,
      true,
      PatchStrategy.ServerSideApply,
    );
  }

  /**
   * Deletes an object. With `uid`, the apiserver refuses (409) if the name now belongs to a
   * different object, so a recreated object is never deleted by mistake. Returns false when the
   * object was already gone or the UID no longer matches.
   */
  async delete(
    ref: ObjectRef,
    opts: { uid?: string; propagationPolicy?: 'Background' | 'Foreground' | 'Orphan' } = {},
  ): Promise<boolean> {
    try {
      await this.objects.delete(
        { apiVersion: ref.apiVersion, kind: ref.kind, metadata: { name: ref.name, namespace: ref.namespace } },
        undefined,
        undefined,
        undefined,
        undefined,
        undefined,
        {
          propagationPolicy: opts.propagationPolicy ?? 'Background',
          preconditions: opts.uid ? { uid: opts.uid } : undefined,
        },
      );
      return true;
    } catch (err) {
      if (isNotFound(err)) return false;
      if (opts.uid && statusCode(err) === 409) return false; // precondition failed: a different object now
      throw err;
    }
  }

  /**
   * JSON merge patch of an object (not its status). With `uid`, the apiserver refuses (409) if
   * the name now belongs to another object.
   */
  async mergePatch<T extends KubernetesObject = KubernetesObject>(
    ref: ObjectRef,
    patch: Record<string, unknown>,
    opts: { uid?: string } = {},
  ): Promise<T> {
    const patchMeta = (patch.metadata ?? {}) as Record<string, unknown>;
    const body = {
      ...patch,
      apiVersion: ref.apiVersion,
      kind: ref.kind,
      metadata: { ...patchMeta, name: ref.name, namespace: ref.namespace, ...(opts.uid ? { uid: opts.uid } : {}) },
    };
    return this.objects.patch<T>(
      body as unknown as T,
      undefined,
      undefined,
      FIELD_MANAGER,
      undefined,
      PatchStrategy.MergePatch,
    );
  }

  /** JSON merge patch of a custom resource's status subresource. */
  async patchCustomStatus(
    ref: ObjectRef & { plural: string },
    status: Record<string, unknown>,
    /** When set, the write is refused (409) unless the object still has this UID. */
    uid?: string,
  ): Promise<KubernetesObject> {
    const [group, version] = splitApiVersion(ref.apiVersion);
    const options = setHeaderOptions('Content-Type', PatchStrategy.MergePatch);
    const body = uid ? { metadata: { uid }, status } : { status };
    if (ref.namespace) {
      return this.customObjects.patchNamespacedCustomObjectStatus(
        {
          group,
          version,
          namespace: ref.namespace,
          plural: ref.plural,
          name: ref.name,
          body,
          fieldManager: FIELD_MANAGER,
        },
        options,
      ) as Promise<KubernetesObject>;
    }
    return this.customObjects.patchClusterCustomObjectStatus(
      { group, version, plural: ref.plural, name: ref.name, body, fieldManager: FIELD_MANAGER },
      options,
    ) as Promise<KubernetesObject>;
  }

  /**
   * One page of a cluster-wide list, with the resourceVersion to watch from and the continue
   * token. Kinds outside the core group go through the generic custom-objects endpoint, which
   * returns the apiserver's JSON untouched: KubernetesObjectApi.list drops `metadata.continue`
   * for kinds it has no model for, which would silently truncate lists to their first page.
   */
  async listPage<T extends KubernetesObject = KubernetesObject>(
    apiVersion: string,
    kind: string,
    opts: { namespace?: string; limit?: number; continueToken?: string; labelSelector?: string } = {},
  ): Promise<{ items: T[]; resourceVersion?: string; continueToken?: string }> {
    const [group, version] = splitApiVersion(apiVersion);
    if (group === '') {
      const page = await this.objects.list<T>(
        apiVersion,
        kind,
        opts.namespace,
        undefined,
        undefined,
        undefined,
        undefined,
        opts.labelSelector,
        opts.limit,
        opts.continueToken,
      );
      return {
        items: page.items,
        resourceVersion: page.metadata?.resourceVersion,
        continueToken: page.metadata?._continue || undefined,
      };
    }
    const plural = (await this.objects.resourceFor(apiVersion, kind)).name;
    const query = {
      group,
      version,
      plural,
      limit: opts.limit,
      _continue: opts.continueToken,
      labelSelector: opts.labelSelector,
    };
    const page = (await (opts.namespace
      ? this.customObjects.listNamespacedCustomObject({ ...query, namespace: opts.namespace })
      : this.customObjects.listClusterCustomObject(query))) as {
      items: T[];
      metadata?: { resourceVersion?: string; continue?: string };
    };
    return {
      items: page.items,
      resourceVersion: page.metadata?.resourceVersion,
      continueToken: page.metadata?.continue || undefined,
    };
  }

  /** Every item of a (possibly namespaced, label-selected) list, page by page, in one place. */
  async *listAll<T extends KubernetesObject = KubernetesObject>(
    apiVersion: string,
    kind: string,
    opts: { namespace?: string; labelSelector?: string; pageSize?: number } = {},
  ): AsyncGenerator<T> {
    let continueToken: string | undefined;
    do {
      const page = await this.listPage<T>(apiVersion, kind, {
        namespace: opts.namespace,
        labelSelector: opts.labelSelector,
        limit: opts.pageSize ?? 500,
        continueToken,
      });
      yield* page.items;
      continueToken = page.continueToken;
    } while (continueToken);
  }

  /** The REST collection path for a kind (cluster-wide), e.g. `/apis/deckhouse.io/v1alpha1/objectkeepers`. */
  async collectionPath(apiVersion: string, kind: string): Promise<string> {
    const r = await this.objects.resourceFor(apiVersion, kind);
    return `${this.objects.pathPrefix(apiVersion)}/${r.name}`;
  }

  newWatch(): Watch {
    return new Watch(this.kc);
  }
}

/**
 * Objects written as plain JSON (wire field names such as `enum`, `x-kubernetes-validations`,
 * `$ref`) must become the client's generated models before the client serializes them, or
 * fields whose model name differs are silently dropped. `loadYaml` does exactly that mapping
 * (JSON is YAML); kinds the client has no model for pass through unchanged.
 */
export function toModel<T extends KubernetesObject>(obj: T): T {
  return loadYaml<T>(JSON.stringify(obj));
}

export function splitApiVersion(apiVersion: string): [group: string, version: string] {
  const i = apiVersion.indexOf('/');
  return i < 0 ? ['', apiVersion] : [apiVersion.slice(0, i), apiVersion.slice(i + 1)];
}

export function statusCode(err: unknown): number | undefined {
  if (err instanceof ApiException) return err.code;
  const code = (err as { code?: unknown; statusCode?: unknown } | undefined)?.code;
  return typeof code === 'number' ? code : undefined;
}

/** 409 on create: an object with that name exists. */
export function isAlreadyExists(err: unknown): boolean {
  return statusCode(err) === 409;
}

export function isNotFound(err: unknown): boolean {
  return statusCode(err) === 404;
}

/** The apiserver's human message (e.g. a CEL rule's message) from an ApiException, if any. */
export function apiMessage(err: unknown): string {
  if (err instanceof ApiException) {
    const body = err.body as V1Status | string | undefined;
    if (typeof body === 'string') {
      try {
        return (JSON.parse(body) as V1Status).message ?? body;
      } catch {
        return body;
      }
    }
    return body?.message ?? err.message;
  }
  return err instanceof Error ? err.message : String(err);
}

/**
 * Transient failures worth retrying: conflicts, throttling, server errors, timeouts, and
 * connection errors (no status code). Everything else (400/403/404/422) is for the caller.
 */
export function isTransient(err: unknown): boolean {
  const code = statusCode(err);
  if (code === undefined) return true;
  return code === 409 || code === 429 || code >= 500;
}
