/**
 * A real agent process (the CLI role `agent`) on the stack's containerd, for tests that drive an
 * agent directly: its HTTP API with a fixed token (plain HTTP, `--insecure-plain-http`: the
 * fast path's mutual TLS is tested in sandbox-agent-identity), exec as a helper, and its logs
 * under the test's state directory.
 */
import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import type { AgentStatusReport, SandboxStatusReport } from '../../src/agent/api.js';
import { AgentClient, type AgentExecEvent } from '../../src/fastpath/agent-client.js';
import { ManagedProcess } from '../../src/infra/process.js';
import { REPO_ROOT, eventually, stackInfo } from './env.js';

export class AgentProcess {
  proc!: ManagedProcess;
  readonly url: string;
  readonly client: AgentClient;

  constructor(
    readonly name: string,
    /** The agent's address: its "Pod IP", where exposed ports are reached. */
    readonly host: string,
    readonly port: number,
    readonly stateDir: string,
    readonly token: string,
    readonly extra: string[] = [],
    /** Set over this process's environment. */
    readonly env: NodeJS.ProcessEnv = {},
  ) {
    this.url = `http://${host}:${port}`;
    this.client = new AgentClient(token, { insecurePlainHttp: true });
  }

  async start(): Promise<this> {
    const ctd = stackInfo().containerd!;
    const tokenFile = path.join(this.stateDir, `${this.name}.token`);
    await mkdir(this.stateDir, { recursive: true });
    await writeFile(tokenFile, this.token, { mode: 0o600 });
    this.proc = ManagedProcess.start({
      name: `agent-${this.name}`,
      command: process.execPath,
      args: [
        ...['--import', 'tsx', path.join(REPO_ROOT, 'src/cli/main.ts'), 'agent'],
        ...['--host', this.host, '--port', String(this.port), '--agent-id', this.name, '--capacity', '8'],
        ...['--token-file', tokenFile, '--kill-grace', '1000', '--insecure-plain-http'],
        ...['--runtime', 'containerd', '--containerd-socket', ctd.socket, '--containerd-namespace', ctd.namespace],
        ...['--io-dir', path.join(this.stateDir, 'io'), '--runtime-root', ctd.runcRoot],
        ...['--init-binary', ctd.initBinary],
        ...this.extra,
      ],
      cwd: REPO_ROOT,
      logFile: path.join(this.stateDir, `agent-${this.name}.log`),
      env: { ...process.env, ...this.env },
    });
    await eventually(`agent ${this.name} healthy`, async () => (await fetch(`${this.url}/healthz`)).ok, {
      timeoutMs: 60_000,
    });
    return this;
  }

  status(): Promise<AgentStatusReport> {
    return this.client.status(this.url);
  }

  async sandbox(id: string): Promise<SandboxStatusReport | undefined> {
    return (await this.status()).sandboxStatuses.find((s) => s.sandboxId === id);
  }

  async exec(
    id: string,
    command: string[],
    timeoutMs = 30_000,
    stdin?: Buffer,
  ): Promise<{ out: string; code: number | null }> {
    let out = '';
    let code: number | null = null;
    for await (const ev of this.client.exec(
      this.url,
      id,
      command,
      AbortSignal.timeout(timeoutMs),
      stdin,
    ) as AsyncIterable<AgentExecEvent>) {
      if ('stdout' in ev) out += ev.stdout.toString();
      else if ('stderr' in ev) out += ev.stderr.toString();
      else code = ev.exitCode;
    }
    return { out, code };
  }

  async stop(): Promise<void> {
    await this.proc?.stop(30_000);
  }
}
