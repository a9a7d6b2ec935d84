/**
 * Reading the values stored at each key. Pure: a value is either parsed or rejected with a
 * reason; the caller decides what a rejection means (skip the key and keep the last valid value,
 * log it, refuse to publish).
 *
 * Decoding follows the original's Go `encoding/json` semantics so what it accepts reads the same
 * here: object keys match fields case-insensitively, missing or null fields take their zero
 * value, unknown fields are ignored, a field of the wrong JSON type rejects the whole value (Go's
 * Unmarshal fails, and the original skips the key). Identity fields (tenant ID, service code, FTP
 * username) come from the key, which is authoritative.
 *
 * Where the original accepts a value but part of it means nothing (an alias that is not a
 * hostname, an unknown `httpType`), that part is skipped and reported, and the rest applies.
 */
import type { Static, TObject, TSchema } from '@sinclair/typebox';
import { TypeCompiler, type TypeCheck } from '@sinclair/typebox/compiler';
import { Value, ValueErrorType, type ValueError } from '@sinclair/typebox/value';
import {
  DatabaseConfigSchema,
  FtpConfigSchema,
  HTTP_RESOLVER_TYPES,
  ResolverConfigSchema,
  SandboxConfigSchema,
  StorageConfigSchema,
  TenantMetaSchema,
  WvpConfigSchema,
  type DomainPart,
  type ResolverConfig,
} from './model.js';

/** A part of a value skipped while the rest applies: `[2]` of an alias list, `httpType` of a resolver config. */
export interface SkippedItem {
  readonly item: string;
  readonly reason: string;
}

export type Parsed<T> =
  | { readonly ok: true; readonly value: T; readonly skipped?: readonly SkippedItem[] }
  | { readonly ok: false; readonly reason: string };

const fail = (reason: string) => ({ ok: false, reason }) as const;

function parseJson(raw: string): Parsed<unknown> {
  try {
    return { ok: true, value: JSON.parse(raw) as unknown };
  } catch (err) {
    return fail((err as Error).message);
  }
}

const isObject = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === 'object' && !Array.isArray(v);

/**
 * Every problem of `value` against `schema`, one per path, e.g. `tenant.ftp[1].status: must be
 * one of active, inactive`. A schema's `errorMessage` replaces the generic text; `{value}` in it
 * shows the value.
 */
export function schemaErrors(schema: TSchema, value: unknown, root = ''): string[] {
  const byPath = new Map<string, string>();
  for (const e of Value.Errors(schema, value)) if (!byPath.has(e.path)) byPath.set(e.path, describe(e));
  return [...byPath].map(([pointer, message]) => {
    const segments = pointer
      .split('/')
      .slice(1)
      .map((s) => s.replaceAll('~1', '/').replaceAll('~0', '~'));
    const path = root + segments.map((s) => (/^\d+$/.test(s) ? `[${s}]` : `.${s}`)).join('');
    return `${path.replace(/^\./, '')}: ${message}`;
  });
}

function describe(e: ValueError): string {
  const schema = e.schema as TSchema & { errorMessage?: string; anyOf?: Array<{ const?: unknown }> };
  const shown = JSON.stringify(e.value);
  if (e.type === ValueErrorType.ObjectRequiredProperty) return 'required';
  if (e.type === ValueErrorType.ObjectAdditionalProperties) return 'unknown field';
  if (schema.errorMessage) return schema.errorMessage.replace('{value}', shown);
  switch (e.type) {
    case ValueErrorType.IntegerMinimum:
      return `must be >= ${schema.minimum}`;
    case ValueErrorType.IntegerMaximum:
      return `must be <= ${schema.maximum}`;
    case ValueErrorType.StringPattern:
      return `${shown} has an invalid format`;
    case ValueErrorType.Union:
      return `must be one of ${schema.anyOf?.map((s) => s.const).join(', ')} (got ${shown})`;
    default: {
      const expected = `expected ${/^[aeiou]/.test(String(schema.type)) ? 'an' : 'a'} ${schema.type}`;
      // A whole object or array in the message would drown the point.
      return typeof e.value === 'object' && e.value !== null ? expected : `${expected}, got ${shown}`;
    }
  }
}

interface Field {
  readonly name: string;
  /** The allowed values of a choice field (a union of literals). */
  readonly choices?: ReadonlySet<unknown>;
}

interface Decoder {
  /** Fields by folded name. */
  readonly fields: ReadonlyMap<string, Field>;
  readonly defaults: Readonly<Record<string, unknown>>;
  readonly checker: TypeCheck<TObject>;
}

// Compiled once per schema: values are decoded by the ten thousand at every load.
const decoders = new WeakMap<TObject, Decoder>();

/** Go matches keys with Unicode simple case folding, under which `ſ` is an `s` (and the Kelvin sign a `k`, which toLowerCase does). */
const fold = (key: string) => key.toLowerCase().replaceAll('ſ', 's');

function decoderOf(schema: TObject): Decoder {
  let decoder = decoders.get(schema);
  if (decoder === undefined) {
    const fields = Object.entries(schema.properties as Record<string, TSchema>).map(([name, field]): Field => {
      const choices = (field.anyOf as Array<{ const: unknown }> | undefined)?.map((c) => c.const);
      return { name, ...(choices && { choices: new Set(choices) }) };
    });
    decoder = {
      fields: new Map(fields.map((f) => [fold(f.name), f])),
      defaults: Value.Default(schema, {}) as Record<string, unknown>,
      checker: TypeCompiler.Compile(schema),
    };
    decoders.set(schema, decoder);
  }
  return decoder;
}

/**
 * A JSON object read into `schema`'s fields as Go's encoding/json would: each key matching a
 * field case-insensitively assigns it, in document order (the last one wins); null assigns
 * nothing; absent fields keep the schema default. A choice field holding a string that is not
 * a choice is skipped (reported unless empty) and keeps its default. `fromKey` overrides what
 * the key decides. The result is frozen: readers share it.
 */
export function decodeObject<S extends TObject>(
  schema: S,
  input: unknown,
  fromKey: Partial<Static<S>> = {},
): Parsed<Readonly<Static<S>>> {
  if (!isObject(input)) return fail('expected a JSON object');
  const { fields, defaults, checker } = decoderOf(schema);
  const value: Record<string, unknown> = { ...defaults };
  const skipped: SkippedItem[] = [];
  for (const [key, v] of Object.entries(input)) {
    const field = fields.get(fold(key));
    if (field === undefined || v === null) continue;
    if (field.choices && typeof v === 'string' && !field.choices.has(v)) {
      const allowed = [...field.choices].filter(Boolean).join(', ');
      if (v !== '') skipped.push({ item: field.name, reason: `${JSON.stringify(v)} is not one of ${allowed}` });
      value[field.name] = defaults[field.name];
    } else value[field.name] = v;
  }
  Object.assign(value, fromKey);
  if (!checker.Check(value)) return fail(schemaErrors(schema, value)[0]!);
  return { ok: true, value: Object.freeze(value as Static<S>), ...(skipped.length && { skipped }) };
}

function decodeJson<S extends TObject>(schema: S, raw: string, fromKey: Partial<Static<S>>) {
  const json = parseJson(raw);
  return json.ok ? decodeObject(schema, json.value, fromKey) : json;
}

export const parseTenantMeta = (tenantId: number, raw: string) => decodeJson(TenantMetaSchema, raw, { id: tenantId });

export const parseDatabaseConfig = (tenantId: number, serviceCode: string, raw: string) =>
  decodeJson(DatabaseConfigSchema, raw, { tenantId, serviceCode });

export const parseFtpConfig = (tenantId: number, username: string, raw: string) =>
  decodeJson(FtpConfigSchema, raw, { tenantId, username });

/** `code` and `name` are filled from the tenant's meta when the snapshot is assembled. */
export const parseStorageConfig = (tenantId: number, raw: string) =>
  decodeJson(StorageConfigSchema, raw, { tenantId, code: '', name: '' });

/** Optional fields stay absent (no limit); a field of the wrong type or a negative maximum rejects the value. */
export const parseSandboxConfig = (_tenantId: number, raw: string) => decodeJson(SandboxConfigSchema, raw, {});

export function parseWvpConfig(tenantId: number, raw: string) {
  const parsed = decodeJson(WvpConfigSchema, raw, { tenantId });
  // The original skips a WVP config missing either field: a half config cannot be used.
  if (parsed.ok && (parsed.value.apiUrl === '' || parsed.value.realm === ''))
    return fail('apiUrl and realm are both required');
  return parsed;
}

// Hostnames as published (no scheme, port, path or wildcard); case is kept, lookups lowercase.
export const HOSTNAME = /^(?!.*\.\.)[A-Za-z0-9_](?:[A-Za-z0-9_.-]{0,251}[A-Za-z0-9_.])?$/;

export function isHostname(value: string): boolean {
  return HOSTNAME.test(value);
}

/**
 * `domain/primary` and `domain/internal` hold one hostname, written either plain (`app.example.com`)
 * or as a JSON string (`"app.example.com"`); empty means unset.
 */
export function parseDomainName(raw: string): Parsed<string> {
  let value = raw.trim();
  if (value.startsWith('"')) {
    const json = parseJson(value);
    if (!json.ok) return json;
    if (typeof json.value !== 'string') return fail('expected a hostname');
    value = json.value.trim();
  }
  if (value !== '' && !isHostname(value)) return fail(`not a hostname: ${JSON.stringify(value)}`);
  return { ok: true, value };
}

/**
 * `domain/aliases` holds a JSON array of hostnames. Each alias stands on its own: one that is
 * not a hostname is skipped and the others apply. Empty and null entries (Go reads null as an
 * empty string) are dropped.
 */
export function parseDomainAliases(raw: string): Parsed<readonly string[]> {
  const json = parseJson(raw);
  if (!json.ok) return json;
  if (!Array.isArray(json.value)) return fail('expected a JSON array of hostnames');
  const aliases: string[] = [];
  const skipped: SkippedItem[] = [];
  (json.value as unknown[]).forEach((entry, i) => {
    const alias = typeof entry === 'string' ? entry.trim() : entry;
    if (alias === '' || alias === null) return;
    if (typeof alias === 'string' && isHostname(alias)) aliases.push(alias);
    else skipped.push({ item: `[${i}]`, reason: `${JSON.stringify(alias)} is not a hostname` });
  });
  return { ok: true, value: Object.freeze(aliases), ...(skipped.length && { skipped }) };
}

export function parseDomainPart(part: DomainPart, raw: string): Parsed<string | readonly string[]> {
  return part === 'aliases' ? parseDomainAliases(raw) : parseDomainName(raw);
}

// RFC 9110 token: what a header field name may contain.
const HTTP_TOKEN = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;
const QUERY_PARAM = /^[^\s&=#?]+$/;

/**
 * A resolver config an operator publishes. Stricter than reading: every field must mean what it
 * says, and the config must let services resolve tenants (what the original would accept but
 * cannot use is refused here, not published).
 */
export function validateResolverConfig(input: unknown): Parsed<ResolverConfig> {
  const decoded = decodeObject(ResolverConfigSchema, input);
  if (!decoded.ok) return decoded;
  const [skipped] = decoded.skipped ?? [];
  if (skipped) return fail(`${skipped.item}: ${skipped.reason}`);
  const cfg = decoded.value;
  const httpHeaderName = cfg.httpHeaderName.trim();
  const httpQueryParam = cfg.httpQueryParam.trim();
  const problem = (
    [
      [cfg.httpType === '', `httpType: required, one of ${HTTP_RESOLVER_TYPES.join(', ')}`],
      [cfg.httpPathIndex < 0, `httpPathIndex: must be >= 0, got ${cfg.httpPathIndex}`],
      [cfg.httpType === 'header' && httpHeaderName === '', 'httpHeaderName: required when httpType is header'],
      [
        httpHeaderName !== '' && !HTTP_TOKEN.test(httpHeaderName),
        `httpHeaderName: ${JSON.stringify(httpHeaderName)} is not a valid header name`,
      ],
      [cfg.httpType === 'query' && httpQueryParam === '', 'httpQueryParam: required when httpType is query'],
      [
        httpQueryParam !== '' && !QUERY_PARAM.test(httpQueryParam),
        `httpQueryParam: ${JSON.stringify(httpQueryParam)} is not a valid query parameter name`,
      ],
    ] as const
  ).find(([broken]) => broken);
  if (problem) return fail(problem[1]);
  return { ok: true, value: Object.freeze({ ...cfg, httpHeaderName, httpQueryParam }) };
}

/**
 * `common/resolver` as readers take it: whatever the original accepts, with the original's
 * meaning. An empty or unknown `httpType` means HTTP requests carry no tenant (the original's
 * middleware answers 400; an FTP-only config), a missing header name or a negative path index
 * finds no identifier either; an unknown `httpType`, host mode or FTP type is reported.
 */
export function parseResolverConfig(raw: string): Parsed<ResolverConfig> {
  const json = parseJson(raw);
  return json.ok ? decodeObject(ResolverConfigSchema, json.value) : json;
}
