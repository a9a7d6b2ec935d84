/**
 * Building blocks for CRD schemas. Each kind is defined once with TypeBox: the same definition
 * yields the TypeScript type (`Static<typeof X>`) and the OpenAPI v3 structural schema written
 * into deploy/crds/. TypeBox was chosen because its schemas *are* JSON Schema objects, so extra
 * Kubernetes keywords (`x-kubernetes-validations`, `x-kubernetes-list-type`) pass straight through.
 */
import { Type, type TSchema, type TUnsafe, type StringOptions } from '@sinclair/typebox';

/** A string enum as Kubernetes expects it (`type: string, enum: [...]`), typed as a union. */
export function StringEnum<const T extends readonly string[]>(
  values: T,
  opts: Record<string, unknown> = {},
): TUnsafe<T[number]> {
  return Type.Unsafe<T[number]>({ type: 'string', enum: [...values], ...opts });
}

/** RFC 3339 timestamp (metav1.Time). */
export const Timestamp = (opts: StringOptions = {}) => Type.String({ format: 'date-time', ...opts });

/** Go duration string (metav1.Duration), e.g. `30s`, `1h30m`, `168h`. */
export const Duration = (opts: StringOptions = {}) =>
  Type.String({ pattern: '^([0-9]+(\\.[0-9]+)?(ns|us|µs|ms|s|m|h))+$', ...opts });

/** DNS-1123 subdomain (the name rule of most Kubernetes objects). */
export const ObjectName = (opts: StringOptions = {}) =>
  Type.String({
    minLength: 1,
    maxLength: 253,
    pattern: '^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$',
    ...opts,
  });

/**
 * The name of an object of any kind, as the apiserver allows it for every resource: a non-empty
 * path segment (no `/` or `%`, not `.` or `..`). Many kinds allow more than DNS-1123 (RBAC
 * objects such as `system:controller:bootstrap-signer`); no kind allows less than this, and
 * what is refused here could never name an object, nor reach a URL path of ours.
 */
export const AnyObjectName = (opts: StringOptions = {}) =>
  withCel(Type.String({ minLength: 1, maxLength: 253, pattern: '^[^/%]+$', ...opts }), [
    { rule: "self != '.' && self != '..'", message: 'an object name cannot be "." or ".."' },
  ]);

/** DNS-1123 label (namespace names). */
export const NamespaceName = (opts: StringOptions = {}) =>
  Type.String({ minLength: 1, maxLength: 63, pattern: '^[a-z0-9]([-a-z0-9]*[a-z0-9])?$', ...opts });

/** metav1.Condition, as used by every status in this project. */
export const Condition = Type.Object({
  type: Type.String({ minLength: 1, maxLength: 316 }),
  status: StringEnum(['True', 'False', 'Unknown'] as const),
  observedGeneration: Type.Optional(Type.Integer({ minimum: 0 })),
  lastTransitionTime: Timestamp(),
  reason: Type.String({ minLength: 1, maxLength: 1024, pattern: '^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$' }),
  message: Type.String({ maxLength: 32768 }),
});

export const Conditions = Type.Array(Condition, {
  'x-kubernetes-list-type': 'map',
  'x-kubernetes-list-map-keys': ['type'],
  maxItems: 16,
});

export interface CelRule {
  rule: string;
  message: string;
  reason?: 'FieldValueInvalid' | 'FieldValueForbidden' | 'FieldValueRequired' | 'FieldValueDuplicate';
  fieldPath?: string;
}

/** Adds CEL validation rules to a schema node (after any it already has). */
export function withCel<T extends TSchema>(schema: T, rules: CelRule[]): T {
  const existing = (schema as { 'x-kubernetes-validations'?: CelRule[] })['x-kubernetes-validations'] ?? [];
  return { ...schema, 'x-kubernetes-validations': [...existing, ...rules] };
}
