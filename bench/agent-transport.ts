/**
 * What mutual TLS adds to one fast path → agent call (issue 31): the same agent API (an
 * in-process agent, process runtime, no sandbox) called with AgentClient over plain HTTP and over
 * mutual TLS, one call at a time on a kept connection, interleaved rounds so load drifts hit
 * both; and, for reference, the client before mutual TLS (Node's fetch over plain HTTP). Calls: `status` (a small GET) and `delete` of an unknown ID (a small POST, the shape of a
 * create's request without the runtime's work).
 *
 * Usage: npx tsx bench/agent-transport.ts [calls=2000] [rounds=3]
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { ProcessRuntime } from '../src/agent/process-runtime.js';
import { startAgentServer } from '../src/agent/server.js';
import { AgentClient } from '../src/fastpath/agent-client.js';
import { AgentCredentials } from '../src/fastpath/agent-credentials.js';
import { AgentPki } from '../src/fastpath/agent-pki.js';
import { logger } from '../src/log.js';

const CALLS = Number(process.argv[2] ?? 2000);
const ROUNDS = Number(process.argv[3] ?? 3);
const KEY = 'bench-agent-key';
const pool = { namespace: 'bench', name: 'pool', uid: 'bench-uid' };
const quiet = logger.child({ bench: 'agent-transport' });
quiet.level = 'silent';

const pki = new AgentPki(KEY);
const token = new AgentCredentials(KEY).tokenOf(pool);
const dir = await mkdtemp(path.join(tmpdir(), 'agent-transport-'));
const m = await pki.agentTls(pool);
const files = {
  certFile: path.join(dir, 'tls.crt'),
  keyFile: path.join(dir, 'tls.key'),
  caFile: path.join(dir, 'ca.crt'),
};
await writeFile(files.certFile, m.cert);
await writeFile(files.keyFile, m.key);
await writeFile(files.caFile, m.ca);
const common = { token, host: '127.0.0.1', port: 0, capacity: 1, logger: quiet };
const tlsAgent = await startAgentServer({ ...common, agentId: 'tls', tls: files, runtime: new ProcessRuntime({}) });
const plainAgent = await startAgentServer({
  ...common,
  agentId: 'plain',
  insecurePlainHttp: true,
  runtime: new ProcessRuntime({}),
});
const tlsClient = new AgentClient({ token, pool }, { tls: (now) => pki.fastPathTls(now) });
const plainClient = new AgentClient({ token, pool }, { insecurePlainHttp: true });

/** The client before mutual TLS: Node's fetch, plain HTTP, the token in clear. */
const fetchStatus = async () => {
  const res = await fetch(`${plainAgent.url}/api/v1/agent/status`, { headers: { authorization: `Bearer ${token}` } });
  return res.json();
};
const p = (xs: number[], q: number) => xs.sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(q * xs.length))]!;
async function measure(call: () => Promise<unknown>): Promise<number[]> {
  await call(); // the connection (and for TLS the handshake) outside the figures
  const out: number[] = [];
  for (let i = 0; i < CALLS; i++) {
    const t = performance.now();
    await call();
    out.push(performance.now() - t);
  }
  return out;
}
const results: Record<string, number[]> = {};
const add = (k: string, xs: number[]) => (results[k] = [...(results[k] ?? []), ...xs]);
for (let r = 0; r < ROUNDS; r++) {
  add('status fetch', await measure(() => fetchStatus()));
  add('status plain', await measure(() => plainClient.status(plainAgent.url)));
  add('status mTLS', await measure(() => tlsClient.status(tlsAgent.url)));
  add('delete plain', await measure(() => plainClient.delete(plainAgent.url, 'unknown')));
  add('delete mTLS', await measure(() => tlsClient.delete(tlsAgent.url, 'unknown')));
}
// A new connection each time: what the first call to an agent (or after a renewal) pays.
const fresh: number[] = [];
for (let i = 0; i < 200; i++) {
  const c = new AgentClient({ token, pool }, { tls: (now) => pki.fastPathTls(now) });
  const t = performance.now();
  await c.status(tlsAgent.url);
  fresh.push(performance.now() - t);
  c.close();
}
for (const [k, xs] of Object.entries(results))
  console.log(
    `${k.padEnd(14)} p50 ${p(xs, 0.5).toFixed(3)} ms  p99 ${p(xs, 0.99).toFixed(3)} ms  (${xs.length} calls)`,
  );
console.log(`new mTLS connection + status  p50 ${p(fresh, 0.5).toFixed(2)} ms  p99 ${p(fresh, 0.99).toFixed(2)} ms`);
tlsClient.close();
plainClient.close();
await tlsAgent.close();
await plainAgent.close();
await rm(dir, { recursive: true, force: true });
