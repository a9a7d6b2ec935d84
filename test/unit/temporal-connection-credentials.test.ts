/**
 * What a role's connections present to the Temporal frontend, from the TEMPORAL_* variables:
 * the client (grpc-js) and the worker's NativeConnection (Rust core) both send the API key as
 * `authorization: Bearer …` and the profile's gRPC headers, over TLS verified with the given CA
 * and server name. A frontend that refuses the key fails the connect with a message that names
 * the address and the credentials in use, never the key itself. (mTLS through a real proxy in
 * front of the real server: test/integration/temporal-tls.test.ts.)
 */
import * as grpc from '@grpc/grpc-js';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { loadTemporalConnection } from '../../src/config.js';
import { connectClient, connectWorker } from '../../src/temporal/connection.js';
import { createTestCa } from '../support/tls-certs.js';

const bytes = (b: Buffer) => b;
const GET_SYSTEM_INFO = {
  path: '/temporal.api.workflowservice.v1.WorkflowService/GetSystemInfo',
  requestStream: false,
  responseStream: false,
  requestSerialize: bytes,
  requestDeserialize: bytes,
  responseSerialize: bytes,
  responseDeserialize: bytes,
};
const KEY = 'tmprl-key-do-not-print';

let server: grpc.Server;
let env: Record<string, string>;
/** The headers of each GetSystemInfo call (both SDKs make one to connect). */
const seen: grpc.Metadata[] = [];

beforeAll(async () => {
  const ca = await createTestCa('frontend-ca');
  const serving = await ca.issue('frontend', { server: ['frontend.test'] });
  server = new grpc.Server();
  server.addService(
    { GetSystemInfo: GET_SYSTEM_INFO },
    {
      GetSystemInfo: (call: grpc.ServerUnaryCall<Buffer, Buffer>, cb: grpc.sendUnaryData<Buffer>) => {
        seen.push(call.metadata);
        if (call.metadata.get('authorization')[0] === `Bearer ${KEY}`) cb(null, Buffer.alloc(0));
        else cb({ code: grpc.status.UNAUTHENTICATED, details: 'invalid API key' });
      },
    },
  );
  const port = await new Promise<number>((resolve, reject) =>
    server.bindAsync(
      '127.0.0.1:0',
      grpc.ServerCredentials.createSsl(null, [
        { cert_chain: Buffer.from(serving.cert), private_key: Buffer.from(serving.key) },
      ]),
      (err, p) => (err ? reject(err) : resolve(p)),
    ),
  );
  env = {
    TEMPORAL_ADDRESS: `127.0.0.1:${port}`,
    TEMPORAL_TLS_SERVER_CA_CERT_DATA: ca.cert,
    // The certificate names frontend.test, not 127.0.0.1: only the server name makes it match.
    TEMPORAL_TLS_SERVER_NAME: 'frontend.test',
    TEMPORAL_GRPC_META_X_TENANT: 'platform',
  };
}, 20_000);

afterAll(() => server?.forceShutdown());

it('the client and the worker connection send the API key and gRPC headers over verified TLS', async () => {
  const cfg = loadTemporalConnection({}, { ...env, TEMPORAL_API_KEY: KEY });
  const client = await connectClient({ ...cfg, taskQueue: 'unused' });
  await client.connection.close();
  const worker = await connectWorker({ ...cfg, taskQueue: 'unused' });
  await worker.close();

  expect(seen.length).toBeGreaterThanOrEqual(2);
  for (const md of seen) {
    expect(md.get('authorization')).toEqual([`Bearer ${KEY}`]);
    expect(md.get('x-tenant')).toEqual(['platform']);
  }
});

it('a refused API key fails the connect, naming the address and credentials but not the key', async () => {
  const cfg = { ...loadTemporalConnection({}, { ...env, TEMPORAL_API_KEY: 'wrong-key' }), taskQueue: 'unused' };
  for (const connect of [connectClient, connectWorker]) {
    const err = (await connect(cfg).then(
      () => undefined,
      (e: unknown) => e,
    )) as Error;
    expect(err.message).toContain(`cannot connect to Temporal at ${env.TEMPORAL_ADDRESS}`);
    expect(err.message).toContain('TLS, server name frontend.test, server CA given, no client certificate, an API key');
    expect(err.message).toMatch(/invalid API key/);
    expect(err.message).not.toContain('wrong-key');
  }
});
