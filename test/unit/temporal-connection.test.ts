/**
 * Closing a client while a call is backing off between retries: the call settles with its error
 * and nothing throws outside it. (The SDK's retry timer used to start its call on the closed
 * channel: an uncaught "Channel has been shut down" and a call that never settled.)
 */
import * as grpc from '@grpc/grpc-js';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { connectClient } from '../../src/temporal/connection.js';

const SERVICE = '/temporal.api.workflowservice.v1.WorkflowService/';
const bytes = (b: Buffer) => b;
function method(name: string) {
  return {
    path: SERVICE + name,
    requestStream: false,
    responseStream: false,
    requestSerialize: bytes,
    requestDeserialize: bytes,
    responseSerialize: bytes,
    responseDeserialize: bytes,
  };
}

let server: grpc.Server;
let address: string;
let signalAttempts = 0;

beforeAll(async () => {
  // A frontend that is up (GetSystemInfo answers an empty message) but too busy for signals.
  server = new grpc.Server();
  server.addService(
    { GetSystemInfo: method('GetSystemInfo'), SignalWorkflowExecution: method('SignalWorkflowExecution') },
    {
      GetSystemInfo: (_call: unknown, cb: grpc.sendUnaryData<Buffer>) => cb(null, Buffer.alloc(0)),
      SignalWorkflowExecution: (_call: unknown, cb: grpc.sendUnaryData<Buffer>) => {
        signalAttempts++;
        cb({ code: grpc.status.UNAVAILABLE, details: 'busy' });
      },
    },
  );
  const port = await new Promise<number>((resolve, reject) =>
    server.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(), (err, p) =>
      err ? reject(err) : resolve(p),
    ),
  );
  address = `127.0.0.1:${port}`;
}, 20_000);

afterAll(() => server?.forceShutdown());

it('a call backing off when the client closes settles with its error; nothing is thrown outside it', async () => {
  const uncaught: unknown[] = [];
  const onUncaught = (err: unknown) => uncaught.push(err);
  process.on('uncaughtException', onUncaught);
  try {
    const client = await connectClient({ address, namespace: 'default', taskQueue: 'unused' } as never);
    const signal = client.workflow
      .getHandle('busy-workflow')
      .signal('hint')
      .then(
        () => 'sent',
        (err: Error) => `failed: ${err.message}`,
      );
    // The first attempt has failed and its retry is scheduled when the client closes.
    while (signalAttempts === 0) await new Promise((r) => setTimeout(r, 5));
    await client.connection.close();
    const outcome = await Promise.race([signal, new Promise((r) => setTimeout(() => r('never settled'), 10_000))]);
    expect(outcome).toMatch(/^failed: /);
    // Give any retry timer left behind the time to fire.
    await new Promise((r) => setTimeout(r, 1000));
    expect(uncaught).toEqual([]);
  } finally {
    process.off('uncaughtException', onUncaught);
  }
}, 20_000);
