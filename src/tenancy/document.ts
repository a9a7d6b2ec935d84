/**
 * A tenant as one document (what an operator writes, what `tenants get` prints) and its mapping
 * to the exact keys readers parse. Pure; the publisher does the etcd side.
 *
 * Validation here is stricter than the reader's parsing: readers accept whatever existing
 * publishers wrote, but nothing new that would be skipped or unusable gets published.
 */
import { keyOf } from './keys.js';
import { TENANT_STATUSES, type TenantStatus } from './model.js';
import { isHostname } from './parse.js';
import type { TenantEntry } from './snapshot.js';

export interface DatabaseSettings {
  driver: string;
  host: string;
  port: number;
  database: string;
  username?: string;
  password?: string;
  sslMode?: string;
  maxOpenConns?: number;
  maxIdleConns?: number;
  passwordEncrypted?: boolean;
}

export interface FtpSettings {
  username: string;
  passwordHash?: string;
  description?: string;
  status?: 'active' | 'inactive';
  homeDirectory?: string;
  writePermission?: boolean;
}

export interface StorageSettings {
  quotaBytes: number;
  maxFileSizeBytes: number;
  maxConcurrentUploads: number;
}

export interface WvpSettings {
  apiUrl: string;
  realm: string;
}

export interface DomainSettings {
  primary?: string;
  internal?: string;
  aliases?: string[];
}

export interface TenantDocument {
  id: number;
  code: string;
  name: string;
  status: TenantStatus;
  billingPlan?: string;
  /** Service code → database. */
  databases?: Record<string, DatabaseSettings>;
  ftp?: FtpSettings[];
  storage?: StorageSettings;
  wvp?: WvpSettings;
  domain?: DomainSettings;
}

export type Validated<T> = { ok: true; value: T } | { ok: false; errors: string[] };

// Key segments: no slash (it would change the key's shape), nothing invisible.
const KEY_SEGMENT = /^[A-Za-z0-9][A-Za-z0-9_.@-]{0,127}$/;
// The code doubles as the first DNS label in `host`/`code` resolution.
const TENANT_CODE = /^[A-Za-z0-9][A-Za-z0-9_-]{0,62}$/;

type Json = Record<string, unknown>;

/** Collects every problem with its path, so an operator fixes a document in one go. */
class Checker {
  readonly errors: string[] = [];

  /** An object with only the `allowed` fields (every field when `allowed` is undefined). */
  object(value: unknown, path: string, allowed?: readonly string[]): Json | undefined {
    if (value === null || typeof value !== 'object' || Array.isArray(value)) {
      this.errors.push(`${path}: expected an object`);
      return undefined;
    }
    if (allowed === undefined) return value as Json;
    for (const field of Object.keys(value)) {
      if (!allowed.includes(field))
        this.errors.push(`${path}.${field}: unknown field (allowed: ${allowed.join(', ')})`);
    }
    return value as Json;
  }

  string(
    o: Json,
    field: string,
    path: string,
    opts: { required?: boolean; pattern?: RegExp; oneOf?: readonly string[] } = {},
  ): string | undefined {
    const v = o[field];
    if (v === undefined) {
      if (opts.required) this.errors.push(`${path}.${field}: required`);
      return undefined;
    }
    if (typeof v !== 'string') {
      this.errors.push(`${path}.${field}: expected a string`);
      return undefined;
    }
    if (opts.required && v.trim() === '') this.errors.push(`${path}.${field}: must not be empty`);
    else if (opts.pattern && !opts.pattern.test(v))
      this.errors.push(`${path}.${field}: ${JSON.stringify(v)} has an invalid format`);
    else if (opts.oneOf && !opts.oneOf.includes(v))
      this.errors.push(`${path}.${field}: must be one of ${opts.oneOf.join(', ')}`);
    return v;
  }

  int(
    o: Json,
    field: string,
    path: string,
    opts: { required?: boolean; min?: number; max?: number } = {},
  ): number | undefined {
    const v = o[field];
    if (v === undefined) {
      if (opts.required) this.errors.push(`${path}.${field}: required`);
      return undefined;
    }
    if (typeof v !== 'number' || !Number.isSafeInteger(v)) {
      this.errors.push(`${path}.${field}: expected an integer`);
      return undefined;
    }
    if (opts.min !== undefined && v < opts.min) this.errors.push(`${path}.${field}: must be >= ${opts.min}`);
    if (opts.max !== undefined && v > opts.max) this.errors.push(`${path}.${field}: must be <= ${opts.max}`);
    return v;
  }

  bool(o: Json, field: string, path: string): void {
    if (o[field] !== undefined && typeof o[field] !== 'boolean')
      this.errors.push(`${path}.${field}: expected a boolean`);
  }

  hostname(value: unknown, path: string): void {
    if (typeof value !== 'string' || !isHostname(value))
      this.errors.push(`${path}: ${JSON.stringify(value)} is not a hostname`);
  }
}

const ROOT_FIELDS = ['id', 'code', 'name', 'status', 'billingPlan', 'databases', 'ftp', 'storage', 'wvp', 'domain'];
const DATABASE_FIELDS = [
  'driver',
  'host',
  'port',
  'database',
  'username',
  'password',
  'sslMode',
  'maxOpenConns',
  'maxIdleConns',
  'passwordEncrypted',
];
const FTP_FIELDS = ['username', 'passwordHash', 'description', 'status', 'homeDirectory', 'writePermission'];
const STORAGE_FIELDS = ['quotaBytes', 'maxFileSizeBytes', 'maxConcurrentUploads'];

export function validateTenantDocument(input: unknown): Validated<TenantDocument> {
  const c = new Checker();
  const root = c.object(input, 'tenant', ROOT_FIELDS);
  if (root === undefined) return { ok: false, errors: c.errors };
  c.int(root, 'id', 'tenant', { required: true, min: 1 });
  c.string(root, 'code', 'tenant', { required: true, pattern: TENANT_CODE });
  c.string(root, 'name', 'tenant', { required: true });
  c.string(root, 'status', 'tenant', { required: true, oneOf: TENANT_STATUSES });
  c.string(root, 'billingPlan', 'tenant');

  if (root.databases !== undefined) {
    const dbs = c.object(root.databases, 'tenant.databases');
    for (const [serviceCode, settings] of Object.entries(dbs ?? {})) {
      const path = `tenant.databases.${serviceCode}`;
      if (!KEY_SEGMENT.test(serviceCode)) c.errors.push(`${path}: service code must match ${KEY_SEGMENT}`);
      const db = c.object(settings, path, DATABASE_FIELDS);
      if (db === undefined) continue;
      c.string(db, 'driver', path, { required: true });
      c.string(db, 'host', path, { required: true });
      c.int(db, 'port', path, { required: true, min: 1, max: 65535 });
      c.string(db, 'database', path, { required: true });
      for (const f of ['username', 'password', 'sslMode']) c.string(db, f, path);
      c.int(db, 'maxOpenConns', path, { min: 0 });
      c.int(db, 'maxIdleConns', path, { min: 0 });
      c.bool(db, 'passwordEncrypted', path);
    }
  }

  if (root.ftp !== undefined) {
    if (!Array.isArray(root.ftp)) c.errors.push('tenant.ftp: expected an array');
    else {
      const seen = new Set<string>();
      root.ftp.forEach((item: unknown, i: number) => {
        const path = `tenant.ftp[${i}]`;
        const ftp = c.object(item, path, FTP_FIELDS);
        if (ftp === undefined) return;
        const username = c.string(ftp, 'username', path, { required: true, pattern: KEY_SEGMENT });
        if (username !== undefined && seen.has(username))
          c.errors.push(`${path}.username: duplicate ${JSON.stringify(username)}`);
        if (username !== undefined) seen.add(username);
        for (const f of ['passwordHash', 'description', 'homeDirectory']) c.string(ftp, f, path);
        c.string(ftp, 'status', path, { oneOf: ['active', 'inactive'] });
        c.bool(ftp, 'writePermission', path);
      });
    }
  }

  if (root.storage !== undefined) {
    const storage = c.object(root.storage, 'tenant.storage', STORAGE_FIELDS);
    if (storage) for (const f of STORAGE_FIELDS) c.int(storage, f, 'tenant.storage', { required: true, min: 0 });
  }

  if (root.wvp !== undefined) {
    const wvp = c.object(root.wvp, 'tenant.wvp', ['apiUrl', 'realm']);
    if (wvp) {
      const apiUrl = c.string(wvp, 'apiUrl', 'tenant.wvp', { required: true });
      if (apiUrl && !/^https?:\/\/[^\s/]+/.test(apiUrl)) c.errors.push('tenant.wvp.apiUrl: expected an http(s) URL');
      c.string(wvp, 'realm', 'tenant.wvp', { required: true });
    }
  }

  if (root.domain !== undefined) {
    const domain = c.object(root.domain, 'tenant.domain', ['primary', 'internal', 'aliases']);
    if (domain) {
      for (const part of ['primary', 'internal'] as const) {
        if (domain[part] !== undefined && domain[part] !== '') c.hostname(domain[part], `tenant.domain.${part}`);
      }
      if (domain.aliases !== undefined) {
        if (!Array.isArray(domain.aliases)) c.errors.push('tenant.domain.aliases: expected an array');
        else domain.aliases.forEach((alias: unknown, i: number) => c.hostname(alias, `tenant.domain.aliases[${i}]`));
      }
    }
  }

  return c.errors.length ? { ok: false, errors: c.errors } : { ok: true, value: input as TenantDocument };
}

/** The keys (relative to the prefix) and values that publish `doc`: exactly what readers parse. */
export function documentEntries(doc: TenantDocument): Array<[string, string]> {
  const tenantId = doc.id;
  const out: Array<[string, string]> = [];
  out.push([
    keyOf({ kind: 'meta', tenantId }),
    JSON.stringify({
      id: tenantId,
      code: doc.code,
      name: doc.name,
      status: doc.status,
      billingPlan: doc.billingPlan ?? '',
    }),
  ]);
  for (const [serviceCode, db] of Object.entries(doc.databases ?? {})) {
    out.push([
      keyOf({ kind: 'database', tenantId, serviceCode }),
      JSON.stringify({
        tenantId,
        serviceCode,
        driver: db.driver,
        host: db.host,
        port: db.port,
        database: db.database,
        username: db.username ?? '',
        password: db.password ?? '',
        sslMode: db.sslMode ?? '',
        maxOpenConns: db.maxOpenConns ?? 0,
        maxIdleConns: db.maxIdleConns ?? 0,
        passwordEncrypted: db.passwordEncrypted ?? false,
      }),
    ]);
  }
  for (const ftp of doc.ftp ?? []) {
    out.push([
      keyOf({ kind: 'ftp', tenantId, username: ftp.username }),
      JSON.stringify({
        tenantId,
        username: ftp.username,
        passwordHash: ftp.passwordHash ?? '',
        description: ftp.description ?? '',
        status: ftp.status ?? 'active',
        homeDirectory: ftp.homeDirectory ?? '',
        writePermission: ftp.writePermission ?? false,
      }),
    ]);
  }
  if (doc.storage) {
    const { quotaBytes, maxFileSizeBytes, maxConcurrentUploads } = doc.storage;
    out.push([
      keyOf({ kind: 'storage', tenantId }),
      JSON.stringify({ tenantId, quotaBytes, maxFileSizeBytes, maxConcurrentUploads }),
    ]);
  }
  if (doc.wvp)
    out.push([keyOf({ kind: 'wvp', tenantId }), JSON.stringify({ apiUrl: doc.wvp.apiUrl, realm: doc.wvp.realm })]);
  // Plain strings, as the original tenant-service writes them; readers also accept JSON strings.
  if (doc.domain?.primary) out.push([keyOf({ kind: 'domain', tenantId, part: 'primary' }), doc.domain.primary]);
  if (doc.domain?.internal) out.push([keyOf({ kind: 'domain', tenantId, part: 'internal' }), doc.domain.internal]);
  if (doc.domain?.aliases?.length)
    out.push([keyOf({ kind: 'domain', tenantId, part: 'aliases' }), JSON.stringify(doc.domain.aliases)]);
  return out;
}

/** What readers make of a tenant's keys, as a document. Meta fields are absent without a meta key. */
export type TenantView = Partial<TenantDocument> & { id: number };

export function documentFromEntry(entry: TenantEntry): TenantView {
  const view: TenantView = { id: entry.id };
  if (entry.meta) {
    view.code = entry.meta.code;
    view.name = entry.meta.name;
    view.status = entry.meta.status as TenantStatus;
    view.billingPlan = entry.meta.billingPlan;
  }
  if (entry.databases.size) {
    view.databases = {};
    for (const [serviceCode, db] of entry.databases) {
      const { tenantId: _t, serviceCode: _s, ...settings } = db;
      view.databases[serviceCode] = settings;
    }
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
  if (entry.domain) {
    view.domain = {};
    if (entry.domain.primary) view.domain.primary = entry.domain.primary;
    if (entry.domain.internal) view.domain.internal = entry.domain.internal;
    if (entry.domain.aliases.length) view.domain.aliases = [...entry.domain.aliases];
  }
  return view;
}
