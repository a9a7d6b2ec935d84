/**
 * The values of charts/durable-operators, as a schema: `npm run crds` writes it as the chart's
 * values.schema.json, which helm checks before rendering, so a misspelt value (`worker.replica`)
 * is refused with its path instead of silently ignored. Kubernetes objects a value passes through
 * unchanged (resources, affinity, tolerations, volumes…) are any object: the apiserver checks them.
 */
import { Type, type TSchema } from '@sinclair/typebox';

const Str = (description?: string) => Type.String(description ? { description } : {});
const Bool = Type.Boolean();
const StringMap = Type.Record(Type.String(), Type.String());
/** Values the chart quotes (env values, pod labels and annotations): `--set a=true` gives a bool. */
const ScalarMap = Type.Record(Type.String(), Type.Union([Type.String(), Type.Number(), Type.Boolean()]));
const KubeObject = Type.Object({}, { additionalProperties: true });
const KubeList = Type.Array(KubeObject);
const IntOrPercent = Type.Union([Type.Integer({ minimum: 0 }), Type.String({ pattern: '^[0-9]+%$' }), Type.Null()]);

/** Where and how a role's Pods run: global, and again per role (merged, docs/helm.md). */
const podSettings = {
  nodeSelector: Type.Optional(StringMap),
  tolerations: Type.Optional(KubeList),
  affinity: Type.Optional(KubeObject),
  priorityClassName: Type.Optional(Str()),
  podAnnotations: Type.Optional(ScalarMap),
  podLabels: Type.Optional(ScalarMap),
  extraVolumes: Type.Optional(KubeList),
  extraVolumeMounts: Type.Optional(KubeList),
  extraEnv: Type.Optional(
    Type.Array(
      Type.Object(
        {
          name: Type.String({ minLength: 1 }),
          value: Type.Optional(Type.String()),
          valueFrom: Type.Optional(KubeObject),
        },
        { additionalProperties: false },
      ),
    ),
  ),
  extraEnvFrom: Type.Optional(KubeList),
};

const strict = <T extends Record<string, TSchema>>(properties: T) =>
  Type.Object(properties, { additionalProperties: false });

const role = <T extends Record<string, TSchema>>(own: T) =>
  strict({
    enabled: Bool,
    replicas: Type.Integer({ minimum: 0 }),
    podDisruptionBudget: strict({
      enabled: Bool,
      minAvailable: Type.Optional(IntOrPercent),
      maxUnavailable: Type.Optional(IntOrPercent),
    }),
    topologySpreadConstraints: Type.Optional(KubeList),
    resources: KubeObject,
    ...podSettings,
    ...own,
  });

export const ChartValues = strict({
  image: strict({
    repository: Str(),
    tag: Str("default: the chart's appVersion"),
    pullPolicy: Type.Union([Type.Literal('Always'), Type.Literal('IfNotPresent'), Type.Literal('Never')]),
  }),
  imagePullSecrets: Type.Array(strict({ name: Str() })),
  versioning: strict({
    mode: Type.Union([Type.Literal('off'), Type.Literal('on'), Type.Literal('auto-promote')], {
      description: 'Worker Deployment Versioning of the worker and the fast path (DO_WORKER_VERSIONING)',
    }),
    buildId: Str('DO_BUILD_ID; default: the image tag'),
  }),
  temporal: strict({
    address: Str(),
    namespace: Str(),
    apiKey: strict({ secretName: Str(), key: Str() }),
    tls: strict({
      clientSecretName: Str(),
      serverCA: strict({ secretName: Str(), key: Str() }),
      serverName: Str(),
    }),
    extraEnv: ScalarMap,
  }),
  payloadKeys: strict({ secretName: Str(), encryptKeyId: Str() }),
  tracing: strict({ otlpEndpoint: Str(), extraEnv: ScalarMap }),
  ...podSettings,
  worker: role({ env: ScalarMap }),
  watcher: role({ env: ScalarMap }),
  fastpath: role({
    env: ScalarMap,
    consistencyMode: Type.Union([Type.Literal('fast'), Type.Literal('strong')]),
    // A string: the chart's old form, the endpoints.
    tenantEtcd: Type.Union([
      Str(),
      strict({
        endpoints: Str('comma-separated; empty: http://tenant-etcd.<release namespace>:2379'),
        tls: strict({ secretName: Str('ca.crt, tls.crt, tls.key') }),
        auth: strict({ secretName: Str('username, password') }),
      }),
    ]),
    tenantPrefix: Str(),
    agentTokenSecretName: Str(),
    sandboxEnvNamespaces: Type.Array(Type.String()),
    agentPodNamespaces: Type.Array(Type.String()),
    tls: strict({ secretName: Str(), clientCASecretName: Str(), clientCAKey: Str(), requireClientCert: Bool }),
  }),
  // Left to the chart's template, which refuses it saying what to do instead.
  agentPools: Type.Optional(Type.Unknown({ description: 'no longer in the chart: docs/helm.md#sandbox-pools' })),
  admission: role({
    certs: Type.Union([Type.Literal(''), Type.Literal('certManager'), Type.Literal('helm'), Type.Literal('provided')]),
    certManager: Type.Boolean({ description: 'the older switch: false means certs: provided' }),
    caBundle: Str(),
    sandboxCapabilities: Type.Record(Type.String(), Type.Array(Type.String())),
  }),
  codecServer: role({
    env: ScalarMap,
    tokens: strict({ secretName: Str(), key: Str() }),
    pathTokens: Bool,
    corsOrigins: Type.Array(Type.String({ pattern: '^https?://[^/]+$' })),
    tls: strict({ secretName: Str() }),
    oidc: strict({
      issuer: Str(),
      jwksUrl: Str(),
      audience: Str(),
      permissionsClaim: Type.String({ minLength: 1 }),
      roles: Type.Array(Type.String({ minLength: 1 }), { minItems: 1 }),
    }),
    ingress: strict({
      enabled: Bool,
      className: Str(),
      host: Str(),
      annotations: StringMap,
      tlsSecretName: Str(),
    }),
  }),
  networkPolicies: strict({ enabled: Bool }),
  monitoring: strict({
    // A bool (the chart's old form) is left to the template, which says to set `.enabled`.
    serviceMonitor: Type.Union([
      strict({ enabled: Bool, additionalLabels: StringMap, interval: Str(), scrapeTimeout: Str() }),
      Type.Boolean(),
    ]),
    prometheusRule: Type.Union([
      strict({ enabled: Bool, additionalLabels: StringMap, rules: KubeList }),
      Type.Boolean(),
    ]),
    dashboard: Type.Union([strict({ enabled: Bool }), Type.Boolean()]),
  }),
});

/** values.schema.json's content. */
export function chartValuesSchema(): string {
  return JSON.stringify({ $schema: 'https://json-schema.org/draft-07/schema#', ...ChartValues }, null, 2) + '\n';
}
