/**
 * A tenant as one document (what an operator writes, what `tenants get` prints) and its mapping
 * to the exact keys readers parse. Pure; the publisher does the etcd side.
 *
 * The document schema is stricter than the readers' (model.ts): readers accept whatever existing
 * publishers wrote, but nothing new that would be skipped or unusable gets published.
 */
import { Type, type Static, type TObject, type TSchema } from '@sinclair/typebox';
import { Value } from '@sinclair/typebox/value';
import {
  DatabaseConfigSchema,
  FtpConfigSchema,
  SandboxConfigSchema,
  StorageConfigSchema,
  TENANT_STATUSES,
  TenantMetaSchema,
  WvpConfigSchema,
  keyOf,
  type TenantStatus,
} from './model.js';
import { HOSTNAME, schemaErrors } from './parse.js';
import type { TenantEntry } from './snapshot.js';

// Key segments: no slash (it would change the key's shape), nothing invisible.
const KEY_SEGMENT = /^[A-Za-z0-9][A-Za-z0-9_.@-]{0,127}$/;
// The code doubles as the first DNS label in `host`/`code` resolution.
const TENANT_CODE = /^[A-Za-z0-9][A-Za-z0-9_-]{0,62}$/;
// Kubernetes names: a namespace is a DNS-1123 label, a SandboxPool a DNS-1123 subdomain.
const K8S_NAMESPACE = /^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/;
const K8S_OBJECT_NAME = /^(?=.{1,253}$)[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;

const filled = Type.String({ pattern: '\\S', errorMessage: 'must not be empty' });
const text = () => Type.Optional(Type.String());
const count = () => Type.Integer({ minimum: 0 });
const hostname = Type.String({ pattern: HOSTNAME.source, errorMessage: '{value} is not a hostname' });
const literals = <T extends string>(values: readonly T[]) => Type.Union(values.map((v) => Type.Literal(v)));
const strict = <T extends Record<string, TSchema>>(properties: T) =>
  Type.Object(properties, { additionalProperties: false });

const DatabaseSettingsSchema = strict({
  driver: filled,
  host: filled,
  port: Type.Integer({ minimum: 1, maximum: 65535 }),
  database: filled,
  username: text(),
  password: text(),
  sslMode: text(),
  maxOpenConns: Type.Optional(count()),
  maxIdleConns: Type.Optional(count()),
  passwordEncrypted: Type.Optional(Type.Boolean()),
});

const FtpSettingsSchema = strict({
  username: Type.String({ pattern: KEY_SEGMENT.source }),
  passwordHash: text(),
  description: text(),
  status: Type.Optional(literals(['active', 'inactive'] as const)),
  homeDirectory: text(),
  writePermission: Type.Optional(Type.Boolean()),
});

/**
 * What the tenant may do on the sandbox fast path. Each field left out means no limit; a list,
 * when given, must name at least one (an empty list would read as "any", the opposite of what
 * it looks like).
 */
const SandboxSettingsSchema = strict({
  /**
   * The tenant's API keys for the sandbox fast path, stored hashed (SHA-256, hex): with any, a
   * call is served only with one of them (`Authorization: Bearer <key>`). Several at once let a
   * key be rotated without downtime: add the new one, move the callers, remove the old one.
   */
  apiKeys: Type.Optional(
    Type.Array(
      strict({
        id: Type.String({ pattern: KEY_SEGMENT.source, errorMessage: '{value} is not a key name' }),
        sha256: Type.String({ pattern: '^[0-9a-f]{64}$', errorMessage: 'must be a SHA-256 in hex (64 digits)' }),
      }),
    ),
  ),
  /**
   * Client certificates that authenticate as the tenant (on a fast path serving TLS with a client
   * CA): a verified certificate whose subject CN or a DNS or URI subject alternative name is one
   * of these. Like a key, it authenticates; the tenant is still identified by the resolver.
   */
  clientCertificateNames: Type.Optional(
    Type.Array(
      Type.String({ minLength: 1, maxLength: 255, pattern: '^\\S+$', errorMessage: 'must be a name without spaces' }),
    ),
  ),
  maxSandboxes: Type.Optional(count()),
  namespaces: Type.Optional(
    Type.Array(Type.String({ pattern: K8S_NAMESPACE.source, errorMessage: '{value} is not a namespace name' })),
  ),
  pools: Type.Optional(
    Type.Array(Type.String({ pattern: K8S_OBJECT_NAME.source, errorMessage: '{value} is not a SandboxPool name' })),
  ),
});

export const TenantDocumentSchema = strict({
  id: Type.Integer({ minimum: 1 }),
  code: Type.String({ pattern: TENANT_CODE.source }),
  name: filled,
  status: literals(TENANT_STATUSES),
  billingPlan: text(),
  /** Service code → database. */
  databases: Type.Optional(Type.Record(Type.String(), DatabaseSettingsSchema)),
  ftp: Type.Optional(Type.Array(FtpSettingsSchema)),
  storage: Type.Optional(strict({ quotaBytes: count(), maxFileSizeBytes: count(), maxConcurrentUploads: count() })),
  wvp: Type.Optional(
    strict({
      apiUrl: Type.String({ pattern: '^https?://[^\\s/]+', errorMessage: 'expected an http(s) URL' }),
      realm: filled,
    }),
  ),
  domain: Type.Optional(
    strict({
      primary: Type.Optional(Type.Union([Type.Literal(''), hostname], { errorMessage: '{value} is not a hostname' })),
      internal: Type.Optional(Type.Union([Type.Literal(''), hostname], { errorMessage: '{value} is not a hostname' })),
      aliases: Type.Optional(Type.Array(hostname)),
    }),
  ),
  sandbox: Type.Optional(SandboxSettingsSchema),
});

export type TenantDocument = Static<typeof TenantDocumentSchema>;
export type DatabaseSettings = Static<typeof DatabaseSettingsSchema>;
export type FtpSettings = Static<typeof FtpSettingsSchema>;
export type SandboxSettings = Static<typeof SandboxSettingsSchema>;

export type Validated<T> = { ok: true; value: T } | { ok: false; errors: string[] };

/** Every problem with its path (`tenant.databases.svc.port: must be <= 65535`), so an operator fixes a document in one go. */
export function validateTenantDocument(input: unknown): Validated<TenantDocument> {
  const errors = schemaErrors(TenantDocumentSchema, input, 'tenant');
  // What the schema cannot say: service codes are key segments, FTP usernames are unique.
  const { databases, ftp } = (input ?? {}) as { databases?: unknown; ftp?: unknown };
  for (const serviceCode of Object.keys(typeof databases === 'object' ? (databases ?? {}) : {})) {
    if (!KEY_SEGMENT.test(serviceCode))
      errors.push(`tenant.databases.${serviceCode}: service code must match ${KEY_SEGMENT}`);
  }
  const { sandbox } = (input ?? {}) as {
    sandbox?: { namespaces?: unknown; pools?: unknown; apiKeys?: unknown; clientCertificateNames?: unknown } | null;
  };
  const keyIds = Array.isArray(sandbox?.apiKeys) ? (sandbox.apiKeys as { id?: unknown }[]).map((k) => k?.id) : [];
  const dupKey = keyIds.find((v, i) => v !== undefined && keyIds.indexOf(v) !== i);
  if (dupKey !== undefined) errors.push(`tenant.sandbox.apiKeys: duplicate id ${JSON.stringify(dupKey)}`);
  for (const field of ['namespaces', 'pools', 'clientCertificateNames'] as const) {
    const list = sandbox?.[field];
    if (!Array.isArray(list)) continue;
    if (list.length === 0) errors.push(`tenant.sandbox.${field}: must name at least one (leave it out to allow any)`);
    const dup = list.find((v, i) => list.indexOf(v) !== i);
    if (dup !== undefined) errors.push(`tenant.sandbox.${field}: duplicate ${JSON.stringify(dup)}`);
  }
  const seen = new Set<string>();
  (Array.isArray(ftp) ? (ftp as Array<{ username?: unknown } | null>) : []).forEach((account, i) => {
    const username = account?.username;
    if (typeof username !== 'string') return;
    if (seen.has(username)) errors.push(`tenant.ftp[${i}].username: duplicate ${JSON.stringify(username)}`);
    seen.add(username);
  });
  return errors.length ? { ok: false, errors } : { ok: true, value: input as TenantDocument };
}

/** A stored value: the schema's fields in its order, missing ones at their zero value. */
function encode(schema: TObject, value: object): string {
  return JSON.stringify(Value.Default(schema, { ...value }), [...propertyNames(schema)]);
}

/** Every property name of the schema, nested objects' too (JSON.stringify's allow-list applies at every level). */
function propertyNames(schema: TSchema, out = new Set<string>()): Set<string> {
  const s = schema as { properties?: Record<string, TSchema>; items?: TSchema };
  for (const [name, sub] of Object.entries(s.properties ?? {})) {
    out.add(name);
    propertyNames(sub, out);
  }
  if (s.items) propertyNames(s.items, out);
  return out;
}

// The stored shapes the original tenant-service writes for storage and WVP.
const StoredStorageSchema = Type.Omit(StorageConfigSchema, ['code', 'name']);
const StoredWvpSchema = Type.Omit(WvpConfigSchema, ['tenantId']);

/** The keys (relative to the prefix) and values that publish `doc`: exactly what readers parse. */
export function documentEntries(doc: TenantDocument): Array<[string, string]> {
  const tenantId = doc.id;
  const out: Array<[string, string]> = [[keyOf({ kind: 'meta', tenantId }), encode(TenantMetaSchema, doc)]];
  for (const [serviceCode, db] of Object.entries(doc.databases ?? {}))
    out.push([
      keyOf({ kind: 'database', tenantId, serviceCode }),
      encode(DatabaseConfigSchema, { ...db, tenantId, serviceCode }),
    ]);
  for (const ftp of doc.ftp ?? [])
    out.push([
      keyOf({ kind: 'ftp', tenantId, username: ftp.username }),
      encode(FtpConfigSchema, { status: 'active', ...ftp, tenantId }),
    ]);
  if (doc.storage)
    out.push([keyOf({ kind: 'storage', tenantId }), encode(StoredStorageSchema, { ...doc.storage, tenantId })]);
  if (doc.wvp) out.push([keyOf({ kind: 'wvp', tenantId }), encode(StoredWvpSchema, doc.wvp)]);
  if (doc.sandbox) out.push([keyOf({ kind: 'sandbox', tenantId }), encode(SandboxConfigSchema, doc.sandbox)]);
  // Plain strings, as the original tenant-service writes them; readers also accept JSON strings.
  for (const part of ['primary', 'internal'] as const) {
    const name = doc.domain?.[part];
    if (name) out.push([keyOf({ kind: 'domain', tenantId, part }), name]);
  }
  if (doc.domain?.aliases?.length)
    out.push([keyOf({ kind: 'domain', tenantId, part: 'aliases' }), JSON.stringify(doc.domain.aliases)]);
  return out;
}

/** What readers make of a tenant's keys, as a document. Meta fields are absent without a meta key. */
export type TenantView = Partial<TenantDocument> & { id: number };

export function documentFromEntry(entry: TenantEntry): TenantView {
  const view: TenantView = { id: entry.id };
  if (entry.meta) {
    const { code, name, status, billingPlan } = entry.meta;
    Object.assign(view, { code, name, status: status as TenantStatus, billingPlan });
  }
  if (entry.databases.size) {
    view.databases = {};
    for (const [serviceCode, { tenantId: _t, serviceCode: _s, ...settings }] of entry.databases)
      view.databases[serviceCode] = settings;
  }
  if (entry.ftp.size) {
    view.ftp = [...entry.ftp.values()].map(({ tenantId: _t, ...ftp }) => ({
      ...ftp,
      status: ftp.status as 'active' | 'inactive',
    }));
  }
  if (entry.storage) {
    const { quotaBytes, maxFileSizeBytes, maxConcurrentUploads } = entry.storage;
    view.storage = { quotaBytes, maxFileSizeBytes, maxConcurrentUploads };
  }
  if (entry.wvp) view.wvp = { apiUrl: entry.wvp.apiUrl, realm: entry.wvp.realm };
  if (entry.sandbox) {
    const { maxSandboxes, namespaces, pools, apiKeys, clientCertificateNames } = entry.sandbox;
    view.sandbox = {
      ...(apiKeys && { apiKeys: apiKeys.map((k) => ({ id: k.id, sha256: k.sha256 })) }),
      ...(clientCertificateNames && { clientCertificateNames: [...clientCertificateNames] }),
      ...(maxSandboxes !== undefined && { maxSandboxes }),
      ...(namespaces && { namespaces: [...namespaces] }),
      ...(pools && { pools: [...pools] }),
    };
  }
  if (entry.domain) {
    const { primary, internal, aliases } = entry.domain;
    view.domain = {
      ...(primary && { primary }),
      ...(internal && { internal }),
      ...(aliases.length && { aliases: [...aliases] }),
    };
  }
  return view;
}
