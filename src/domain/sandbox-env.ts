/**
 * `envs[].valueFrom` of a Sandbox, decided as the kubelet decides a container's env, so a Sandbox
 * made from a Pod's env behaves as the Pod would: the Secret or ConfigMap is read in the
 * Sandbox's namespace when the sandbox is created on its agent; a missing object or key stops the
 * create with the kubelet's message (its reason CreateContainerConfigError), unless the reference
 * is `optional` — then the variable is left out. Pure; the read is src/activities/sandbox/env.ts.
 */

/** A sandbox whose env cannot be made: the Ready condition's reason, as the kubelet's container state. */
export const ENV_CONFIG_ERROR = 'CreateContainerConfigError';

export type EnvSourceKind = 'Secret' | 'ConfigMap';

/** One `secretKeyRef` or `configMapKeyRef`, with the namespace it is read in (the Sandbox's). */
export interface EnvSource {
  kind: EnvSourceKind;
  namespace: string;
  name: string;
  key: string;
  optional: boolean;
}

interface KeySelector {
  name?: string;
  key?: string;
  optional?: boolean;
}

/** The reference an env's valueFrom makes; undefined for the kinds the CRD refuses (fieldRef…). */
export function envSourceOf(namespace: string, valueFrom: Record<string, unknown>): EnvSource | undefined {
  const secret = valueFrom.secretKeyRef as KeySelector | undefined;
  const configMap = valueFrom.configMapKeyRef as KeySelector | undefined;
  const [kind, ref]: [EnvSourceKind, KeySelector] | [undefined, undefined] = secret
    ? ['Secret', secret]
    : configMap
      ? ['ConfigMap', configMap]
      : [undefined, undefined];
  if (!kind) return undefined;
  return { kind, namespace, name: ref.name ?? '', key: ref.key ?? '', optional: ref.optional === true };
}

/** What the variable gets from the object read (undefined: it does not exist). */
export type EnvSourceValue = { value: string } | { omit: true } | { error: string };

/**
 * The kubelet's rule (pkg/kubelet/kubelet_pods.go, makeEnvironmentVariables): a missing object or
 * key is an error, or, when optional, no variable at all. A Secret's data is base64; a
 * ConfigMap's `data` only (as for a Pod's env, `binaryData` does not count).
 */
export function envSourceValue(
  source: EnvSource,
  object: { data?: Record<string, string> } | undefined,
): EnvSourceValue {
  if (!object)
    return source.optional ? { omit: true } : { error: `${source.kind.toLowerCase()} "${source.name}" not found` };
  const raw = object.data?.[source.key];
  if (raw === undefined)
    return source.optional
      ? { omit: true }
      : { error: `couldn't find key ${source.key} in ${source.kind} ${source.namespace}/${source.name}` };
  return { value: source.kind === 'Secret' ? Buffer.from(raw, 'base64').toString('utf8') : raw };
}
