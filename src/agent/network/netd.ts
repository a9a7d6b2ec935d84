/**
 * The agent's end of `sandbox-netd` (src/agent/netd): one long-lived child that wires sandboxes'
 * network namespaces and their nftables elements through netlink, so a sandbox's life execs no
 * process for its network. JSON lines over its stdin/stdout, each request answered by id; requests
 * run concurrently in it. It is started at the first request; if it dies, what was asked of it
 * fails with why, and the next request starts it again. It ends when the agent closes its stdin
 * (or dies: the pipe closes).
 */
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { createInterface } from 'node:readline';

export interface NetdWire {
  op: 'wire';
  /** The namespace's name (`/run/netns/<netns>`). */
  netns: string;
  /** The container ID its address is leased to. */
  container: string;
  subnet: string;
  /** The address leases (host-local's layout: a file per address). */
  ipamDir: string;
  /** route_localnet on the host-side interface (loopback Pod IPs). */
  routeLocalnet?: boolean;
}

export interface NetdUnwire {
  op: 'unwire';
  netns: string;
  container: string;
  ipamDir: string;
}

export interface NetdElements {
  op: 'elements';
  /** The agent's table (family inet). */
  table: string;
  action: 'add' | 'delete';
  /** Interfaces of the set `sandbox_ifs`. */
  ifnames: string[];
  /** Elements of the map `ports` (the address only on add). */
  ports: { port: number; ip?: string }[];
}

export type NetdRequest = NetdWire | NetdUnwire | NetdElements;

interface Answer {
  id: number;
  error?: string;
  hostIf?: string;
  ip?: string;
}

interface Pending {
  resolve: (a: Answer) => void;
  reject: (e: Error) => void;
}

/** The last of its stderr kept for an error message. */
const STDERR_KEEP = 2048;

export class Netd {
  private child?: ChildProcessWithoutNullStreams;
  private readonly pending = new Map<number, Pending>();
  private nextId = 1;
  private stderr = '';
  private closed = false;

  constructor(readonly binary: string) {}

  /** The answer, or an Error saying which step failed (or that the helper could not run). */
  async request(req: NetdWire): Promise<{ hostIf: string; ip: string }>;
  async request(req: NetdUnwire | NetdElements): Promise<void>;
  async request(req: NetdRequest): Promise<{ hostIf: string; ip: string } | void> {
    if (this.closed) throw new Error('sandbox-netd: the agent is closing its network');
    const child = this.child ?? this.start();
    const id = this.nextId++;
    const answer = await new Promise<Answer>((resolve, reject) => {
      this.pending.set(id, { resolve, reject });
      this.refs();
      child.stdin.write(`${JSON.stringify({ id, ...req })}\n`);
    });
    if (answer.error) throw new Error(answer.error);
    if (req.op === 'wire') {
      if (!answer.hostIf || !answer.ip) throw new Error(`sandbox-netd answered no interface or address`);
      return { hostIf: answer.hostIf, ip: answer.ip };
    }
  }

  private start(): ChildProcessWithoutNullStreams {
    const child = spawn(this.binary, [], { stdio: ['pipe', 'pipe', 'pipe'] });
    this.child = child;
    this.stderr = '';
    let ended = false;
    const end = (why: string) => {
      if (ended) return;
      ended = true;
      if (this.child === child) this.child = undefined;
      const tail = this.stderr.trim();
      const err = new Error(`sandbox-netd (${this.binary}) ${why}${tail ? `: ${tail}` : ''}`);
      for (const p of this.pending.values()) p.reject(err);
      this.pending.clear();
    };
    child.on('error', (e) => end(`cannot run: ${e.message}`));
    // 'close', not 'exit': its stderr is read to the end by then.
    child.on('close', (code, signal) => end(`exited (${signal ?? `code ${code}`})`));
    child.stdin.on('error', () => undefined); // it died: 'exit' says so
    child.stderr.on('data', (c: Buffer) => {
      this.stderr = (this.stderr + c.toString('utf8')).slice(-STDERR_KEEP);
    });
    createInterface({ input: child.stdout }).on('line', (line) => {
      let a: Answer;
      try {
        a = JSON.parse(line) as Answer;
      } catch {
        return;
      }
      const p = this.pending.get(a.id);
      if (!p) return;
      this.pending.delete(a.id);
      this.refs();
      p.resolve(a);
    });
    return child;
  }

  /** Keeps the agent's event loop alive while a request waits, never for an idle helper. */
  private refs(): void {
    const c = this.child;
    if (!c) return;
    const busy = this.pending.size > 0;
    // Its pipes are sockets (what spawn makes for 'pipe').
    for (const h of [c, c.stdin, c.stdout, c.stderr] as { ref(): unknown; unref(): unknown }[]) {
      if (busy) h.ref();
      else h.unref();
    }
  }

  /** Ends it once what it has in hand is answered. */
  async close(): Promise<void> {
    this.closed = true;
    const c = this.child;
    if (!c || c.exitCode !== null || c.signalCode !== null) return;
    const exited = new Promise<void>((resolve) => c.once('close', () => resolve()));
    c.stdin.end();
    const timer = setTimeout(() => c.kill('SIGKILL'), 10_000);
    await exited;
    clearTimeout(timer);
  }
}
