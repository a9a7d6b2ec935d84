/**
 * The one source of the fast path's messages: src/api/proto/fastpath/v1/fastpath.proto, loaded
 * once for gRPC (proto-loader: camelCase fields, enums as names, int64 as numbers, defaults) and
 * for the HTTP face's JSON checks (protobufjs reflection of the same file).
 */
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import * as protoLoader from '@grpc/proto-loader';
import protobuf from 'protobufjs';

/** The .proto next to the sources, or copied next to the compiled code (`npm run build`). */
export function fastpathProtoPath(): string {
  const candidates = ['../api/proto/fastpath/v1/fastpath.proto', '../../src/api/proto/fastpath/v1/fastpath.proto'];
  for (const c of candidates) {
    const p = fileURLToPath(new URL(c, import.meta.url));
    if (existsSync(p)) return p;
  }
  throw new Error('fastpath.proto not found next to the code (src/api/proto/fastpath/v1/fastpath.proto)');
}

/** How messages look in JS: the generated types in ./gen (`npm run protos`) are rendered with these. */
export const LOADER_OPTIONS: protoLoader.Options = {
  keepCase: false,
  longs: Number,
  enums: String,
  defaults: true,
  arrays: true,
  objects: true,
  oneofs: true,
};

export function loadFastpathDefinition(): protoLoader.PackageDefinition {
  return protoLoader.loadSync(fastpathProtoPath(), LOADER_OPTIONS);
}

/** The added streaming service (sandbox_io.proto, next to fastpath.proto): logs and exec. */
export function loadSandboxIoDefinition(): protoLoader.PackageDefinition {
  return protoLoader.loadSync(fastpathProtoPath().replace(/fastpath\.proto$/, 'sandbox_io.proto'), {
    ...LOADER_OPTIONS,
    longs: Number,
  });
}

let root: protobuf.Root | undefined;
export function fastpathRoot(): protobuf.Root {
  // keepCase: field names as the .proto spells them, so errors name `exposed_ports`, not `exposedPorts`.
  return (root ??= new protobuf.Root().loadSync(fastpathProtoPath(), { keepCase: true }));
}

/**
 * Checks a JSON body against a message of the .proto (proto3 JSON: camelCase or original names,
 * enums by name or number, int64 as number or decimal string) and returns it in proto-loader's
 * shape, or the first thing wrong with it.
 */
export function decodeJson(
  messageName: string,
  body: unknown,
): { ok: true; value: Record<string, unknown> } | { ok: false; message: string } {
  const type = fastpathRoot().lookupType(`fastpath.v1.${messageName}`);
  if (typeof body !== 'object' || body === null || Array.isArray(body))
    return { ok: false, message: `body must be a JSON object (${messageName})` };
  const byJsonName = new Map<string, protobuf.Field>();
  for (const f of type.fieldsArray) {
    byJsonName.set(f.name, f);
    byJsonName.set(
      f.name.replace(/_([a-z])/g, (_, c: string) => c.toUpperCase()),
      f,
    );
  }
  const wrong = (f: protobuf.Field, what: string) => ({ ok: false as const, message: `${f.name}: ${what}` });
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(body)) {
    const f = byJsonName.get(key);
    if (!f) return { ok: false, message: `unknown field ${JSON.stringify(key)} in ${messageName}` };
    f.resolve();
    const check = (v: unknown): string | undefined => {
      if (f.resolvedType instanceof protobuf.Enum) {
        if (typeof v === 'string' && v in f.resolvedType.values) return undefined;
        if (typeof v === 'number' && Object.values(f.resolvedType.values).includes(v)) return undefined;
        return `must be one of ${Object.keys(f.resolvedType.values).join(', ')}`;
      }
      switch (f.type) {
        case 'string':
          return typeof v === 'string' ? undefined : 'must be a string';
        case 'bool':
          return typeof v === 'boolean' ? undefined : 'must be true or false';
        case 'int32':
        case 'int64':
          return (typeof v === 'number' && Number.isInteger(v)) ||
            (f.type === 'int64' && typeof v === 'string' && /^-?\d+$/.test(v))
            ? undefined
            : 'must be an integer';
        default:
          return undefined;
      }
    };
    if (f instanceof protobuf.MapField) {
      if (typeof value !== 'object' || value === null || Array.isArray(value))
        return wrong(f, 'must be an object of strings');
      for (const [k, v] of Object.entries(value)) if (typeof v !== 'string') return wrong(f, `${k} must be a string`);
    } else if (f.repeated) {
      if (!Array.isArray(value)) return wrong(f, 'must be an array');
      for (const v of value) {
        const e = check(v);
        if (e) return wrong(f, `${JSON.stringify(v)} ${e}`);
      }
    } else {
      const e = check(value);
      if (e) return wrong(f, e);
    }
    const camel = f.name.replace(/_([a-z])/g, (_, c: string) => c.toUpperCase());
    let v: unknown = value;
    if (f.resolvedType instanceof protobuf.Enum && typeof value === 'number') v = f.resolvedType.valuesById[value];
    if (f.type === 'int64' && typeof value === 'string') v = Number(value);
    // Two members of one oneof (JSON allows it, protobuf does not): refused, not the last one kept.
    if (f.partOf && out[f.partOf.name] !== undefined && out[f.partOf.name] !== camel)
      return {
        ok: false,
        message: `${f.name} and ${String(out[f.partOf.name]).replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`)} are alternatives (${f.partOf.name}): set only one`,
      };
    out[camel] = v;
    if (f.partOf) out[f.partOf.name] = camel;
  }
  return { ok: true, value: out };
}
