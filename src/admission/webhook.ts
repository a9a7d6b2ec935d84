/**
 * The registration of the admission webhook: one ValidatingWebhookConfiguration, built here for
 * the local stack (clientConfig.url) and written out in deploy/webhook/ for clusters
 * (clientConfig.service; test/unit/deploy-manifests.test.ts checks both say the same).
 *
 * Why a webhook and not a ValidatingAdmissionPolicy: CEL's `authorizer` can make the same
 * SubjectAccessReview, but it needs the resource (plural) of each target, and a target names a
 * kind and apiVersion. CEL has no discovery, so the plural would have to be guessed from the kind
 * (`NetworkPolicy` → `networkpolicies`, `Endpoints`, custom kinds with any plural they like). A
 * wrong guess checks a different resource: it refuses legitimate requests, or, where the guess
 * happens to be another resource the user may read, admits a target the user may not read. A
 * policy also cannot tell an unserved or cluster-scoped kind. The webhook asks discovery, as the
 * worker does, so it checks exactly the resource the worker will read.
 *
 * Why failurePolicy Fail: the check is a security boundary. With Ignore, an unreachable or slow
 * webhook would silently admit every request unchecked. Failing closed only blocks CREATE of the
 * capture kinds, CREATE/UPDATE of the Cloudflare source kinds and SandboxPools (also the fast
 * path's finalizer writes on pools), and CREATE or an envs change of a Sandbox naming a Secret or
 * ConfigMap (matchConditions keep every other Sandbox write away), while the webhook is down; it
 * intercepts nothing else (a capture request's spec is immutable, so its targets cannot change
 * after admission; status writes of the worker never pass through it — the status subresource is
 * not in the rules), so the operators keep running.
 *
 * Four webhooks, one server, a path each (WEBHOOK_PATHS): capture requests (CREATE, namespaced),
 * Cloudflare sources (CREATE and UPDATE, any scope: they may name other credentials or Secrets on
 * any edit), SandboxPools (CREATE and UPDATE: their agentTemplate becomes Pods the fast path
 * creates, and a capability beyond the sandboxes' default set needs the operator's allowance) and
 * Sandboxes whose envs name a Secret or ConfigMap (CREATE, and UPDATE of envs: the fast path reads
 * them into the sandbox). A path reviews its own kinds only, so the server's access log and
 * metrics say which webhook was called.
 */
import { SandboxKind, SandboxPoolKind } from '../api/sandbox.js';
import { SOURCE_KINDS, kindDefinition } from '../domain/cloudflare/sources.js';
import { REVIEWED_KINDS } from './review.js';

export const WEBHOOK_CONFIGURATION_NAME = 'durable-operators-admission';
export const WEBHOOK_NAME = 'capture-requests.admission.durable-operators.io';
export const CLOUDFLARE_WEBHOOK_NAME = 'cloudflare-sources.admission.durable-operators.io';
export const SANDBOX_POOL_WEBHOOK_NAME = 'sandbox-pools.admission.durable-operators.io';
export const SANDBOX_ENV_WEBHOOK_NAME = 'sandbox-env.admission.durable-operators.io';
/** Each webhook's path on the admission server. */
export const WEBHOOK_PATHS = {
  [WEBHOOK_NAME]: '/validate/capture-requests',
  [CLOUDFLARE_WEBHOOK_NAME]: '/validate/cloudflare-sources',
  [SANDBOX_POOL_WEBHOOK_NAME]: '/validate/sandbox-pools',
  [SANDBOX_ENV_WEBHOOK_NAME]: '/validate/sandbox-env',
} as const;
/**
 * The one path all four webhooks shared up to 0.2: still answered, for every kind, for one
 * release, as a ValidatingWebhookConfiguration of 0.2 may still send reviews there while an
 * upgrade rolls (docs/compatibility.md). Removed in 0.4.
 */
export const LEGACY_WEBHOOK_PATH = '/validate-capture-requests';
/** How long the apiserver waits for an answer before failing the request (closed). */
export const WEBHOOK_TIMEOUT_SECONDS = 15;

/** Where the apiserver reaches the server: a base URL (the local stack) or a Service; each webhook adds its path. */
export type ClientConfig =
  | { url: string; caBundle?: string }
  | { service: { namespace: string; name: string; port: number }; caBundle?: string };

type WebhookName = keyof typeof WEBHOOK_PATHS;

function clientConfigAt(base: ClientConfig, name: WebhookName) {
  const path = WEBHOOK_PATHS[name];
  return 'url' in base
    ? { ...base, url: `${base.url.replace(/\/+$/, '')}${path}` }
    : { ...base, service: { ...base.service, path } };
}

/** The webhook a path serves (undefined: no webhook's; the legacy path: every one). */
export function webhookAt(path: string): WebhookName | 'legacy' | undefined {
  if (path === LEGACY_WEBHOOK_PATH) return 'legacy';
  return (Object.keys(WEBHOOK_PATHS) as WebhookName[]).find((n) => WEBHOOK_PATHS[n] === path);
}

/** The webhook whose rules send a review of this kind (group and kind, as an AdmissionRequest names it). */
export function webhookOfKind(kind: { group: string; kind: string }): WebhookName | undefined {
  if (Object.values(REVIEWED_KINDS).some((k) => k.group === kind.group && k.kind === kind.kind)) return WEBHOOK_NAME;
  if (SOURCE_KINDS.some((k) => k === kind.kind && kindDefinition(k).group === kind.group))
    return CLOUDFLARE_WEBHOOK_NAME;
  if (kind.group === SandboxPoolKind.group && kind.kind === SandboxPoolKind.kind) return SANDBOX_POOL_WEBHOOK_NAME;
  if (kind.group === SandboxKind.group && kind.kind === SandboxKind.kind) return SANDBOX_ENV_WEBHOOK_NAME;
  return undefined;
}

export function webhookRules() {
  return Object.values(REVIEWED_KINDS).map((k) => ({
    apiGroups: [k.group],
    apiVersions: [k.version],
    operations: ['CREATE'],
    resources: [k.plural],
    scope: 'Namespaced',
  }));
}

/** The Cloudflare source kinds, grouped by API version (TunnelBinding-style versions stay apart). */
export function cloudflareWebhookRules() {
  const byVersion = new Map<string, { group: string; version: string; plurals: string[] }>();
  for (const def of SOURCE_KINDS.map(kindDefinition)) {
    const key = `${def.group}/${def.version}`;
    const entry = byVersion.get(key) ?? { group: def.group, version: def.version, plurals: [] };
    entry.plurals.push(def.plural);
    byVersion.set(key, entry);
  }
  return [...byVersion.values()].map((e) => ({
    apiGroups: [e.group],
    apiVersions: [e.version],
    operations: ['CREATE', 'UPDATE'],
    resources: e.plurals,
    scope: '*',
  }));
}

/** SandboxPools: their creator must be allowed to create the Pods the pool's workflow makes. */
export function sandboxPoolWebhookRules() {
  return [
    {
      apiGroups: [SandboxPoolKind.group],
      apiVersions: [SandboxPoolKind.version],
      operations: ['CREATE', 'UPDATE'],
      resources: [SandboxPoolKind.plural],
      scope: 'Namespaced',
    },
  ];
}

/** Sandboxes: their creator must be allowed to get the Secrets and ConfigMaps their envs name. */
export function sandboxEnvWebhookRules() {
  return [
    {
      apiGroups: [SandboxKind.group],
      apiVersions: [SandboxKind.version],
      operations: ['CREATE', 'UPDATE'],
      resources: [SandboxKind.plural],
      scope: 'Namespaced',
    },
  ];
}

/**
 * Only Sandboxes whose envs name a Secret or ConfigMap reach the webhook, and on UPDATE only
 * when their envs changed: the fast path's own writes (every Fast and Strong record, the
 * finalizer, the hand-off) never wait for it, nor fail while it is down.
 */
export const SANDBOX_ENV_MATCH_CONDITIONS = [
  {
    name: 'names-a-secret-or-configmap',
    expression:
      "has(object.spec) && has(object.spec.envs) && object.spec.envs.exists(e, has(e.valueFrom)) && (request.operation == 'CREATE' || !has(oldObject.spec.envs) || object.spec.envs != oldObject.spec.envs)",
  },
];

export function validatingWebhookConfiguration(clientConfig: ClientConfig) {
  return {
    apiVersion: 'admissionregistration.k8s.io/v1',
    kind: 'ValidatingWebhookConfiguration',
    metadata: { name: WEBHOOK_CONFIGURATION_NAME },
    webhooks: [
      {
        name: WEBHOOK_NAME,
        clientConfig: clientConfigAt(clientConfig, WEBHOOK_NAME),
        rules: webhookRules(),
        failurePolicy: 'Fail',
        matchPolicy: 'Equivalent',
        sideEffects: 'None',
        admissionReviewVersions: ['v1'],
        timeoutSeconds: WEBHOOK_TIMEOUT_SECONDS,
      },
      {
        name: CLOUDFLARE_WEBHOOK_NAME,
        clientConfig: clientConfigAt(clientConfig, CLOUDFLARE_WEBHOOK_NAME),
        rules: cloudflareWebhookRules(),
        failurePolicy: 'Fail',
        matchPolicy: 'Equivalent',
        sideEffects: 'None',
        admissionReviewVersions: ['v1'],
        timeoutSeconds: WEBHOOK_TIMEOUT_SECONDS,
      },
      {
        name: SANDBOX_POOL_WEBHOOK_NAME,
        clientConfig: clientConfigAt(clientConfig, SANDBOX_POOL_WEBHOOK_NAME),
        rules: sandboxPoolWebhookRules(),
        failurePolicy: 'Fail',
        matchPolicy: 'Equivalent',
        sideEffects: 'None',
        admissionReviewVersions: ['v1'],
        timeoutSeconds: WEBHOOK_TIMEOUT_SECONDS,
      },
      {
        name: SANDBOX_ENV_WEBHOOK_NAME,
        clientConfig: clientConfigAt(clientConfig, SANDBOX_ENV_WEBHOOK_NAME),
        rules: sandboxEnvWebhookRules(),
        matchConditions: SANDBOX_ENV_MATCH_CONDITIONS,
        failurePolicy: 'Fail',
        matchPolicy: 'Equivalent',
        sideEffects: 'None',
        admissionReviewVersions: ['v1'],
        timeoutSeconds: WEBHOOK_TIMEOUT_SECONDS,
      },
    ],
  };
}
