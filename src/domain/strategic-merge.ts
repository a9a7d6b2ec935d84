/**
 * A Kubernetes strategic merge patch (what `kubectl patch` sends by default) applied to a
 * Deployment, client-side: the original operator applies a Tunnel's `spec.deployPatch` this way
 * (k8s.io/apimachinery strategicpatch) to the Deployment it builds before writing it. No
 * JavaScript library implements it, so this follows the Go implementation for the fields of a
 * Deployment: maps merge (null deletes a key), lists named below merge by their `patchMergeKey`
 * (k8s.io/api struct tags), every other list is replaced, and the directives `$patch:
 * replace|delete` (map or list item), `$retainKeys`, `$setElementOrder/…` and
 * `$deleteFromPrimitiveList/…` are honoured.
 */

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };
type JsonObject = { [key: string]: Json };

/**
 * Lists of a Deployment merged item by item, by field name → merge key (`patchStrategy:"merge"`
 * in k8s.io/api apps/v1, core/v1 and meta/v1). Field names are unique enough within a
 * Deployment for a flat table. `finalizers` is a merged list of strings.
 */
const MERGE_KEYS: Record<string, string> = {
  containers: 'name',
  initContainers: 'name',
  ephemeralContainers: 'name',
  volumes: 'name',
  imagePullSecrets: 'name',
  hostAliases: 'ip',
  topologySpreadConstraints: 'topologyKey',
  resourceClaims: 'name',
  schedulingGates: 'name',
  env: 'name',
  ports: 'containerPort',
  volumeMounts: 'mountPath',
  volumeDevices: 'devicePath',
  ownerReferences: 'uid',
  conditions: 'type',
};
const MERGED_PRIMITIVE_LISTS = new Set(['finalizers']);

const isObject = (v: unknown): v is JsonObject => typeof v === 'object' && v !== null && !Array.isArray(v);

/** The patched object; neither argument is changed. Throws on a malformed directive. */
export function strategicMerge<T>(original: T, patch: Record<string, unknown>): T {
  return mergeMap(original as JsonObject, patch as JsonObject) as T;
}

function mergeMap(original: JsonObject | undefined, patch: JsonObject): JsonObject | undefined {
  const directive = patch.$patch;
  if (directive === 'delete') return undefined;
  const base: JsonObject = directive === 'replace' ? {} : { ...(original ?? {}) };
  const retain = Array.isArray(patch.$retainKeys) ? new Set(patch.$retainKeys as string[]) : undefined;
  for (const [key, value] of Object.entries(patch)) {
    if (key === '$patch' || key === '$retainKeys') continue;
    if (key.startsWith('$setElementOrder/')) continue; // order of a merged list: kept as merged
    if (key.startsWith('$deleteFromPrimitiveList/')) {
      const field = key.slice('$deleteFromPrimitiveList/'.length);
      const drop = new Set((value as Json[]).map((v) => JSON.stringify(v)));
      if (Array.isArray(base[field])) base[field] = base[field].filter((v) => !drop.has(JSON.stringify(v)));
      continue;
    }
    if (value === null) {
      delete base[key];
      continue;
    }
    const current = base[key];
    if (isObject(value)) {
      const merged = mergeMap(isObject(current) ? current : undefined, value);
      if (merged === undefined) delete base[key];
      else base[key] = merged;
    } else if (Array.isArray(value)) base[key] = mergeList(key, Array.isArray(current) ? current : undefined, value);
    else base[key] = value;
  }
  if (retain) for (const key of Object.keys(base)) if (!retain.has(key)) delete base[key];
  return base;
}

function mergeList(field: string, original: Json[] | undefined, patch: Json[]): Json[] {
  if (patch.some((item) => isObject(item) && item.$patch === 'replace'))
    return patch.filter((item) => !(isObject(item) && item.$patch === 'replace'));
  if (MERGED_PRIMITIVE_LISTS.has(field)) {
    const seen = new Set((original ?? []).map((v) => JSON.stringify(v)));
    return [...(original ?? []), ...patch.filter((v) => !seen.has(JSON.stringify(v)))];
  }
  const key = MERGE_KEYS[field];
  if (!key || !patch.every(isObject)) return patch;
  const out = [...(original ?? [])];
  for (const item of patch as JsonObject[]) {
    if (!(key in item)) throw new Error(`${field}: an item without its merge key ${JSON.stringify(key)}`);
    const at = out.findIndex((o) => isObject(o) && o[key] === item[key]);
    if (item.$patch === 'delete') {
      if (at >= 0) out.splice(at, 1);
      continue;
    }
    if (at >= 0) out[at] = mergeMap(out[at] as JsonObject, item)!;
    else out.push(mergeMap(undefined, item)!);
  }
  return out;
}
