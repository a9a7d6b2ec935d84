/**
 * The Temporal connection every role loads (src/config.ts: loadTemporalConnection): a profile of
 * the temporal CLI's TOML file, the TEMPORAL_* variables over it, the flags over both; and what
 * the variables meant before envconfig keeps meaning it.
 */
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { loadConfig, loadTemporalConnection } from '../../src/config.js';
import { localTemporalEnv, type StackInfo } from '../../src/infra/stack.js';

let dir: string;
let configFile: string;
const CERT = '-----BEGIN CERTIFICATE-----\nY2VydA==\n-----END CERTIFICATE-----\n';
const KEY = '-----BEGIN PRIVATE KEY-----\na2V5\n-----END PRIVATE KEY-----\n';
const CA = '-----BEGIN CERTIFICATE-----\nY2E=\n-----END CERTIFICATE-----\n';

beforeAll(async () => {
  dir = await mkdtemp(path.join(tmpdir(), 'temporal-envconfig-'));
  await writeFile(path.join(dir, 'client.crt'), CERT);
  await writeFile(path.join(dir, 'client.key'), KEY);
  configFile = path.join(dir, 'temporal.toml');
  await writeFile(
    configFile,
    `
[profile.default]
address = "localhost:7233"

[profile.prod]
address = "prod.tmprl.example:7233"
namespace = "operators"

[profile.prod.tls]
client_cert_path = "${path.join(dir, 'client.crt')}"
client_key_path = "${path.join(dir, 'client.key')}"
server_ca_cert_data = """${CA}"""
server_name = "frontend.example"

[profile.prod.grpc_meta]
team = "platform"

[profile.cloud]
address = "ns.acct.tmprl.cloud:7233"
namespace = "ns.acct"
api_key = "from-the-file"
`,
  );
});

afterAll(() => rm(dir, { recursive: true, force: true }));

it('defaults to the local dev server without TLS', () => {
  expect(loadTemporalConnection({}, {})).toEqual({ address: '127.0.0.1:7233', namespace: 'default' });
});

it('reads a profile of the TOML file: address, namespace, mTLS files, server CA and name, gRPC headers', () => {
  const c = loadTemporalConnection({}, { TEMPORAL_CONFIG_FILE: configFile, TEMPORAL_PROFILE: 'prod' });
  expect(c).toMatchObject({
    address: 'prod.tmprl.example:7233',
    namespace: 'operators',
    metadata: { team: 'platform' },
  });
  expect(c.apiKey).toBeUndefined();
  const tls = c.tls as {
    serverNameOverride: string;
    serverRootCACertificate: Uint8Array;
    clientCertPair: { crt: Uint8Array; key: Uint8Array };
  };
  expect(tls.serverNameOverride).toBe('frontend.example');
  expect(Buffer.from(tls.serverRootCACertificate).toString()).toBe(CA);
  expect(Buffer.from(tls.clientCertPair.crt).toString()).toBe(CERT);
  expect(Buffer.from(tls.clientCertPair.key).toString()).toBe(KEY);
});

it('lets TEMPORAL_* variables override the profile, and the flags override both', () => {
  const env = {
    TEMPORAL_CONFIG_FILE: configFile,
    TEMPORAL_PROFILE: 'prod',
    TEMPORAL_NAMESPACE: 'from-env',
    TEMPORAL_TLS_SERVER_NAME: 'other.example',
    TEMPORAL_GRPC_META_TEAM: 'sre',
  };
  const fromEnv = loadTemporalConnection({}, env);
  expect(fromEnv).toMatchObject({
    address: 'prod.tmprl.example:7233',
    namespace: 'from-env',
    metadata: { team: 'sre' },
  });
  expect(fromEnv.tls).toMatchObject({ serverNameOverride: 'other.example' });
  // The role's flags (--temporal-address, --namespace, --temporal-profile) come last.
  const cfg = loadConfig({ temporalAddress: 'flag:7233', namespace: 'flag-ns', temporalProfile: 'cloud' }, env);
  expect(cfg.temporal).toMatchObject({
    address: 'flag:7233',
    namespace: 'flag-ns',
    apiKey: 'from-the-file',
    tls: { serverNameOverride: 'other.example' },
  });
});

it('takes certificates as data in variables (a Secret mounted as env) and an API key, which turns TLS on', () => {
  const c = loadTemporalConnection(
    {},
    {
      TEMPORAL_ADDRESS: 'ns.acct.tmprl.cloud:7233',
      TEMPORAL_TLS_CLIENT_CERT_DATA: CERT,
      TEMPORAL_TLS_CLIENT_KEY_DATA: KEY,
    },
  );
  expect(Buffer.from((c.tls as { clientCertPair: { key: Uint8Array } }).clientCertPair.key).toString()).toBe(KEY);
  expect(loadTemporalConnection({}, { TEMPORAL_API_KEY: 'k' })).toMatchObject({ apiKey: 'k', tls: true });
});

it('names the files credentials came from (re-read while running), an API key from DO_TEMPORAL_API_KEY_FILE; with optional files, an absent one counts as unset', async () => {
  await writeFile(path.join(dir, 'api-key'), 'key-from-file\n');
  const files = {
    TEMPORAL_TLS_CLIENT_CERT_PATH: path.join(dir, 'client.crt'),
    TEMPORAL_TLS_CLIENT_KEY_PATH: path.join(dir, 'client.key'),
    DO_TEMPORAL_API_KEY_FILE: path.join(dir, 'api-key'),
  };
  expect(loadTemporalConnection({}, { ...files, DO_TEMPORAL_CREDENTIALS_RELOAD_INTERVAL: '3s' })).toMatchObject({
    apiKey: 'key-from-file',
    files: {
      clientCert: files.TEMPORAL_TLS_CLIENT_CERT_PATH,
      clientKey: files.TEMPORAL_TLS_CLIENT_KEY_PATH,
      apiKey: files.DO_TEMPORAL_API_KEY_FILE,
    },
    reloadIntervalMs: 3000,
  });
  expect(() => loadTemporalConnection({}, { ...files, TEMPORAL_API_KEY: 'k' })).toThrow(
    /Set the Temporal API key once/,
  );

  // The chart's optional Secrets, all absent: no credentials, no error.
  const absent = {
    TEMPORAL_TLS_CLIENT_CERT_PATH: path.join(dir, 'none', 'tls.crt'),
    TEMPORAL_TLS_CLIENT_KEY_PATH: path.join(dir, 'none', 'tls.key'),
    TEMPORAL_TLS_SERVER_CA_CERT_PATH: path.join(dir, 'none', 'ca.crt'),
    DO_TEMPORAL_API_KEY_FILE: path.join(dir, 'none', 'api-key'),
  };
  const c = loadTemporalConnection({}, { ...absent, DO_TEMPORAL_CREDENTIAL_FILES_OPTIONAL: 'true' });
  expect(c.tls).toBeUndefined();
  expect(c.apiKey).toBeUndefined();
  expect(c.files).toBeUndefined();
  expect(() => loadTemporalConnection({}, absent)).toThrow(/cannot read a Temporal TLS file|ENOENT/);
});

it('keeps what the variables meant before: TEMPORAL_TLS=true is TLS, an empty API key is none', () => {
  expect(loadTemporalConnection({}, { TEMPORAL_TLS: 'true' }).tls).toBeTruthy();
  expect(loadTemporalConnection({}, { TEMPORAL_TLS: 'false', TEMPORAL_API_KEY: '' })).toEqual({
    address: '127.0.0.1:7233',
    namespace: 'default',
    tls: false,
  });
  expect(loadTemporalConnection({}, { TEMPORAL_API_KEY: '', TEMPORAL_ADDRESS: '' }).apiKey).toBeUndefined();
});

it('refuses a half client certificate, an unreadable file, a missing config file and an unknown profile, saying which', () => {
  expect(() => loadTemporalConnection({}, { TEMPORAL_TLS_CLIENT_CERT_PATH: path.join(dir, 'client.crt') })).toThrow(
    /needs both the certificate and its key/,
  );
  expect(() =>
    loadTemporalConnection(
      {},
      {
        TEMPORAL_TLS_CLIENT_CERT_PATH: path.join(dir, 'client.crt'),
        TEMPORAL_TLS_CLIENT_KEY_PATH: '/nowhere/client.key',
      },
    ),
  ).toThrow(/cannot read a Temporal TLS file .*\/nowhere\/client\.key/);
  expect(() => loadTemporalConnection({}, { TEMPORAL_CONFIG_FILE: path.join(dir, 'nope.toml') })).toThrow(
    /nope\.toml \(TEMPORAL_CONFIG_FILE\) does not exist/,
  );
  expect(() => loadTemporalConnection({ temporalProfile: 'staging' }, { TEMPORAL_CONFIG_FILE: configFile })).toThrow(
    /Profile 'staging' not found/,
  );
});

it("dev's and the tests' roles reach the local stack whatever Temporal profile or variables the user has", async () => {
  const home = path.join(dir, 'home');
  await mkdir(path.join(home, '.config', 'temporalio'), { recursive: true });
  await writeFile(
    path.join(home, '.config', 'temporalio', 'temporal.toml'),
    '[profile.default]\naddress = "ns.acct.tmprl.cloud:7233"\napi_key = "users-cloud-key"\n',
  );
  const user = { HOME: home, TEMPORAL_API_KEY: 'users-cloud-key', TEMPORAL_PROFILE: 'cloud', TEMPORAL_TLS: 'true' };
  // What a role of theirs would load on its own: the user's Cloud.
  expect(loadTemporalConnection({}, { HOME: home })).toMatchObject({ address: 'ns.acct.tmprl.cloud:7233', tls: true });

  const stackConfig = path.join(dir, 'stack-temporal.toml');
  await writeFile(stackConfig, '[profile.default]\naddress = "127.0.0.1:17233"\nnamespace = "default"\n');
  const info = { temporal: { address: '127.0.0.1:17233', namespace: 'default', configFile: stackConfig } };
  const env = localTemporalEnv(info as StackInfo, user);
  expect(env.HOME).toBe(home);
  expect(loadTemporalConnection({}, env)).toEqual({ address: '127.0.0.1:17233', namespace: 'default' });
});
