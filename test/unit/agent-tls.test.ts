/**
 * The fast path ↔ agent channel over mutual TLS (issue 31): certificates derived from the fast
 * path's agent key (src/fastpath/agent-pki.ts), the identity checks on each side
 * (src/domain/agent-identity.ts), and a real agent server (src/agent/server.ts, no sandbox
 * started) called by the real client (src/fastpath/agent-client.ts) over loopback.
 */
import { X509Certificate } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import net from 'node:net';
import https from 'node:https';
import { tmpdir } from 'node:os';
import path from 'node:path';
import tls from 'node:tls';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ProcessRuntime } from '../../src/agent/process-runtime.js';
import { startAgentServer, type RunningAgent } from '../../src/agent/server.js';
import {
  FASTPATH_IDENTITY,
  agentIdentity,
  agentIdentityProblem,
  isFastPathCertificate,
  uriNames,
} from '../../src/domain/agent-identity.js';
import { AgentClient } from '../../src/fastpath/agent-client.js';
import { AgentCredentials } from '../../src/fastpath/agent-credentials.js';
import { AgentPki, CERT_LIFETIME_MS, RENEW_EVERY_MS, windowStart } from '../../src/fastpath/agent-pki.js';
import { logger } from '../../src/log.js';

const KEY = 'the-fast-paths-agent-key';
const poolA = { namespace: 'team-a', name: 'gpu', uid: '6b1d0c1e-0000-4000-8000-00000000000a' };
const poolB = { namespace: 'team-a', name: 'cpu', uid: '6b1d0c1e-0000-4000-8000-00000000000b' };
const quiet = logger.child({ test: 'agent-tls' });
quiet.level = 'silent';

describe('agent PKI: derived from the agent key', () => {
  it('every replica derives the same CA and certificates; another key, others', async () => {
    const [one, two, other] = [new AgentPki(KEY), new AgentPki(KEY), new AgentPki('another-key')];
    const now = Date.UTC(2026, 10, 28);
    expect(await one.agentTls(poolA, now)).toEqual(await two.agentTls(poolA, now));
    expect(await one.fastPathTls(now)).toEqual(await two.fastPathTls(now));
    expect(await other.caPem()).not.toBe(await one.caPem());
    expect(await other.caName()).not.toBe(await one.caName());
    expect((await other.agentTls(poolA, now)).key).not.toBe((await one.agentTls(poolA, now)).key);
    // Another pool (or the same name under a new UID): another key and certificate.
    expect((await one.agentTls(poolB, now)).key).not.toBe((await one.agentTls(poolA, now)).key);
    expect((await one.agentTls({ ...poolA, uid: 'new' }, now)).cert).not.toBe((await one.agentTls(poolA, now)).cert);
  });

  it('an agent certificate names its pool, chains to the CA, and has 20+ days left in its window', async () => {
    const pki = new AgentPki(KEY);
    const now = Date.UTC(2026, 10, 28, 13);
    const m = await pki.agentTls(poolA, now);
    const cert = new X509Certificate(m.cert);
    const ca = new X509Certificate(m.ca);
    expect(cert.verify(ca.publicKey)).toBe(true);
    expect(cert.checkIssued(ca)).toBe(true);
    expect(uriNames(cert.subjectAltName)).toEqual([agentIdentity(poolA)]);
    expect(cert.keyUsage).toEqual(['1.3.6.1.5.5.7.3.1']); // serverAuth only
    expect(Date.parse(cert.validFrom)).toBeLessThanOrEqual(now);
    expect(Date.parse(cert.validTo) - now).toBeGreaterThanOrEqual(CERT_LIFETIME_MS - RENEW_EVERY_MS - 1000);
    // The same window, the same certificate; the next window, a new one (and a new key).
    expect(await pki.agentTls(poolA, now + 60_000)).toEqual(m);
    const next = await pki.agentTls(poolA, windowStart(now) + RENEW_EVERY_MS);
    expect(next.cert).not.toBe(m.cert);
    expect(next.key).not.toBe(m.key);
    const client = new X509Certificate((await pki.fastPathTls(now)).cert);
    expect(uriNames(client.subjectAltName)).toEqual([FASTPATH_IDENTITY]);
    expect(client.keyUsage).toEqual(['1.3.6.1.5.5.7.3.2']); // clientAuth only
    expect(client.checkIssued(ca)).toBe(true);
  });

  it('identity checks: the admitted pool only; the fast path only', () => {
    const a = { subjectaltname: `URI:${agentIdentity(poolA)}` };
    expect(agentIdentityProblem(a, poolA)).toBeUndefined();
    expect(agentIdentityProblem(a, poolB)?.message).toMatch(/not an agent of pool team-a\/cpu/);
    expect(agentIdentityProblem({ subjectaltname: 'DNS:gpu' }, poolA)?.message).toMatch(/names no pool/);
    // Names are compared whole: a prefix of another pool's URI is not it.
    expect(agentIdentityProblem({ subjectaltname: `URI:${agentIdentity(poolA)}x` }, poolA)).toBeInstanceOf(Error);
    expect(isFastPathCertificate({ subjectaltname: `URI:${FASTPATH_IDENTITY}` })).toBe(true);
    expect(isFastPathCertificate(a)).toBe(false);
    expect(isFastPathCertificate(undefined)).toBe(false);
  });
});

describe('an agent over mutual TLS', () => {
  const pki = new AgentPki(KEY);
  const credentials = new AgentCredentials(KEY);
  const token = credentials.tokenOf(poolA);
  let dir: string;
  let agent: RunningAgent;
  const files = () => ({
    certFile: path.join(dir, 'tls.crt'),
    keyFile: path.join(dir, 'tls.key'),
    caFile: path.join(dir, 'ca.crt'),
  });
  const writeTls = async (m: { cert: string; key: string; ca: string }) => {
    await writeFile(files().certFile, m.cert);
    await writeFile(files().keyFile, m.key);
    await writeFile(files().caFile, m.ca);
  };
  /** The fast path's client: `admittedAs` is the pool the address was admitted for. */
  const fastPath = (admittedAs = poolA, key = KEY) => {
    const own = new AgentPki(key);
    return new AgentClient(() => ({ token: new AgentCredentials(key).tokenOf(admittedAs), pool: admittedAs }), {
      tls: (now) => own.fastPathTls(now),
    });
  };
  /** A raw HTTPS GET with these client credentials (or none). */
  const get = (route: string, client?: { cert: string; key: string }, bearer = token) =>
    new Promise<number>((resolve, reject) => {
      https
        .get(
          `${agent.url}${route}`,
          {
            ca: [] as string[],
            rejectUnauthorized: false,
            agent: false,
            headers: { authorization: `Bearer ${bearer}` },
            ...client,
          },
          (res) => {
            res.resume();
            resolve(res.statusCode!);
          },
        )
        .on('error', reject);
    });
  /** The serial of the certificate the agent serves on a new connection. */
  const servedSerial = () =>
    new Promise<string>((resolve, reject) => {
      const s = tls.connect({ host: '127.0.0.1', port: agent.port, rejectUnauthorized: false }, () => {
        resolve(s.getPeerCertificate().serialNumber);
        s.end();
      });
      s.on('error', reject);
    });

  beforeAll(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'agent-tls-'));
    await writeTls(await pki.agentTls(poolA));
    await writeFile(path.join(dir, 'token'), token);
    agent = await startAgentServer({
      token,
      tokenFile: path.join(dir, 'token'),
      tls: { ...files(), reloadIntervalMs: 100 },
      host: '127.0.0.1',
      port: 0,
      agentId: 'agent-a',
      capacity: 1,
      runtime: new ProcessRuntime({ host: '127.0.0.1' }),
      logger: quiet,
    });
  });
  afterAll(async () => {
    await agent?.close();
    await rm(dir, { recursive: true, force: true });
  });

  it('serves HTTPS; the fast path, admitted for its pool, is answered on a kept connection', async () => {
    expect(agent.url).toMatch(/^https:\/\/127\.0\.0\.1:\d+$/);
    const client = fastPath();
    try {
      expect((await client.status(agent.url)).agentId).toBe('agent-a');
      expect((await client.status(agent.url)).capacity).toBe(1);
    } finally {
      client.close();
    }
  });

  it('the fast path refuses an agent whose certificate names another pool: no request is sent', async () => {
    const client = fastPath(poolB);
    try {
      await expect(client.status(agent.url)).rejects.toThrow(/not an agent of pool team-a\/cpu/);
    } finally {
      client.close();
    }
  });

  it('the fast path refuses an agent of another CA (another key)', async () => {
    const client = fastPath(poolA, 'another-key');
    try {
      await expect(client.status(agent.url)).rejects.toThrow(/unreachable: .*(self-signed|certificate)/i);
    } finally {
      client.close();
    }
  });

  it("the agent refuses a client without the fast path's certificate; /healthz needs none", async () => {
    expect(await get('/healthz')).toBe(200);
    // The token alone, in TLS, opens nothing.
    expect(await get('/api/v1/agent/status')).toBe(401);
    // A client certificate of another CA (another key's fast path).
    expect(await get('/api/v1/agent/status', await new AgentPki('another-key').fastPathTls())).toBe(401);
    // An agent's certificate (same CA, another pool's): not the fast path.
    expect(await get('/api/v1/agent/status', await pki.agentTls(poolB))).toBe(401);
    // The fast path's own: answered.
    expect(await get('/api/v1/agent/status', await pki.fastPathTls())).toBe(200);
  });

  it('serves a renewed certificate without a restart', async () => {
    const before = await servedSerial();
    expect(before).toBe(new X509Certificate((await pki.agentTls(poolA)).cert).serialNumber);
    // Another window's certificate (the one before: valid now too), as a renewal writes one.
    const renewed = await pki.agentTls(poolA, windowStart(Date.now()) - RENEW_EVERY_MS);
    await writeTls(renewed);
    const want = new X509Certificate(renewed.cert).serialNumber;
    for (let i = 0; i < 100 && (await servedSerial()) !== want; i++) await new Promise((r) => setTimeout(r, 50));
    expect(await servedSerial()).toBe(want);
    const client = fastPath();
    try {
      expect((await client.status(agent.url)).agentId).toBe('agent-a');
    } finally {
      client.close();
    }
  });
});

describe('an agent whose pool Secret is rewritten (a key rotation)', () => {
  it('re-reads its token with its certificate, without a restart', async () => {
    const dir = await mkdtemp(path.join(tmpdir(), 'agent-token-'));
    const pki = new AgentPki(KEY);
    const m = await pki.agentTls(poolA);
    for (const [f, v] of Object.entries({ 'tls.crt': m.cert, 'tls.key': m.key, 'ca.crt': m.ca, token: 'old-token' }))
      await writeFile(path.join(dir, f), v);
    const agent = await startAgentServer({
      token: 'old-token',
      tokenFile: path.join(dir, 'token'),
      tls: {
        certFile: path.join(dir, 'tls.crt'),
        keyFile: path.join(dir, 'tls.key'),
        caFile: path.join(dir, 'ca.crt'),
        reloadIntervalMs: 100,
      },
      host: '127.0.0.1',
      port: 0,
      agentId: 'rotated',
      capacity: 1,
      runtime: new ProcessRuntime({ host: '127.0.0.1' }),
      logger: quiet,
    });
    const client = (t: string) => new AgentClient({ token: t, pool: poolA }, { tls: (now) => pki.fastPathTls(now) });
    const [before, after] = [client('old-token'), client('new-token')];
    try {
      expect((await before.status(agent.url)).agentId).toBe('rotated');
      await writeFile(path.join(dir, 'token'), 'new-token\n');
      for (let i = 0; i < 100; i++) {
        if (
          await after.status(agent.url).then(
            () => true,
            () => false,
          )
        )
          break;
        await new Promise((r) => setTimeout(r, 50));
      }
      expect((await after.status(agent.url)).agentId).toBe('rotated');
      await expect(before.status(agent.url)).rejects.toMatchObject({ status: 401 });
    } finally {
      before.close();
      after.close();
      await agent.close();
      await rm(dir, { recursive: true, force: true });
    }
  });
});

describe('no plain HTTP by default', () => {
  it('an agent without TLS files does not start, unless plain HTTP is asked for by name', async () => {
    await expect(
      startAgentServer({
        token: 't',
        host: '127.0.0.1',
        port: 0,
        agentId: 'plain',
        capacity: 1,
        runtime: new ProcessRuntime({ host: '127.0.0.1' }),
        logger: quiet,
      }),
    ).rejects.toThrow(/serves HTTPS only.*--insecure-plain-http/);
  });

  it('the fast path never sends a request (nor its token) to an http:// agent', async () => {
    const bytes: Buffer[] = [];
    const server = net.createServer((s) => s.on('data', (b: Buffer) => bytes.push(b)));
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const url = `http://127.0.0.1:${(server.address() as net.AddressInfo).port}`;
    const credentials = new AgentCredentials(KEY);
    credentials.admit(url, poolA);
    const pki = new AgentPki(KEY);
    const client = new AgentClient((u) => credentials.targetFor(u), { tls: (now) => pki.fastPathTls(now) });
    try {
      await expect(client.status(url)).rejects.toThrow(/HTTPS only: not called/);
      await new Promise((r) => setTimeout(r, 100));
      expect(Buffer.concat(bytes).toString()).toBe('');
    } finally {
      client.close();
      server.close();
    }
  });
});
