/**
 * The agent's side of sandbox networking: a network namespace per sandbox container (a named one,
 * `/run/netns/<name>`, so runc and runsc both join it by path) joined to the agent's by a veth
 * pair, with an address of the agent's sandbox subnet and a default route through the agent's
 * side; and one nftables table in the agent's namespace that enforces the pool's egress policy
 * and forwards exposed ports (the ruleset is decided in src/domain/sandbox-network.ts).
 *
 * Names: the namespace of container `c` is `<prefix>c`; the table is `table`. Both carry the
 * agent's tag, so the local stack finds and removes what its agents left (cleanupSandboxNetworks).
 * A sandbox's wiring and its elements in the table are made by sandbox-netd (./netd.ts), one
 * long-lived helper: no process is started per sandbox. The table itself is loaded with `nft -f`
 * once at the agent's start. Warm containers are wired when they are made, so a warm create pays
 * none of it.
 */
import { execFile } from 'node:child_process';
import { existsSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { mkdir, readFile, readdir } from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';
import {
  nftRuleset,
  resolvConf,
  sandboxElements,
  usableNameservers,
  type EgressPolicy,
  type WiredSandbox,
} from '../../domain/sandbox-network.js';
import { Netd } from './netd.js';

const execFileP = promisify(execFile);

export interface SandboxNetworkOptions {
  /** Prefix of the namespaces' names (`fsb-<tag>-`). */
  prefix: string;
  /** The agent's nftables table (family inet). */
  table: string;
  /** The sandboxes' IPv4 subnet (a /24 holds 253 sandboxes). */
  subnet: string;
  /** Where exposed ports are reached: the agent's (Pod's) addresses. */
  podIps: string[];
  policy: EgressPolicy;
  /** Denied besides the non-public ranges: the cluster's ranges, the node's addresses. */
  denyCidrs: string[];
  /** sandbox-netd, the helper that wires the namespaces (src/agent/netd). */
  netdBinary: string;
  /** The address leases and the sandboxes' resolv.conf. */
  stateDir: string;
  /** Called once the table is gone (the subnet's claim is released). */
  onClose?: () => void;
}

/** A sandbox's wiring, as labelled on its container (so a restarted agent knows it again). */
export interface Wiring {
  netns: string;
  hostIf: string;
  ip: string;
}

/** Loads a whole ruleset (the table, at the agent's start). */
async function nft(script: string): Promise<void> {
  await new Promise<void>((resolve, reject) => {
    const child = execFile('nft', ['-f', '-'], (err, _out, stderr) =>
      err ? reject(new Error(`nft: ${stderr.trim() || err.message}`)) : resolve(),
    );
    child.stdin!.end(script);
  });
}

export class SandboxNetwork {
  /** What runs now, by container ID (the table's sets hold the same). */
  private readonly wired = new Map<string, WiredSandbox>();
  readonly resolvConfPath: string;
  private readonly loopbackPodIp: boolean;

  private readonly netd: Netd;
  /** host-local's layout, which the leases keep: `<stateDir>/ipam/<network name>/<ip>`. */
  private readonly ipamDir: string;

  constructor(readonly opts: SandboxNetworkOptions) {
    this.resolvConfPath = path.join(opts.stateDir, 'resolv.conf');
    this.loopbackPodIp = opts.podIps.some((ip) => ip.startsWith('127.'));
    this.netd = new Netd(opts.netdBinary);
    this.ipamDir = path.join(opts.stateDir, 'ipam', opts.table);
  }

  /** What it needs and is missing (said at agent start, never at a create). */
  static missing(netdBinary: string): string | undefined {
    if (!existsSync(netdBinary))
      return `sandbox-netd, which wires them, is not at ${netdBinary} (--netd-binary or DO_SANDBOX_NETD)`;
    return undefined;
  }

  /** The DNS servers sandboxes are given: the pool's, else (under `internet`) the agent's own. */
  private dnsServers(): string[] {
    const { policy } = this.opts;
    if (policy.dnsServers) return policy.dnsServers;
    if (policy.policy === 'none') return [];
    try {
      return usableNameservers(readFileSync('/etc/resolv.conf', 'utf8'));
    } catch {
      return [];
    }
  }

  /**
   * Installs the table (replacing an earlier run's) with the sandboxes that still run, and
   * releases what an earlier run wired for containers that are gone (their addresses, namespaces).
   */
  async start(running: Map<string, WiredSandbox>): Promise<void> {
    await mkdir(this.opts.stateDir, { recursive: true, mode: 0o700 });
    for (const id of await this.leasedContainers()) if (!running.has(id)) await this.unwire(id);
    const dns = this.dnsServers();
    writeFileSync(this.resolvConfPath, resolvConf(dns), { mode: 0o644 });
    for (const [id, w] of running) this.wired.set(id, w);
    await nft(
      nftRuleset({
        table: this.opts.table,
        subnet: this.opts.subnet,
        podIps: this.opts.podIps,
        policy: { ...this.opts.policy, dnsServers: dns },
        denyCidrs: this.opts.denyCidrs,
        sandboxes: [...this.wired.values()],
      }),
    );
  }

  /** The containers an address is leased to (the lease files: `<ip>` → container ID, interface). */
  private async leasedContainers(): Promise<string[]> {
    const dir = this.ipamDir;
    const files = await readdir(dir).catch(() => [] as string[]);
    const ids = await Promise.all(
      files
        .filter((f) => /^\d+\.\d+\.\d+\.\d+$/.test(f))
        .map((f) => readFile(path.join(dir, f), 'utf8').then((t) => t.split(/\r?\n/)[0]!.trim())),
    );
    return [...new Set(ids.filter(Boolean))];
  }

  netnsName(containerId: string): string {
    return `${this.opts.prefix}${containerId}`;
  }

  netnsPath(containerId: string): string {
    return `/run/netns/${this.netnsName(containerId)}`;
  }

  /** A new namespace for `containerId`, wired and under the policy; `ports` forwarded at once. */
  async wire(containerId: string, ports: number[] = []): Promise<Wiring> {
    const netns = this.netnsName(containerId);
    const req = { netns, container: containerId, ipamDir: this.ipamDir };
    if (this.wired.has(containerId)) await this.unwire(containerId);
    let wired: { hostIf: string; ip: string };
    try {
      // What a crash between two steps of an earlier create left under this name is replaced.
      wired = await this.netd.request({
        op: 'wire',
        ...req,
        subnet: this.opts.subnet,
        routeLocalnet: this.loopbackPodIp,
      });
    } catch (err) {
      await this.netd.request({ op: 'unwire', ...req }).catch(() => undefined);
      throw new Error(`cannot wire the sandbox's network namespace: ${(err as Error).message}`, { cause: err });
    }
    const sandbox: WiredSandbox = { ...wired, ports };
    try {
      await this.netd.request({ op: 'elements', table: this.opts.table, action: 'add', ...sandboxElements(sandbox) });
    } catch (err) {
      await this.netd.request({ op: 'unwire', ...req }).catch(() => undefined);
      throw new Error(`cannot put the sandbox under its policy: ${(err as Error).message}`, { cause: err });
    }
    this.wired.set(containerId, sandbox);
    return { netns, ...wired };
  }

  /** Forwards a wired (warm) sandbox's exposed ports, now that it has a sandbox. */
  async expose(containerId: string, ports: number[]): Promise<void> {
    const w = this.wired.get(containerId);
    if (!w) throw new Error(`container ${containerId} has no network wired`);
    if (!ports.length) return;
    await this.netd.request({
      op: 'elements',
      table: this.opts.table,
      action: 'add',
      ...sandboxElements({ ...w, ports }, 'ports'),
    });
    w.ports = ports;
  }

  /** Removes the sandbox's forwards, interface, address and namespace; what is already gone is fine. */
  async unwire(containerId: string): Promise<void> {
    const w = this.wired.get(containerId);
    // Elements one at a time (sandbox-netd does so): one already gone must not keep the others.
    if (w)
      await this.netd
        .request({ op: 'elements', table: this.opts.table, action: 'delete', ...sandboxElements(w) })
        .catch(() => undefined);
    await this.netd.request({
      op: 'unwire',
      netns: this.netnsName(containerId),
      container: containerId,
      ipamDir: this.ipamDir,
    });
    this.wired.delete(containerId);
  }

  /** The table goes (the agent is stopping and none of its sandboxes runs). */
  async close(): Promise<void> {
    await this.netd.close();
    await execFileP('nft', ['delete', 'table', 'inet', this.opts.table]).catch(() => undefined);
    this.opts.onClose?.();
  }
}

/**
 * What the agents on one node (tag) left behind once their containers are gone: their tables and
 * the sandboxes' namespaces (the veths go with them). The local stack runs it when it stops and
 * when it starts again after a crash.
 */
export async function cleanupSandboxNetworks(tag: string): Promise<void> {
  const { stdout } = await execFileP('nft', ['list', 'tables']).catch(() => ({ stdout: '' }));
  for (const m of stdout.matchAll(/^table inet (fsb_(\S+))$/gm))
    if (m[2]!.startsWith(`${tag}_`)) await execFileP('nft', ['delete', 'table', 'inet', m[1]!]).catch(() => undefined);
  let names: string[] = [];
  try {
    names = readdirSync('/run/netns');
  } catch {
    return;
  }
  for (const name of names.filter((n) => n.startsWith(`fsb-${tag}-`)))
    await execFileP('ip', ['netns', 'delete', name]).catch(() => undefined);
}
