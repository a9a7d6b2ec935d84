/**
 * `durable-operators tenants …`: the tenant-service role on the command line. Writes exactly the
 * keys the tenant provider reads (validated first), and reads them back as readers see them.
 *
 *   tenants put <file|->        create or replace a tenant from a JSON document
 *   tenants get <id>            the tenant as readers see it (secrets redacted)
 *   tenants list                all tenants
 *   tenants delete <id>         remove every key of a tenant
 *   tenants resolver set …      publish common/resolver (how services find a request's tenant)
 *   tenants resolver get        the published resolver config, or the default in force
 */
import { readFile } from 'node:fs/promises';
import { Option, type Command, type CommandUnknownOpts, type OptionValues } from '@commander-js/extra-typings';
import type { Etcd3 } from 'etcd3';
import { apiKeyHash, newApiKey } from '../tenancy/api-keys.js';
import type { TenantDocument, TenantView } from '../tenancy/document.js';
import { etcdSecurityFromEnv } from '../config.js';
import { createEtcdClient, etcdSecurityOptions } from '../tenancy/etcd.js';
import {
  DEFAULT_RESOLVER_CONFIG,
  DEFAULT_TENANT_PREFIX,
  FTP_RESOLVER_TYPES,
  HTTP_HOST_MODES,
  HTTP_RESOLVER_TYPES,
  parseTenantId,
  type ResolverConfig,
} from '../tenancy/model.js';
import { TenantPublisher } from '../tenancy/publisher.js';

/** The tenant etcd `dev` starts (its preferred port). */
export const DEV_TENANT_ETCD = 'http://127.0.0.1:22379';

interface StoreFlags {
  etcd: string;
  prefix: string;
}

function storeOptions<Args extends unknown[], Opts extends OptionValues, Globals extends OptionValues>(
  cmd: Command<Args, Opts, Globals>,
) {
  return cmd
    .addOption(
      new Option('--etcd <endpoints>', 'tenant etcd endpoints, comma-separated')
        .env('DO_TENANT_ETCD')
        .default(DEV_TENANT_ETCD),
    )
    .addOption(new Option('--prefix <prefix>', 'namespace prefix of the tenant keys').default(DEFAULT_TENANT_PREFIX));
}

/** Runs `fn` with a publisher on a fresh client, and always closes the client. */
async function withPublisher<T>(flags: StoreFlags, fn: (publisher: TenantPublisher) => Promise<T>): Promise<T> {
  // The fast path's TLS and auth variables (DO_TENANT_ETCD_CA, _CERT, _KEY, _USER, _PASSWORD_FILE).
  const client: Etcd3 = createEtcdClient(flags.etcd, etcdSecurityOptions(flags.etcd, etcdSecurityFromEnv(process.env)));
  try {
    return await fn(new TenantPublisher(client, flags.prefix));
  } catch (err) {
    throw explainEtcdError(err, flags.etcd);
  } finally {
    client.close();
  }
}

function explainEtcdError(err: unknown, endpoints: string): unknown {
  const text = String(err);
  if (/UNAVAILABLE|ECONNREFUSED|circuit breaker|DEADLINE_EXCEEDED|deadline/i.test(text)) {
    return new Error(
      `cannot reach etcd at ${endpoints} (${err instanceof Error ? err.message : text}); set --etcd or DO_TENANT_ETCD`,
    );
  }
  return err;
}

function tenantIdArgument(text: string): number {
  const id = parseTenantId(text);
  if (id === undefined) throw new Error(`tenant ID must be a positive integer, got ${JSON.stringify(text)}`);
  return id;
}

async function readDocument(file: string): Promise<unknown> {
  let text: string;
  if (file === '-') {
    const chunks: Buffer[] = [];
    for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
    text = Buffer.concat(chunks).toString('utf8');
  } else {
    text = await readFile(file, 'utf8');
  }
  try {
    return JSON.parse(text);
  } catch (err) {
    throw new Error(`${file === '-' ? 'stdin' : file} is not JSON: ${(err as Error).message}`, { cause: err });
  }
}

/** Passwords and password hashes are shown as `***` unless asked for. */
export function redactSecrets(view: TenantView): TenantView {
  const mask = (s: string | undefined) => (s ? '***' : s);
  return {
    ...view,
    ...(view.databases && {
      databases: Object.fromEntries(
        Object.entries(view.databases).map(([k, db]) => [k, { ...db, password: mask(db.password) }]),
      ),
    }),
    ...(view.ftp && { ftp: view.ftp.map((f) => ({ ...f, passwordHash: mask(f.passwordHash) })) }),
    ...(view.sandbox?.apiKeys && {
      sandbox: { ...view.sandbox, apiKeys: view.sandbox.apiKeys.map((k) => ({ ...k, sha256: mask(k.sha256)! })) },
    }),
  };
}

const print = (value: unknown) => console.log(JSON.stringify(value, null, 2));

export function registerTenantCommands(program: CommandUnknownOpts): CommandUnknownOpts {
  const tenants = program
    .command('tenants')
    .description('Publish and inspect tenant configuration in etcd (what the tenant provider reads).');

  storeOptions(tenants.command('put'))
    .description(
      'Create or replace a tenant from a JSON document: {id, code, name, status, billingPlan?, databases?, ftp?, storage?, wvp?, domain?, sandbox?}.',
    )
    .argument('<file>', 'tenant document (JSON), or - for stdin')
    .action(async (file, flags) => {
      const doc = await readDocument(file);
      const result = await withPublisher(flags, (p) => p.putTenant(doc));
      const id = (doc as TenantDocument).id;
      console.log(
        `tenant ${id} written at revision ${result.revision}: ${result.written.length} key(s) written, ${result.deleted.length} deleted`,
      );
      for (const key of result.written) console.log(`  put     ${flags.prefix}${key}`);
      for (const key of result.deleted) console.log(`  delete  ${flags.prefix}${key}`);
    });

  storeOptions(tenants.command('get'))
    .description('Show a tenant as readers see it.')
    .argument('<id>', 'tenant ID', tenantIdArgument)
    .option('--show-secrets', 'print database passwords and FTP password hashes')
    .action(async (id, flags) => {
      const reading = await withPublisher(flags, (p) => p.getTenant(id));
      if (reading === undefined) throw new Error(`tenant ${id} not found under ${flags.prefix}`);
      print(flags.showSecrets ? reading.tenant : redactSecrets(reading.tenant));
      for (const r of reading.rejected) {
        const what = r.item === undefined ? ' is malformed and ignored' : `: ${r.item} is invalid and skipped`;
        console.error(`warning: ${flags.prefix}${r.key}${what} by readers: ${r.reason}`);
      }
    });

  storeOptions(tenants.command('list'))
    .description('List tenants.')
    .option('--json', 'print JSON (secrets redacted)')
    .action(async (flags) => {
      const list = await withPublisher(flags, (p) => p.listTenants());
      if (flags.json) {
        print(list.map(redactSecrets));
        return;
      }
      if (list.length === 0) {
        console.log(`no tenants under ${flags.prefix}`);
        return;
      }
      const rows = list.map((t) => [
        String(t.id),
        t.code ?? '-',
        t.status ?? '(no meta)',
        t.domain?.primary ?? '-',
        t.name ?? '-',
      ]);
      const header = ['ID', 'CODE', 'STATUS', 'PRIMARY DOMAIN', 'NAME'];
      const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
      for (const row of [header, ...rows])
        console.log(
          row
            .map((cell, i) => cell.padEnd(widths[i]!))
            .join('  ')
            .trimEnd(),
        );
    });

  const apiKey = tenants
    .command('api-key')
    .description("A tenant's sandbox API keys (stored hashed; with any, the fast path requires one).");
  storeOptions(apiKey.command('add'))
    .description('Create a key, store its hash in the tenant and print the key (shown only this once).')
    .argument('<id>', 'tenant ID', tenantIdArgument)
    .option('--name <name>', 'the key’s name (to remove it later)', `key-${new Date().toISOString().slice(0, 10)}`)
    .action(async (id, flags) => {
      const key = await withPublisher(flags, (p) => addApiKey(p, id, flags.name));
      console.log(key);
      console.error(`tenant ${id}: API key ${flags.name} added; send it as Authorization: Bearer <key>`);
    });
  storeOptions(apiKey.command('remove'))
    .description('Remove a key (callers still using it are refused from now on).')
    .argument('<id>', 'tenant ID', tenantIdArgument)
    .argument('<name>', 'the key’s name')
    .action(async (id, name, flags) => {
      await withPublisher(flags, async (p) => {
        const doc = await tenantDocument(p, id);
        const keys = doc.sandbox?.apiKeys ?? [];
        if (!keys.some((k) => k.id === name)) throw new Error(`tenant ${id} has no API key ${name}`);
        const rest = keys.filter((k) => k.id !== name);
        const { apiKeys: _, ...sandbox } = doc.sandbox!;
        await p.putTenant({ ...doc, sandbox: rest.length ? { ...sandbox, apiKeys: rest } : sandbox });
      });
      console.log(`tenant ${id}: API key ${name} removed`);
    });

  const clientCert = tenants
    .command('client-cert')
    .description(
      'Client certificate names that authenticate as a tenant on a fast path serving TLS with a client CA (CN, DNS or URI name).',
    );
  storeOptions(clientCert.command('add'))
    .description('Let a client certificate carrying this name authenticate as the tenant.')
    .argument('<id>', 'tenant ID', tenantIdArgument)
    .argument('<name>', "the certificate's subject CN, or one of its DNS or URI names")
    .action(async (id, name, flags) => {
      await withPublisher(flags, async (p) => {
        const doc = await tenantDocument(p, id);
        const names = doc.sandbox?.clientCertificateNames ?? [];
        if (names.includes(name)) throw new Error(`tenant ${id} already names ${name}`);
        await p.putTenant({ ...doc, sandbox: { ...doc.sandbox, clientCertificateNames: [...names, name] } });
      });
      console.log(`tenant ${id}: client certificates named ${name} authenticate as it`);
    });
  storeOptions(clientCert.command('remove'))
    .description('Stop accepting certificates with this name (callers using one are refused from now on).')
    .argument('<id>', 'tenant ID', tenantIdArgument)
    .argument('<name>', 'the name')
    .action(async (id, name, flags) => {
      await withPublisher(flags, async (p) => {
        const doc = await tenantDocument(p, id);
        const names = doc.sandbox?.clientCertificateNames ?? [];
        if (!names.includes(name)) throw new Error(`tenant ${id} names no client certificate ${name}`);
        const rest = names.filter((n) => n !== name);
        const { clientCertificateNames: _, ...sandbox } = doc.sandbox!;
        await p.putTenant({ ...doc, sandbox: rest.length ? { ...sandbox, clientCertificateNames: rest } : sandbox });
      });
      console.log(`tenant ${id}: client certificate name ${name} removed`);
    });

  storeOptions(tenants.command('delete'))
    .description('Delete every key of a tenant.')
    .argument('<id>', 'tenant ID', tenantIdArgument)
    .action(async (id, flags) => {
      const result = await withPublisher(flags, (p) => p.deleteTenant(id));
      if (result.deleted === 0) throw new Error(`tenant ${id} not found under ${flags.prefix}`);
      console.log(`tenant ${id} deleted at revision ${result.revision} (${result.deleted} key(s))`);
    });

  const resolver = tenants.command('resolver').description('The global tenant resolver config (common/resolver).');

  storeOptions(resolver.command('set'))
    .description('Publish how services tell which tenant a request belongs to.')
    .addOption(
      new Option('--http-type <type>', 'where HTTP requests carry the tenant')
        .choices(HTTP_RESOLVER_TYPES)
        .makeOptionMandatory(),
    )
    .option('--header-name <name>', 'header holding the tenant ID (http-type header)')
    .option('--query-param <name>', 'query parameter holding the tenant ID (http-type query)')
    .option('--path-index <n>', 'path segment holding the tenant ID, 0 = first (http-type path)')
    .addOption(
      new Option(
        '--host-mode <mode>',
        'http-type host: numeric subdomain, whole domain, or tenant code subdomain',
      ).choices(HTTP_HOST_MODES),
    )
    .addOption(new Option('--ftp-type <type>', 'how FTP sessions carry the tenant').choices(FTP_RESOLVER_TYPES))
    .action(async (flags) => {
      const pathIndex = flags.pathIndex === undefined ? undefined : Number(flags.pathIndex);
      if (pathIndex !== undefined && !Number.isInteger(pathIndex))
        throw new Error(`--path-index must be an integer, got ${flags.pathIndex}`);
      const config = await withPublisher(flags, (p) =>
        p.setResolverConfig({
          httpType: flags.httpType,
          httpHeaderName: flags.headerName ?? '',
          httpQueryParam: flags.queryParam ?? '',
          httpPathIndex: pathIndex ?? 0,
          httpHostMode: flags.hostMode ?? 'numeric',
          ftpType: flags.ftpType ?? 'username',
        }),
      );
      print(config);
    });

  storeOptions(resolver.command('get'))
    .description('Show the published resolver config (or the default in force when none is).')
    .action(async (flags) => {
      const reading = await withPublisher(flags, (p) => p.getResolverConfig());
      if (reading.state === 'valid') {
        print(reading.config);
        for (const { item, reason } of reading.skipped)
          console.error(
            `warning: ${flags.prefix}common/resolver: ${item} is invalid and skipped by readers: ${reason}`,
          );
      } else if (reading.state === 'unset') {
        console.log(`${flags.prefix}common/resolver is not set; readers use the default:`);
        print(DEFAULT_RESOLVER_CONFIG);
      } else {
        throw new Error(
          `${flags.prefix}common/resolver is invalid (${reading.reason}); readers keep their last valid config. Value: ${reading.raw}`,
        );
      }
    });

  return tenants;
}

async function tenantDocument(p: TenantPublisher, id: number): Promise<TenantDocument> {
  const reading = await p.getTenant(id);
  if (!reading) throw new Error(`tenant ${id} not found`);
  return reading.tenant as TenantDocument;
}

/** Adds a new random API key (its hash) to the tenant and returns the key. */
export async function addApiKey(p: TenantPublisher, id: number, name: string): Promise<string> {
  const doc = await tenantDocument(p, id);
  const keys = doc.sandbox?.apiKeys ?? [];
  if (keys.some((k) => k.id === name)) throw new Error(`tenant ${id} already has an API key named ${name}`);
  const key = newApiKey();
  await p.putTenant({ ...doc, sandbox: { ...doc.sandbox, apiKeys: [...keys, { id: name, sha256: apiKeyHash(key) }] } });
  return key;
}

export const DEMO_TENANT: TenantDocument = {
  id: 1001,
  code: 'demo',
  name: 'Demo tenant',
  status: 'active',
  billingPlan: 'free',
  storage: { quotaBytes: 10 * 1024 ** 3, maxFileSizeBytes: 512 * 1024 ** 2, maxConcurrentUploads: 4 },
  // *.localhost resolves to the loopback address, so host-based resolution works locally too.
  domain: { primary: 'demo.localhost', aliases: ['1001.localhost'] },
};

/**
 * Seeds the demo tenant for `dev`, and the default resolver config unless one is already
 * published (a developer's own choice survives restarts). Returns one line telling how to send
 * a request as the demo tenant under the resolver config in force.
 */
export async function seedDemoTenant(
  endpoint: string,
  options: { prefix?: string; baseUrl?: string; apiKey?: string } = {},
): Promise<string> {
  const client = createEtcdClient(endpoint);
  try {
    const publisher = new TenantPublisher(client, options.prefix ?? DEFAULT_TENANT_PREFIX);
    await publisher.putTenant(
      options.apiKey
        ? { ...DEMO_TENANT, sandbox: { apiKeys: [{ id: 'dev', sha256: apiKeyHash(options.apiKey) }] } }
        : DEMO_TENANT,
    );
    let reading = await publisher.getResolverConfig();
    if (reading.state === 'unset') {
      await publisher.setResolverConfig({ httpType: 'header', httpHeaderName: DEFAULT_RESOLVER_CONFIG.httpHeaderName });
      reading = await publisher.getResolverConfig();
    }
    const config = reading.state === 'valid' ? reading.config : DEFAULT_RESOLVER_CONFIG;
    return `demo tenant ${DEMO_TENANT.id} (${DEMO_TENANT.code}): ${demoRequest(config, options.baseUrl ?? 'http://127.0.0.1:<port>')}`;
  } finally {
    client.close();
  }
}

/** A curl command that resolves to the demo tenant under `config`. */
export function demoRequest(config: ResolverConfig, baseUrl: string): string {
  const id = DEMO_TENANT.id;
  const base = baseUrl.replace(/\/$/, '');
  // The port as written in the base URL, `<port>` placeholder included.
  const port = /^[a-z]+:\/\/[^/]*:([^/]+)/i.exec(base)?.[1];
  const hostPort = (host: string) => (port ? `${host}:${port}` : host);
  switch (config.httpType) {
    case 'header':
      return `curl -H '${config.httpHeaderName}: ${id}' ${base}/`;
    case 'query':
      return `curl '${base}/?${config.httpQueryParam}=${id}'`;
    case 'path':
      return `curl ${base}/${Array.from({ length: config.httpPathIndex }, () => 'x/').join('')}${id}/  (segment ${config.httpPathIndex} is the tenant ID)`;
    case 'host': {
      const host =
        config.httpHostMode === 'domain'
          ? DEMO_TENANT.domain!.primary!
          : config.httpHostMode === 'code'
            ? `${DEMO_TENANT.code}.localhost`
            : `${id}.localhost`;
      return `curl -H 'Host: ${hostPort(host)}' ${base}/`;
    }
    case '':
      return 'no HTTP request carries a tenant: the published resolver config sets no httpType (FTP only)';
  }
}
