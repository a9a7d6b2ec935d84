/**
 * The tenant provider against an etcd secured as a production one is (review H12): TLS with a
 * private CA, client certificates required (`--client-cert-auth`), and etcd's auth on, the fast
 * path's user allowed to read the tenants' prefix only. Configured only by the fast path's
 * variables (DO_TENANT_ETCD_CA, _CERT, _KEY, _USER, _PASSWORD_FILE), the provider reads the
 * tenants and follows a change; without the certificate, or with a wrong password, it is refused.
 * Its files are renewed in place while it runs, and it follows etcd with the new set.
 */
import { mkdtemp, rename, rm, writeFile } from 'node:fs/promises';
import { setTimeout as sleep } from 'node:timers/promises';
import os from 'node:os';
import path from 'node:path';
import type { Etcd3 } from 'etcd3';
import { afterAll, beforeAll, expect, it, vi, type MockInstance } from 'vitest';
import { loadFastPathConfig } from '../../src/config.js';
import { findBinary } from '../../src/infra/binaries.js';
import { ManagedProcess, getFreePort, waitUntilReady } from '../../src/infra/process.js';
import { createEtcdClient, etcdSecurityOptions } from '../../src/tenancy/etcd.js';
import { TenantProvider } from '../../src/tenancy/provider.js';
import { quietLogger } from '../support/tenancy.js';
import { createTestCa, type TestCa } from '../support/tls-certs.js';

const P = 'jxt/';
const meta = (id: number, code: string) => JSON.stringify({ id, code, name: `Tenant ${id}`, status: 'active' });

let dir: string;
let ca: TestCa;
let etcd: ManagedProcess;
/** Starts etcd on the data dir (again, after a stop). */
let startEtcd: () => ManagedProcess;
let endpoint: string;
/** The root user's client: authenticated by its certificate (CN=root). */
let admin: Etcd3;
let files: Record<'ca' | 'cert' | 'key' | 'password' | 'rootCert' | 'rootKey', string>;

beforeAll(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'tenant-etcd-tls-'));
  ca = await createTestCa('tenant-etcd-ca');
  const serving = await ca.issue('tenant-etcd', { server: ['127.0.0.1'] });
  // The fast path's certificate names no etcd user: its identity is the password's user.
  const client = await ca.issue('durable-operators-fastpath', 'client');
  const root = await ca.issue('root', 'client');
  const write = async (name: string, content: string) => {
    const file = path.join(dir, name);
    await writeFile(file, content, { mode: 0o600 });
    return file;
  };
  files = {
    ca: await write('ca.crt', ca.cert),
    cert: await write('tls.crt', client.cert),
    key: await write('tls.key', client.key),
    password: await write('password', 'fastpath-password\n'),
    rootCert: await write('root.crt', root.cert),
    rootKey: await write('root.key', root.key),
  };
  const server = { cert: await write('server.crt', serving.cert), key: await write('server.key', serving.key) };
  const binary = findBinary('etcd');
  if (!binary) throw new Error('etcd binary not provisioned: run `npm run infra`');
  const [clientPort, peerPort] = [await getFreePort(), await getFreePort()];
  endpoint = `https://127.0.0.1:${clientPort}`;
  startEtcd = () =>
    ManagedProcess.start({
      name: 'tenant-etcd-tls',
      command: binary.path,
      args: [
        '--name=tenant-etcd-tls',
        `--data-dir=${path.join(dir, 'data')}`,
        `--listen-client-urls=${endpoint}`,
        `--advertise-client-urls=${endpoint}`,
        `--listen-peer-urls=http://127.0.0.1:${peerPort}`,
        `--initial-advertise-peer-urls=http://127.0.0.1:${peerPort}`,
        `--initial-cluster=tenant-etcd-tls=http://127.0.0.1:${peerPort}`,
        `--cert-file=${server.cert}`,
        `--key-file=${server.key}`,
        `--trusted-ca-file=${files.ca}`,
        '--client-cert-auth',
        '--unsafe-no-fsync=true',
        '--log-level=warn',
      ],
      logFile: path.join(dir, 'etcd.log'),
    });
  etcd = startEtcd();
  admin = createEtcdClient(
    endpoint,
    etcdSecurityOptions(endpoint, { caFile: files.ca, certFile: files.rootCert, keyFile: files.rootKey }),
  );
  await waitUntilReady(
    'etcd with TLS',
    async () =>
      !!(await admin
        .get('probe')
        .string()
        .then(() => true)),
    {
      timeoutMs: 60_000,
      process: etcd,
      intervalMs: 200,
    },
  );
  // etcd's auth: root (by its certificate) administers; the fast path's user reads the prefix only.
  await admin.user('root').create('root-password');
  await admin.user('root').addRole('root');
  await admin.role('tenants-reader').create();
  await admin.role('tenants-reader').grant({ permission: 'Read', range: admin.range({ prefix: P }) });
  await admin.user('fastpath').create('fastpath-password');
  await admin.user('fastpath').addRole('tenants-reader');
  await admin.put(`${P}tenants/1/meta`).value(meta(1, 'acme'));
  await admin.auth.authEnable();
}, 120_000);

afterAll(async () => {
  admin?.close();
  await etcd?.stop();
  if (dir) await rm(dir, { recursive: true, force: true });
});

const fastPathEnv = () => ({
  DO_TENANT_ETCD: endpoint,
  DO_TENANT_ETCD_CA: files.ca,
  DO_TENANT_ETCD_CERT: files.cert,
  DO_TENANT_ETCD_KEY: files.key,
  DO_TENANT_ETCD_USER: 'fastpath',
  DO_TENANT_ETCD_PASSWORD_FILE: files.password,
});

const start = (env: Record<string, string>) => {
  const fp = loadFastPathConfig(env);
  return TenantProvider.start({
    endpoints: fp.tenantEtcd,
    security: fp.tenantEtcdSecurity,
    securityReloadMs: 200,
    prefix: P,
    logger: quietLogger,
    requestTimeoutMs: 3000,
  });
};

it('with the CA, a client certificate and the user whose password is in the file, the provider reads the tenants and follows a change', async () => {
  const provider = await start(fastPathEnv());
  try {
    expect(provider.getTenantMeta(1)?.code).toBe('acme');
    const put = await admin.put(`${P}tenants/2/meta`).value(meta(2, 'globex')).exec();
    await provider.waitForRevision(Number(put.header.revision), 30_000);
    expect(provider.getTenantMeta(2)?.code).toBe('globex');
  } finally {
    await provider.stop();
  }
});

it('without the client certificate, or with a wrong password, the provider is refused', async () => {
  const { DO_TENANT_ETCD_CERT: _c, DO_TENANT_ETCD_KEY: _k, ...noCert } = fastPathEnv();
  await expect(start(noCert)).rejects.toThrow();
  const wrong = path.join(dir, 'wrong-password');
  await writeFile(wrong, 'not-the-password');
  await expect(start({ ...fastPathEnv(), DO_TENANT_ETCD_PASSWORD_FILE: wrong })).rejects.toThrow(
    /authentication failed/,
  );
});

it('TLS files with a plain http:// endpoint, or half a pair, are refused at start with what to set', async () => {
  await expect(start({ ...fastPathEnv(), DO_TENANT_ETCD: endpoint.replace('https:', 'http:') })).rejects.toThrow(
    /use https:\/\//,
  );
  const { DO_TENANT_ETCD_KEY: _k, ...halfPair } = fastPathEnv();
  expect(() => loadFastPathConfig(halfPair)).toThrow(/DO_TENANT_ETCD_CERT and DO_TENANT_ETCD_KEY/);
});

it('renewed certificate and password files are taken while it runs: the watch moves to them without a lost update', async () => {
  const provider = await start(fastPathEnv());
  try {
    const before = await admin.put(`${P}tenants/3/meta`).value(meta(3, 'initech')).exec();
    await provider.waitForRevision(Number(before.header.revision), 30_000);
    // The renewal: etcd's user gets a new password; every connection is made again (a restart),
    // so the provider's is refused from now on — an update published meanwhile must not be lost.
    await admin.user('fastpath').setPassword('renewed-password');
    await etcd.stop();
    etcd = startEtcd();
    await retry(() => admin.put(`${P}tenants/4/meta`).value(meta(4, 'hooli')).exec());
    expect(provider.getTenantMeta(3)?.code).toBe('initech'); // the snapshot stays in force meanwhile
    // Then the Secret's files: a new certificate (another CN, same CA) and the new password,
    // written one at a time as an update lands. The certificate with the old key, a set that
    // does not load, is ignored.
    const renewed = await ca.issue('durable-operators-fastpath-renewed', 'client');
    const logged = (spy: MockInstance, text: string) =>
      spy.mock.calls.filter((call) => call.some((a) => typeof a === 'string' && a.includes(text))).length;
    const warn = vi.spyOn(quietLogger, 'warn');
    const info = vi.spyOn(quietLogger, 'info');
    await replaceFile(files.cert, renewed.cert);
    await sleep(600);
    expect(logged(warn, 'still using the last good set')).toBe(1);
    expect(logged(info, 'moving the tenant watch')).toBe(0);
    await replaceFile(files.key, renewed.key);
    await replaceFile(files.password, 'renewed-password\n');
    const after = await admin.put(`${P}tenants/5/meta`).value(meta(5, 'umbrella')).exec();
    await provider.waitForRevision(Number(after.header.revision), 30_000);
    expect(logged(info, 'moving the tenant watch')).toBe(1);
    expect(provider.getTenantMeta(4)?.code).toBe('hooli');
    expect(provider.getTenantMeta(5)?.code).toBe('umbrella');
  } finally {
    vi.restoreAllMocks();
    await provider.stop();
  }
}, 90_000);

/**
 * Replaces a file at once, as the kubelet swaps a Secret volume: a re-read never sees it half
 * written (which would be a second problem, warned about on its own).
 */
async function replaceFile(file: string, content: string): Promise<void> {
  await writeFile(`${file}.new`, content, { mode: 0o600 });
  await rename(`${file}.new`, file);
}

async function retry<T>(f: () => Promise<T>, timeoutMs = 30_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      return await f();
    } catch (err) {
      if (Date.now() > deadline) throw err;
      await sleep(200);
    }
  }
}
