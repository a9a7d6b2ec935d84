/**
 * `durable-operators sandbox …`: the original's `fsb-ctl` as commands of the project's one CLI,
 * speaking `fastpath.v1` over gRPC (src/fastpath/grpc-client.ts, the repo's .proto).
 *
 *   sandbox run <name> [cmd…]   CreateSandbox (--image, --pool, --mode, --ports, --env, -f file)
 *   sandbox list | ls           ListSandboxes of a namespace (table, -o json|yaml)
 *   sandbox get <name>          GetSandbox (-o yaml|json)
 *   sandbox update <name>       UpdateSandbox: --expire-time, --failure-policy, --recovery-timeout, --labels
 *   sandbox reset <name>        UpdateSandbox reset_revision = now
 *   sandbox delete | rm <name>  DeleteSandbox
 *   sandbox logs <name> [-f]    its output (SandboxIOService.StreamLogs), following with -f
 *   sandbox exec <name> -- cmd  run a command in it (SandboxIOService.Exec); exits with its code;
 *                               -i sends the CLI's stdin (read to its end first) as the command's
 *
 * Errors are the server's gRPC status and message (`NOT_FOUND: …`), never a stack trace.
 */
import { readFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { constants } from 'node:os';
import * as grpc from '@grpc/grpc-js';
import { Option, type Command, type CommandUnknownOpts, type OptionValues } from '@commander-js/extra-typings';
import { parse as parseYaml, stringify as toYaml } from 'yaml';
import { MAX_EXEC_STDIN_BYTES } from '../agent/api.js';
import { parseGoDuration } from '../domain/duration.js';
import { fastPathClient, sandboxIoClient, type ClientTls, type FastPathGrpc } from '../fastpath/grpc-client.js';
import type { SandboxInfo } from '../fastpath/service.js';

interface ClientFlags {
  endpoint: string;
  tenant?: string;
  apiKey?: string;
  namespace: string;
  tls?: boolean;
  caFile?: string;
  certFile?: string;
  keyFile?: string;
}

/** TLS when asked (`--tls`) or implied by a CA or client certificate; the files read now. */
function clientTls(flags: ClientFlags): ClientTls | undefined {
  if (!flags.tls && !flags.caFile && !flags.certFile && !flags.keyFile) return undefined;
  if (!flags.certFile !== !flags.keyFile) throw new SandboxCliError('--cert-file and --key-file go together');
  const read = (f?: string) => (f ? readFileSync(f) : undefined);
  return { ca: read(flags.caFile), cert: read(flags.certFile), key: read(flags.keyFile) };
}

function clientOptions<Args extends unknown[], Opts extends OptionValues, Globals extends OptionValues>(
  cmd: Command<Args, Opts, Globals>,
) {
  return cmd
    .addOption(
      new Option('--endpoint <host:port>', 'the fast path gRPC address')
        .env('DO_FASTPATH_ENDPOINT')
        .default('127.0.0.1:9090'),
    )
    .addOption(new Option('--tenant <id>', 'tenant sent in the X-Tenant-ID header').env('DO_TENANT'))
    .addOption(new Option('--api-key <key>', "the tenant's API key, when it has keys").env('DO_API_KEY'))
    .addOption(
      new Option('--tls', 'speak TLS to the fast path (implied by the three options below)').env('DO_FASTPATH_TLS'),
    )
    .addOption(
      new Option('--ca-file <path>', "CA to verify the fast path's certificate (default: the system's)").env(
        'DO_FASTPATH_CA_FILE',
      ),
    )
    .addOption(
      new Option('--cert-file <path>', 'client certificate, for a tenant that names it').env('DO_CLIENT_CERT_FILE'),
    )
    .addOption(new Option('--key-file <path>', "the client certificate's key").env('DO_CLIENT_KEY_FILE'))
    .addOption(new Option('-n, --namespace <ns>', 'namespace of the sandbox').default('default'));
}

const osSignals = constants.signals as Record<string, number>;

/** A gRPC failure as the server said it: `CODE: message`. */
export class SandboxCliError extends Error {}

/** A gRPC failure as the server said it (`CODE: details`); anything else as it is. */
function serverError(err: unknown, endpoint: string): unknown {
  const e = err as Partial<grpc.ServiceError>;
  if (typeof e.code !== 'number') return err;
  const code = grpc.status[e.code] ?? String(e.code);
  const hint = e.code === grpc.status.UNAVAILABLE ? ` (is the fast path listening on ${endpoint}?)` : '';
  return new SandboxCliError(`${code}: ${e.details || e.message}${hint}`);
}

async function withClient<T>(flags: ClientFlags, fn: (c: FastPathGrpc) => Promise<T>): Promise<T> {
  const client = fastPathClient(flags.endpoint, flags.tenant ?? '', flags.apiKey, clientTls(flags));
  try {
    return await fn(client);
  } catch (err) {
    throw serverError(err, flags.endpoint);
  } finally {
    client.close();
  }
}

/** Copies a stream of SandboxIOService messages out; returns the exit code an exec ended with. */
async function streamOut(
  flags: ClientFlags,
  method: 'StreamLogs' | 'Exec',
  req: Record<string, unknown>,
): Promise<number | undefined> {
  const client = sandboxIoClient(flags.endpoint, flags.tenant ?? '', flags.apiKey, clientTls(flags));
  let exitCode: number | undefined;
  try {
    for await (const m of client.stream<{
      data?: Buffer;
      stdout?: Buffer;
      stderr?: Buffer;
      exitCode?: number;
      signal?: string;
      output?: string;
    }>(method, req)) {
      if (m.data) process.stdout.write(m.data);
      else if (m.output === 'stdout' && m.stdout) process.stdout.write(m.stdout);
      else if (m.output === 'stderr' && m.stderr) process.stderr.write(m.stderr);
      else if (m.output === 'exitCode') exitCode = m.signal ? 128 + (osSignals[m.signal] ?? 0) : (m.exitCode ?? 0);
    }
    return exitCode;
  } catch (err) {
    throw serverError(err, flags.endpoint);
  } finally {
    client.close();
  }
}

/**
 * `exec -i`: the CLI's stdin, read to its end, at most what an exec takes (more is refused, not
 * cut). Only when asked, as kubectl's `exec -i`: a script's stdin that never closes would
 * otherwise hold every exec.
 */
export async function readInput(from: AsyncIterable<Buffer> = process.stdin): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const c of from) {
    size += c.length;
    if (size > MAX_EXEC_STDIN_BYTES)
      throw new SandboxCliError(`-i: stdin is over ${MAX_EXEC_STDIN_BYTES} bytes, the most an exec takes`);
    chunks.push(c);
  }
  return Buffer.concat(chunks);
}

/** `--expire-time`: an RFC 3339 time, a duration from now (`30m`, `2h`), or `0`/`never` to remove it. */
export function expireTimeSeconds(text: string, now = Date.now()): number {
  if (text === '0' || text === 'never') return 0;
  const at = Date.parse(text);
  if (!Number.isNaN(at) && /\d{4}-\d{2}-\d{2}T/.test(text)) return Math.floor(at / 1000);
  try {
    return Math.floor((now + parseGoDuration(text)) / 1000);
  } catch {
    throw new SandboxCliError(
      `--expire-time: ${JSON.stringify(text)} is not an RFC 3339 time, a duration (30m, 2h) or 0`,
    );
  }
}

/** `--labels a=b,c=d`. */
export function parseLabels(text: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const pair of text.split(',').filter(Boolean)) {
    const i = pair.indexOf('=');
    if (i <= 0) throw new SandboxCliError(`--labels: ${JSON.stringify(pair)} is not key=value`);
    out[pair.slice(0, i).trim()] = pair.slice(i + 1).trim();
  }
  return out;
}

/** `--ports 8080,9090`. */
export function parsePorts(text: string): number[] {
  return text
    .split(',')
    .filter(Boolean)
    .map((p) => {
      const n = Number(p);
      if (!Number.isInteger(n) || n < 1 || n > 65535)
        throw new SandboxCliError(`--ports: ${JSON.stringify(p)} is not a port`);
      return n;
    });
}

function age(createdAt: number, now = Date.now()): string {
  if (!createdAt) return '-';
  const s = Math.max(0, Math.floor(now / 1000 - createdAt));
  return s < 120
    ? `${s}s`
    : s < 7200
      ? `${Math.floor(s / 60)}m`
      : s < 172800
        ? `${Math.floor(s / 3600)}h`
        : `${Math.floor(s / 86400)}d`;
}

/** kubectl-style columns. */
export function table(items: SandboxInfo[]): string {
  const rows = [
    ['NAME', 'PHASE', 'IMAGE', 'POOL', 'AGENT', 'ENDPOINTS', 'AGE'],
    ...items.map((i) => [
      i.sandboxName,
      i.phase || '-',
      i.image,
      i.poolRef,
      i.agentPod || '-',
      i.endpoints.join(',') || '-',
      age(i.createdAt),
    ]),
  ];
  const widths = rows[0]!.map((_, c) => Math.max(...rows.map((r) => r[c]!.length)));
  return rows
    .map((r) =>
      r
        .map((cell, c) => cell.padEnd(widths[c]!))
        .join('   ')
        .trimEnd(),
    )
    .join('\n');
}

function print(value: unknown, output: string): void {
  console.log(output === 'json' ? JSON.stringify(value, null, 2) : toYaml(value).trimEnd());
}

const outputOption = (def: string, choices: string[]) =>
  new Option('-o, --output <format>', 'output format').choices(choices).default(def);

export function registerSandboxCommands(program: CommandUnknownOpts): CommandUnknownOpts {
  const sandbox = program.command('sandbox').description('Sandboxes through the fast path API (the original fsb-ctl).');

  clientOptions(sandbox.command('run <name> [command...]'))
    .description('Create a sandbox (CreateSandbox); the command and its arguments follow the name.')
    .option('--image <image>', 'image (the process runtime runs the command; the image is recorded)')
    .option('--pool <pool>', 'SandboxPool')
    .addOption(new Option('--mode <mode>', 'consistency mode').choices(['fast', 'strong']))
    .option('--ports <ports>', 'exposed ports, comma-separated')
    .option('--env <k=v...>', 'environment, repeatable')
    .option('--workdir <dir>', 'working directory')
    .option(
      '-f, --file <path>',
      'a CreateRequest as YAML or JSON (fields of fastpath.v1.CreateRequest); flags override',
    )
    .action(async (name, command, flags) => {
      const fromFile = flags.file
        ? ((parseYaml(await readFile(String(flags.file), 'utf8')) as Record<string, unknown> | null) ?? {})
        : {};
      const req: Record<string, unknown> = { ...fromFile, name, namespace: flags.namespace };
      if (flags.image) req.image = flags.image;
      if (flags.pool) req.poolRef = flags.pool;
      if (flags.mode) req.consistencyMode = flags.mode === 'strong' ? 'STRONG' : 'FAST';
      if (flags.ports) req.exposedPorts = parsePorts(String(flags.ports));
      if (flags.workdir) req.workingDir = flags.workdir;
      if (flags.env) req.envs = parseLabels((flags.env as string[]).join(','));
      if (command.length) [req.command, req.args] = [[command[0]], command.slice(1)];
      const res = await withClient(flags, (c) => c.call<Record<string, unknown>>('CreateSandbox', req));
      print(res, 'yaml');
    });

  clientOptions(sandbox.command('list').alias('ls'))
    .description('List the sandboxes of a namespace (ListSandboxes).')
    .addOption(outputOption('table', ['table', 'json', 'yaml']))
    .action(async (flags) => {
      const res = await withClient(flags, (c) =>
        c.call<{ items: SandboxInfo[] }>('ListSandboxes', { namespace: flags.namespace }),
      );
      if (flags.output === 'table') console.log(table(res.items));
      else print(res.items, flags.output);
    });

  clientOptions(sandbox.command('get <name>'))
    .description('One sandbox (GetSandbox).')
    .addOption(outputOption('yaml', ['yaml', 'json']))
    .action(async (name, flags) => {
      const res = await withClient(flags, (c) =>
        c.call<SandboxInfo>('GetSandbox', { sandboxName: name, namespace: flags.namespace }),
      );
      print(res, flags.output);
    });

  clientOptions(sandbox.command('update <name>'))
    .description('Change a sandbox (UpdateSandbox; one call per setting given).')
    .option('--expire-time <when>', 'RFC 3339 time, a duration from now (30m, 2h), or 0 to remove the expiry')
    .addOption(new Option('--failure-policy <policy>', 'when its agent is lost').choices(['Manual', 'AutoRecreate']))
    .option('--recovery-timeout <seconds>', 'seconds an agent may be gone before the failure policy applies')
    .option('--labels <k=v[,k=v]>', 'labels to set')
    .action(async (name, flags) => {
      const base = { sandboxName: name, namespace: flags.namespace };
      const labels = flags.labels ? { labels: parseLabels(flags.labels) } : {};
      const updates: Record<string, unknown>[] = [];
      if (flags.expireTime !== undefined) updates.push({ expireTimeSeconds: expireTimeSeconds(flags.expireTime) });
      if (flags.failurePolicy)
        updates.push({ failurePolicy: flags.failurePolicy === 'AutoRecreate' ? 'AUTO_RECREATE' : 'MANUAL' });
      if (flags.recoveryTimeout !== undefined) {
        const n = Number(flags.recoveryTimeout);
        if (!Number.isInteger(n) || n < 0) throw new SandboxCliError('--recovery-timeout: a whole number of seconds');
        updates.push({ recoveryTimeoutSeconds: n });
      }
      if (updates.length === 0 && !flags.labels)
        throw new SandboxCliError(
          'nothing to update: give --expire-time, --failure-policy, --recovery-timeout or --labels',
        );
      await withClient(flags, async (c) => {
        for (const [i, u] of (updates.length ? updates : [{}]).entries()) {
          const res = await c.call<{ success: boolean; message: string }>('UpdateSandbox', {
            ...base,
            ...u,
            ...(i === 0 ? labels : {}),
          });
          if (!res.success) throw new SandboxCliError(`update refused: ${res.message}`);
        }
      });
      console.log(`sandbox ${flags.namespace}/${name} updated`);
    });

  clientOptions(sandbox.command('reset <name>'))
    .description('Restart a sandbox from scratch (UpdateSandbox reset_revision = now).')
    .action(async (name, flags) => {
      const res = await withClient(flags, (c) =>
        c.call<{ success: boolean; message: string }>('UpdateSandbox', {
          sandboxName: name,
          namespace: flags.namespace,
          resetRevision: new Date().toISOString(),
        }),
      );
      if (!res.success) throw new SandboxCliError(`reset refused: ${res.message}`);
      console.log(`sandbox ${flags.namespace}/${name} reset`);
    });

  clientOptions(sandbox.command('delete <name>').alias('rm'))
    .description('Delete a sandbox (DeleteSandbox).')
    .action(async (name, flags) => {
      const res = await withClient(flags, (c) =>
        c.call<{ success: boolean }>('DeleteSandbox', { sandboxName: name, namespace: flags.namespace }),
      );
      if (!res.success) throw new SandboxCliError(`delete refused for ${flags.namespace}/${name}`);
      console.log(`sandbox ${flags.namespace}/${name} deleted`);
    });
  clientOptions(sandbox.command('logs <name>'))
    .description("A sandbox's output (its stdout and stderr); -f follows it until the sandbox ends.")
    .option('-f, --follow', 'keep printing output as it comes')
    .action(async (name, flags) => {
      await streamOut(flags, 'StreamLogs', { sandboxName: name, namespace: flags.namespace, follow: !!flags.follow });
    });

  clientOptions(sandbox.command('exec <name> <command...>'))
    .description("Run a command in a sandbox's environment (put it after --); exits with the command's code.")
    .option('-i, --stdin', "send this command's stdin to it (read to its end first, at most 1 MiB); else it reads EOF")
    .action(async (name, command, flags) => {
      const stdin = flags.stdin ? await readInput() : undefined;
      const code = await streamOut(flags, 'Exec', { sandboxName: name, namespace: flags.namespace, command, stdin });
      process.exitCode = code ?? 1;
    });
  return program;
}
