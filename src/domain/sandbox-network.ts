/**
 * A sandbox's network, decided: the pool's egress policy, and the nftables ruleset an agent keeps
 * in its own network namespace (the agent Pod's; the node's in `npm run dev`) for the sandboxes it
 * wires. Pure: no I/O, unit-tested; `src/agent/network/` applies it.
 *
 * Each sandbox has a network namespace of its own, joined to the agent's by a point-to-point veth
 * (sandbox-netd, src/agent/netd): its own loopback, one address in the agent's sandbox subnet, a
 * default route through the agent's side. Everything a sandbox sends therefore crosses the agent's
 * namespace, where this table decides:
 * - to the agent's namespace itself (the agent's API, the node in dev): only replies;
 * - to another sandbox: never (its veth is in the same set);
 * - out: the pool's DNS servers on port 53, its allow-list, then `internet` (every address but the
 *   private, link-local, loopback, special and cluster ranges and the node's own) or `none`;
 * - IPv6: never (sandboxes have IPv4 only);
 * and exposed ports are forwarded from the agent's address (`podIP:port`) to the sandbox.
 * Matching is by the sandbox's host-side interface, not its source address, so a sandbox that
 * forges a source address (with CAP_NET_RAW) is held to the same policy.
 */
import ipaddr from 'ipaddr.js';

export const EGRESS_POLICIES = ['internet', 'none'] as const;
export type EgressMode = (typeof EGRESS_POLICIES)[number];

export interface EgressAllow {
  /** An IPv4 CIDR (`10.0.0.5/32`) or address. */
  cidr: string;
  /** TCP/UDP ports; none = every port. */
  ports?: number[];
}

export interface EgressPolicy {
  policy: EgressMode;
  allow: EgressAllow[];
  /** Resolvers the sandboxes use (their /etc/resolv.conf) and may reach on port 53. */
  dnsServers?: string[];
}

export const DEFAULT_EGRESS: EgressPolicy = { policy: 'internet', allow: [] };

/**
 * The sandboxes' subnet inside an agent's namespace: `auto` takes a free /24 of 198.18.0.0/16,
 * RFC 2544's benchmarking range, which no public network routes and clusters rarely use for Pods
 * or Services (a Pod IP inside it would be unreachable from the agent). SANDBOX_SUBNET changes it.
 */
export const DEFAULT_SANDBOX_SUBNET = 'auto';

/**
 * What `internet` never reaches: IANA's special-purpose IPv4 ranges that are not global —
 * this-network, RFC 1918, shared (CGNAT), loopback, link-local (the metadata endpoint
 * 169.254.169.254), IETF protocol assignments, benchmarking, multicast and reserved — plus what
 * the agent adds: the cluster's Pod and Service ranges and the node's own addresses. The
 * documentation ranges (192.0.2.0/24, 198.51.100.0/24, 203.0.113.0/24) are left to the deny list
 * of the operator: no public network routes them anyway.
 */
export const NON_PUBLIC_CIDRS = [
  '0.0.0.0/8',
  '10.0.0.0/8',
  '100.64.0.0/10',
  '127.0.0.0/8',
  '169.254.0.0/16',
  '172.16.0.0/12',
  '192.0.0.0/24',
  '192.168.0.0/16',
  '198.18.0.0/15',
  '224.0.0.0/4',
  '240.0.0.0/4',
];

/** An IPv4 CIDR (an address alone is a /32) in canonical form, or undefined. */
export function ipv4Cidr(s: string): string | undefined {
  try {
    const [addr, len] = s.includes('/') ? ipaddr.parseCIDR(s) : [ipaddr.parse(s), 32];
    if (addr.kind() !== 'ipv4') return undefined;
    const network = ipaddr.IPv4.networkAddressFromCIDR(`${addr.toString()}/${len}`);
    return `${network.toString()}/${len}`;
  } catch {
    return undefined;
  }
}

/** The pool's `egress` (or the agent's SANDBOX_EGRESS JSON) as a policy, or what is wrong with it. */
export function parseEgress(input: unknown): EgressPolicy | { error: string } {
  if (input === undefined || input === null || input === '') return DEFAULT_EGRESS;
  let value = input;
  if (typeof input === 'string') {
    try {
      value = JSON.parse(input);
    } catch {
      return { error: `egress is not JSON: ${input}` };
    }
  }
  const o = value as { policy?: unknown; allow?: unknown; dnsServers?: unknown };
  if (typeof o !== 'object' || o === null) return { error: 'egress must be an object' };
  const policy = o.policy ?? 'internet';
  if (!EGRESS_POLICIES.includes(policy as EgressMode))
    return { error: `egress.policy ${JSON.stringify(policy)} is not one of ${EGRESS_POLICIES.join(', ')}` };
  const allow: EgressAllow[] = [];
  for (const [i, a] of ((o.allow as unknown[] | undefined) ?? []).entries()) {
    const { cidr, ports } = (a ?? {}) as { cidr?: unknown; ports?: unknown };
    const c = typeof cidr === 'string' ? ipv4Cidr(cidr) : undefined;
    if (!c) return { error: `egress.allow[${i}].cidr ${JSON.stringify(cidr)} is not an IPv4 CIDR` };
    if (ports !== undefined) {
      if (!Array.isArray(ports) || ports.some((p) => !Number.isInteger(p) || p < 1 || p > 65535))
        return { error: `egress.allow[${i}].ports must be port numbers (1-65535)` };
    }
    allow.push({ cidr: c, ...(Array.isArray(ports) && ports.length ? { ports: ports as number[] } : {}) });
  }
  const dns = (o.dnsServers as unknown[] | undefined) ?? undefined;
  if (dns !== undefined) {
    if (!Array.isArray(dns)) return { error: 'egress.dnsServers must be a list of IPv4 addresses' };
    for (const d of dns)
      if (typeof d !== 'string' || ipv4Cidr(d) !== `${d}/32`)
        return { error: `egress.dnsServers: ${JSON.stringify(d)} is not an IPv4 address` };
  }
  return { policy: policy as EgressMode, allow, ...(dns ? { dnsServers: dns as string[] } : {}) };
}

/** One line for status and logs: `internet`, `none`, `internet +2 allowed`. */
export function describeEgress(p: EgressPolicy): string {
  return p.allow.length ? `${p.policy} +${p.allow.length} allowed` : p.policy;
}

/** The nameservers of a resolv.conf a sandbox can use (IPv4, not loopback: a sandbox's loopback is its own). */
export function usableNameservers(resolvConf: string): string[] {
  const out: string[] = [];
  for (const line of resolvConf.split('\n')) {
    const m = /^\s*nameserver\s+(\S+)/.exec(line);
    if (!m) continue;
    const c = ipv4Cidr(m[1]!);
    if (c && !c.startsWith('127.')) out.push(m[1]!);
  }
  return out;
}

export function resolvConf(servers: string[]): string {
  return servers.map((s) => `nameserver ${s}\n`).join('') + 'options ndots:1\n';
}

/** The addresses of an IPv4 subnet a sandbox network uses: the agent side's, and the range's. */
export function subnetGateway(subnet: string): string {
  const [addr] = ipaddr.parseCIDR(subnet);
  const bytes = (addr as ipaddr.IPv4).toByteArray();
  bytes[3] = (bytes[3] ?? 0) + 1;
  return bytes.join('.');
}

export interface WiredSandbox {
  /** Its host-side interface, in the agent's namespace. */
  hostIf: string;
  /** Its address. */
  ip: string;
  /** Its exposed TCP ports, forwarded from the agent's addresses. */
  ports: number[];
}

export interface RulesetInput {
  /** The nftables table (family inet) the agent owns. */
  table: string;
  /** The sandboxes' subnet (their source addresses, masqueraded on the way out). */
  subnet: string;
  /** Where exposed ports are reached (the Pod IP). */
  podIps: string[];
  policy: EgressPolicy;
  /** Beyond NON_PUBLIC_CIDRS: the cluster's Pod and Service ranges, the node's addresses. */
  denyCidrs: string[];
  sandboxes: WiredSandbox[];
}

const set = (items: string[]) => `{ ${items.join(', ')} }`;

/**
 * The agent's whole table, as one `nft -f` transaction that replaces what an earlier run left:
 * the rules, and the sets (sandbox interfaces, forwarded ports) filled with what runs now.
 */
export function nftRuleset(r: RulesetInput): string {
  const t = r.table;
  const ifaces = r.sandboxes.map((s) => JSON.stringify(s.hostIf));
  const ports = r.sandboxes.flatMap((s) => s.ports.map((p) => `${p} : ${s.ip}`));
  const dns = r.policy.dnsServers ?? [];
  const egress: string[] = [
    'ct state established,related accept',
    'meta nfproto ipv6 drop',
    'oifname @sandbox_ifs drop',
  ];
  if (dns.length) {
    egress.push(`ip daddr ${set(dns)} udp dport 53 accept`, `ip daddr ${set(dns)} tcp dport 53 accept`);
  }
  for (const a of r.policy.allow) {
    if (a.ports?.length) {
      egress.push(`ip daddr ${a.cidr} tcp dport ${set(a.ports.map(String))} accept`);
      egress.push(`ip daddr ${a.cidr} udp dport ${set(a.ports.map(String))} accept`);
    } else egress.push(`ip daddr ${a.cidr} accept`);
  }
  if (r.policy.policy === 'none') egress.push('drop');
  else {
    const deny = [...NON_PUBLIC_CIDRS, ...r.denyCidrs.map((c) => ipv4Cidr(c)).filter((c): c is string => !!c)];
    egress.push(`ip daddr ${set([...new Set(deny)])} drop`, 'accept');
  }
  const lines = [
    // Declared then deleted, so the file works whether the table exists or not: one transaction.
    `table inet ${t} {}`,
    `delete table inet ${t}`,
    `table inet ${t} {`,
    `  set sandbox_ifs { type ifname; ${ifaces.length ? `elements = ${set(ifaces)}; ` : ''}}`,
    `  set pod_ips { type ipv4_addr; ${r.podIps.length ? `elements = ${set(r.podIps)}; ` : ''}}`,
    `  map ports { type inet_service : ipv4_addr; ${ports.length ? `elements = ${set(ports)}; ` : ''}}`,
    '  chain prerouting {',
    '    type nat hook prerouting priority dstnat; policy accept;',
    '    ip daddr @pod_ips dnat ip to tcp dport map @ports',
    '  }',
    // Connections made from the agent's own namespace (the node's in dev) to podIP:port.
    '  chain output {',
    '    type nat hook output priority -100; policy accept;',
    '    ip daddr @pod_ips dnat ip to tcp dport map @ports',
    '  }',
    '  chain postrouting {',
    '    type nat hook postrouting priority srcnat; policy accept;',
    '    oifname @sandbox_ifs ip saddr 127.0.0.0/8 masquerade',
    `    ip saddr ${r.subnet} oifname != @sandbox_ifs masquerade`,
    '  }',
    '  chain input {',
    '    type filter hook input priority filter; policy accept;',
    '    iifname @sandbox_ifs ct state established,related accept',
    '    iifname @sandbox_ifs drop',
    '  }',
    '  chain forward {',
    '    type filter hook forward priority filter; policy accept;',
    '    iifname @sandbox_ifs jump egress',
    '  }',
    '  chain egress {',
    ...egress.map((l) => `    ${l}`),
    '  }',
    '}',
  ];
  return `${lines.join('\n')}\n`;
}

/** One sandbox's elements in the agent's table: its interface in `sandbox_ifs`, its ports in the map `ports`. */
export interface SandboxElements {
  ifnames: string[];
  ports: { port: number; ip: string }[];
}

/**
 * What a sandbox adds to (or removes from) the running table: all of it, or its ports only (a
 * warm sandbox's ports are known at hand-off, its interface long before).
 */
export function sandboxElements(s: WiredSandbox, part: 'all' | 'ports' = 'all'): SandboxElements {
  return {
    ifnames: part === 'all' ? [s.hostIf] : [],
    ports: s.ports.map((port) => ({ port, ip: s.ip })),
  };
}
