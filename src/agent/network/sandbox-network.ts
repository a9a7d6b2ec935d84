/**
 * The agent's side of sandbox networking: a network namespace per sandbox container (a named one,
 * `/run/netns/<name>`, so runc and runsc both join it by path), wired by the node's own CNI plugins
 * (`ptp` with `host-local` addresses: a veth pair, an address, a default route — no netlink code
 * here), and one nftables table in the agent's namespace that enforces the pool's egress policy
 * and forwards exposed ports (the ruleset is decided in src/domain/sandbox-network.ts).
 *
 * Names: the namespace of container `c` is `<prefix>c`; the table is `table`. Both carry the
 * agent's tag, so the local stack finds and removes what its agents left (src/infra/host-network.ts).
 * The wiring runs as one shell process per sandbox (create the namespace, IPv6 off, loopback up,
 * CNI ADD); warm containers are wired when they are made, so a warm create pays none of it.
 */
import { execFile, spawn } from 'node:child_process';
import { existsSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { mkdir, readFile, readdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';
import {
  nftPortsUpdate,
  nftRuleset,
  nftSandboxUpdate,
  resolvConf,
  usableNameservers,
  type EgressPolicy,
  type WiredSandbox,
} from '../../domain/sandbox-network.js';

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
  /** Where the CNI plugins are (`ptp`, `host-local`). */
  cniPath: string;
  /** host-local's leases and the sandboxes' resolv.conf. */
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

/**
 * Creates the namespace, turns IPv6 off in it before any interface exists (a sandbox gets no
 * link-local address to reach the agent's side with), lets any user ping and bind any port in it
 * (what containerd ≥ 2.0's CRI sets for a Pod with a namespace of its own: neither needs a
 * capability then), brings its loopback up (runc does that only for namespaces it creates) and
 * runs the CNI plugin, whose JSON result is the script's output.
 */
const WIRE_SCRIPT = `set -e
ip netns add "$NETNS"
ip netns exec "$NETNS" sh -c 'echo 1 >/proc/sys/net/ipv6/conf/all/disable_ipv6; echo 1 >/proc/sys/net/ipv6/conf/default/disable_ipv6; echo 0 2147483647 >/proc/sys/net/ipv4/ping_group_range; echo 0 >/proc/sys/net/ipv4/ip_unprivileged_port_start; ip link set lo up' </dev/null
CNI_COMMAND=ADD CNI_CONTAINERID="$ID" CNI_NETNS="/run/netns/$NETNS" CNI_IFNAME=eth0 CNI_PATH="$CNI_PATH" exec "$CNI_PATH/ptp"
`;

/** CNI DEL (releases the address, removes the veth), then the namespace; each tolerates what is already gone. */
const UNWIRE_SCRIPT = `[ -e "/run/netns/$NETNS" ] && N="/run/netns/$NETNS" || N=""
CNI_COMMAND=DEL CNI_CONTAINERID="$ID" CNI_NETNS="$N" CNI_IFNAME=eth0 CNI_PATH="$CNI_PATH" "$CNI_PATH/ptp" >/dev/null || true
[ -z "$N" ] || ip netns delete "$NETNS"
`;

function run(script: string, env: Record<string, string>, input = ''): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn('sh', ['-c', script], {
      env: { PATH: process.env.PATH ?? '/usr/sbin:/usr/bin:/sbin:/bin', ...env },
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    const out: Buffer[] = [];
    const err: Buffer[] = [];
    child.stdout.on('data', (c: Buffer) => out.push(c));
    child.stderr.on('data', (c: Buffer) => err.push(c));
    child.on('error', reject);
    child.on('close', (code) => {
      const stdout = Buffer.concat(out).toString('utf8');
      if (code === 0) return resolve(stdout);
      // A CNI error is JSON on stdout ({code, msg, details}); a shell step's is on stderr.
      let message = Buffer.concat(err).toString('utf8').trim();
      try {
        const e = JSON.parse(stdout) as { msg?: string; details?: string };
        if (e.msg) message = `${e.msg}${e.details ? `: ${e.details}` : ''}`;
      } catch {
        /* not JSON */
      }
      reject(new Error(message || `exited with ${code}`));
    });
    child.stdin.end(input);
  });
}

async function nft(script: string): Promise<void> {
  if (!script) return;
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

  constructor(readonly opts: SandboxNetworkOptions) {
    this.resolvConfPath = path.join(opts.stateDir, 'resolv.conf');
    this.loopbackPodIp = opts.podIps.some((ip) => ip.startsWith('127.'));
  }

  /** The tools it needs, or what is missing (said at agent start, never at a create). */
  static missing(cniPath: string): string | undefined {
    for (const p of ['ptp', 'host-local'])
      if (!existsSync(path.join(cniPath, p)))
        return `the CNI plugin ${p} is not in ${cniPath} (install containernetworking-plugins, or set --cni-path)`;
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

  /** The containers host-local holds an address for (its lease files: `<ip>` → container ID, interface). */
  private async leasedContainers(): Promise<string[]> {
    const dir = path.join(this.opts.stateDir, 'ipam', this.opts.table);
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

  private cniConfig(): string {
    return JSON.stringify({
      cniVersion: '1.0.0',
      name: this.opts.table,
      type: 'ptp',
      ipMasq: false,
      ipam: {
        type: 'host-local',
        ranges: [[{ subnet: this.opts.subnet }]],
        routes: [{ dst: '0.0.0.0/0' }],
        dataDir: path.join(this.opts.stateDir, 'ipam'),
      },
    });
  }

  /** A new namespace for `containerId`, wired and under the policy; `ports` forwarded at once. */
  async wire(containerId: string, ports: number[] = []): Promise<Wiring> {
    const netns = this.netnsName(containerId);
    // A crash between two steps of an earlier create left this one's namespace: replaced.
    if (existsSync(this.netnsPath(containerId))) await this.unwire(containerId);
    const env = { NETNS: netns, ID: containerId, CNI_PATH: this.opts.cniPath };
    let result: { interfaces?: { name: string; sandbox?: string }[]; ips?: { address: string }[] };
    try {
      result = JSON.parse(await run(WIRE_SCRIPT, env, this.cniConfig())) as typeof result;
    } catch (err) {
      await this.unwire(containerId).catch(() => undefined);
      throw new Error(`cannot wire the sandbox's network namespace: ${(err as Error).message}`, { cause: err });
    }
    const hostIf = result.interfaces?.find((i) => !i.sandbox)?.name;
    const ip = result.ips?.[0]?.address.split('/')[0];
    if (!hostIf || !ip) {
      await this.unwire(containerId).catch(() => undefined);
      throw new Error(`the CNI plugin gave no interface or address: ${JSON.stringify(result)}`);
    }
    const sandbox: WiredSandbox = { hostIf, ip, ports };
    try {
      // Loopback Pod IPs (the local stack's agents): DNAT'd connections from the node keep their
      // 127.x source until masqueraded, which the kernel routes out only with route_localnet.
      if (this.loopbackPodIp) await writeFile(`/proc/sys/net/ipv4/conf/${hostIf}/route_localnet`, '1');
      await nft(nftSandboxUpdate(this.opts.table, sandbox, 'add'));
    } catch (err) {
      await this.unwire(containerId).catch(() => undefined);
      throw err;
    }
    this.wired.set(containerId, sandbox);
    return { netns, hostIf, ip };
  }

  /** Forwards a wired (warm) sandbox's exposed ports, now that it has a sandbox. */
  async expose(containerId: string, ports: number[]): Promise<void> {
    const w = this.wired.get(containerId);
    if (!w) throw new Error(`container ${containerId} has no network wired`);
    if (!ports.length) return;
    await nft(nftPortsUpdate(this.opts.table, w.ip, ports, 'add'));
    w.ports = ports;
  }

  /** Removes the sandbox's forwards, interface, address and namespace; what is already gone is fine. */
  async unwire(containerId: string): Promise<void> {
    const w = this.wired.get(containerId);
    if (w) {
      // Elements one at a time: one already gone must not keep the others.
      for (const line of nftSandboxUpdate(this.opts.table, w, 'delete').trim().split('\n'))
        await nft(`${line}\n`).catch(() => undefined);
    }
    await run(
      UNWIRE_SCRIPT,
      { NETNS: this.netnsName(containerId), ID: containerId, CNI_PATH: this.opts.cniPath },
      this.cniConfig(),
    );
    this.wired.delete(containerId);
  }

  /** The table goes (the agent is stopping and none of its sandboxes runs). */
  async close(): Promise<void> {
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
