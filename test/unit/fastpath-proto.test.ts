/**
 * The compatibility contract of src/api/proto/fastpath/v1/fastpath.proto with the original
 * fast-sandbox `fastpath.v1` (fengcone/fast-sandbox, api/proto/v1/fastpath.proto): the service,
 * its methods, every message field's number, type and label, and the enums, as the original has
 * them. A renumbered, retyped or renamed field fails here; a new field must be added below with a
 * number the original does not use. The golden bytes check the wire format end to end.
 */
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import * as protoLoader from '@grpc/proto-loader';
import protobuf from 'protobufjs';
import { describe, expect, it } from 'vitest';
import { decodeJson } from '../../src/fastpath/proto.js';

const PROTO = path.resolve(
  path.dirname(fileURLToPath(import.meta.url)),
  '../../src/api/proto/fastpath/v1/fastpath.proto',
);
const definition = protoLoader.loadSync(PROTO, { keepCase: true });
const root = protobuf.loadSync(PROTO);

/** "<number> <label/kind> <type> <name>", as the original declares each field. */
const ORIGINAL_MESSAGES: Record<string, string[]> = {
  CreateRequest: [
    '1 string image',
    '2 string pool_ref',
    '3 repeated int32 exposed_ports',
    '4 repeated string command',
    '5 repeated string args',
    '6 string namespace',
    '7 ConsistencyMode consistency_mode',
    '8 string name',
    '9 map<string,string> envs',
    '10 string working_dir',
  ],
  CreateResponse: ['1 string sandbox_id', '2 string agent_pod', '3 repeated string endpoints', '4 string sandbox_name'],
  DeleteRequest: ['1 string sandbox_name', '2 string namespace'],
  DeleteResponse: ['1 bool success'],
  UpdateRequest: [
    '1 string sandbox_name',
    '2 string namespace',
    '3 oneof(update) int64 expire_time_seconds',
    '4 oneof(update) string reset_revision',
    '5 oneof(update) FailurePolicy failure_policy',
    '6 oneof(update) int32 recovery_timeout_seconds',
    '7 map<string,string> labels',
  ],
  UpdateResponse: ['1 bool success', '2 string message', '3 SandboxInfo sandbox'],
  ListRequest: ['1 string namespace'],
  ListResponse: ['1 repeated SandboxInfo items'],
  GetRequest: ['1 string sandbox_name', '2 string namespace'],
  SandboxInfo: [
    '1 string sandbox_id',
    '2 string phase',
    '3 string agent_pod',
    '4 repeated string endpoints',
    '5 int64 created_at',
    '6 string image',
    '7 string pool_ref',
    '8 string sandbox_name',
  ],
};

const ORIGINAL_ENUMS: Record<string, string[]> = {
  ConsistencyMode: ['FAST=0', 'STRONG=1'],
  FailurePolicy: ['MANUAL=0', 'AUTO_RECREATE=1'],
};

const ORIGINAL_METHODS = [
  'CreateSandbox(CreateRequest) returns (CreateResponse)',
  'DeleteSandbox(DeleteRequest) returns (DeleteResponse)',
  'UpdateSandbox(UpdateRequest) returns (UpdateResponse)',
  'ListSandboxes(ListRequest) returns (ListResponse)',
  'GetSandbox(GetRequest) returns (SandboxInfo)',
];

interface FieldDescriptor {
  name: string;
  number: number;
  label: string;
  type: string;
  typeName: string;
}
interface MessageDescriptor {
  name: string;
  field: FieldDescriptor[];
  nestedType: (MessageDescriptor & { options: { mapEntry?: boolean } | null })[];
}
interface EnumDescriptor {
  value: { name: string; number: number }[];
}

const scalar = (t: string) => t.replace(/^TYPE_/, '').toLowerCase();

/** The fields of a message as the proto-loader descriptor has them, in the notation above. */
function fieldsOf(messageName: string): string[] {
  const type = (definition[`fastpath.v1.${messageName}`] as unknown as { type: MessageDescriptor }).type;
  // proto-loader's descriptor does not say which fields belong to a oneof: protobufjs does.
  const reflected = root.lookupType(`fastpath.v1.${messageName}`);
  return type.field.map((f) => {
    const oneof = reflected.fieldsById[f.number]?.partOf?.name;
    const entry = type.nestedType.find((n) => n.name === f.typeName && n.options?.mapEntry);
    let kind: string;
    if (entry) {
      const typeOf = (n: string) => scalar(entry.field.find((x) => x.name === n)?.type ?? '?');
      kind = `map<${typeOf('key')},${typeOf('value')}>`;
    } else {
      const base = f.type === 'TYPE_MESSAGE' || f.type === 'TYPE_ENUM' ? f.typeName : scalar(f.type);
      kind = `${f.label === 'LABEL_REPEATED' ? 'repeated ' : ''}${base}`;
    }
    return `${f.number} ${oneof ? `oneof(${oneof}) ` : ''}${kind} ${f.name}`;
  });
}

describe('fastpath.v1 proto (wire compatibility with the original)', () => {
  it('declares exactly the original messages and enums in package fastpath.v1', () => {
    expect(Object.keys(definition).sort()).toEqual(
      [
        'fastpath.v1.FastPathService',
        ...Object.keys(ORIGINAL_MESSAGES).map((m) => `fastpath.v1.${m}`),
        ...Object.keys(ORIGINAL_ENUMS).map((e) => `fastpath.v1.${e}`),
      ].sort(),
    );
  });

  it('serves FastPathService with the five unary methods of the original', () => {
    const service = definition['fastpath.v1.FastPathService'] as protoLoader.ServiceDefinition;
    const methods = Object.entries(service).map(([name, m]) => {
      expect(m.path).toBe(`/fastpath.v1.FastPathService/${name}`);
      expect([m.requestStream, m.responseStream]).toEqual([false, false]);
      const req = (m.requestType as unknown as { type: { name: string } }).type.name;
      const res = (m.responseType as unknown as { type: { name: string } }).type.name;
      return `${name}(${req}) returns (${res})`;
    });
    expect(methods).toEqual(ORIGINAL_METHODS);
  });

  it.each(Object.entries(ORIGINAL_MESSAGES))('%s has the original field numbers and types', (name, fields) => {
    expect(fieldsOf(name)).toEqual(fields);
  });

  it.each(Object.entries(ORIGINAL_ENUMS))('enum %s has the original values', (name, values) => {
    const type = (definition[`fastpath.v1.${name}`] as unknown as { type: EnumDescriptor }).type;
    expect(type.value.map((v) => `${v.name}=${v.number}`)).toEqual(values);
  });

  it('encodes requests as the original does, byte for byte (grpc-js serializers)', () => {
    const service = definition['fastpath.v1.FastPathService'] as protoLoader.ServiceDefinition;
    const create = service.CreateSandbox!.requestSerialize({
      image: 'a',
      exposed_ports: [80],
      consistency_mode: 'STRONG',
      name: 'n',
      envs: { k: 'v' },
      working_dir: 'w',
    });
    // 1:"a"  3:packed[80]  7:1  8:"n"  9:{1:"k",2:"v"}  10:"w"
    expect(create.toString('hex')).toBe('0a0161' + '1a0150' + '3801' + '42016e' + '4a060a016b120176' + '520177');
    const update = service.UpdateSandbox!.requestSerialize({
      sandbox_name: 's',
      failure_policy: 'AUTO_RECREATE',
      labels: { a: 'b' },
    });
    // 1:"s"  5:1  7:{1:"a",2:"b"}
    expect(update.toString('hex')).toBe('0a0173' + '2801' + '3a060a0161120162');
    const info = service.GetSandbox!.responseDeserialize(Buffer.from('0a0169' + '2865' + '42016e', 'hex'));
    // 1:"i"  5:101  8:"n"
    expect(info).toMatchObject({ sandbox_id: 'i', sandbox_name: 'n' });
    expect(Number((info as { created_at: unknown }).created_at)).toBe(101);
  });
});

describe('fastpath.v1 sandbox_io.proto (the added service: fields keep their numbers)', () => {
  const io = new protobuf.Root().loadSync(PROTO.replace(/fastpath\.proto$/, 'sandbox_io.proto'), { keepCase: true });
  const fields = (name: string) =>
    io
      .lookupType(`fastpath.v1.${name}`)
      .fieldsArray.map((f) => `${f.id} ${f.repeated ? 'repeated ' : ''}${f.type} ${f.name}`);

  it('ExecRequest: the first three fields as released, stdin added as field 4 (bytes)', () => {
    expect(fields('ExecRequest')).toEqual([
      '1 string sandbox_name',
      '2 string namespace',
      '3 repeated string command',
      '4 bytes stdin',
    ]);
    const type = io.lookupType('fastpath.v1.ExecRequest');
    // 3:"cat"  4:bytes 00 ff
    expect(Buffer.from(type.encode({ command: ['cat'], stdin: Buffer.from([0, 255]) }).finish()).toString('hex')).toBe(
      '1a03636174' + '220200ff',
    );
  });
});

describe('JSON bodies (the HTTP face)', () => {
  it('take one member of a oneof, and refuse two rather than keep the last', () => {
    expect(decodeJson('UpdateRequest', { failurePolicy: 'MANUAL' })).toEqual({
      ok: true,
      value: { failurePolicy: 'MANUAL', update: 'failurePolicy' },
    });
    expect(decodeJson('UpdateRequest', { expire_time_seconds: '5', failurePolicy: 'MANUAL' })).toEqual({
      ok: false,
      message: 'failure_policy and expire_time_seconds are alternatives (update): set only one',
    });
  });
});
