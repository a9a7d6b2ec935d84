import { describe, expect, it } from 'vitest';
import {
  DEFAULT_EGRESS,
  NON_PUBLIC_CIDRS,
  describeEgress,
  ipv4Cidr,
  nftRuleset,
  parseEgress,
  resolvConf,
  sandboxElements,
  usableNameservers,
} from '../../src/domain/sandbox-network.js';

describe('egress policy', () => {
  it('defaults to internet with nothing extra allowed', () => {
    expect(parseEgress(undefined)).toEqual(DEFAULT_EGRESS);
    expect(parseEgress('')).toEqual(DEFAULT_EGRESS);
    expect(parseEgress({})).toEqual({ policy: 'internet', allow: [] });
  });

  it('reads the JSON the agent is given, canonicalising CIDRs', () => {
    expect(
      parseEgress(
        '{"policy":"none","allow":[{"cidr":"10.1.2.3/16","ports":[443]},{"cidr":"10.9.9.9"}],"dnsServers":["10.0.0.10"]}',
      ),
    ).toEqual({
      policy: 'none',
      allow: [{ cidr: '10.1.0.0/16', ports: [443] }, { cidr: '10.9.9.9/32' }],
      dnsServers: ['10.0.0.10'],
    });
  });

  it('refuses what it cannot enforce, naming the field', () => {
    expect(parseEgress({ policy: 'open' })).toEqual({ error: 'egress.policy "open" is not one of internet, none' });
    expect(parseEgress({ allow: [{ cidr: 'fd00::/8' }] })).toEqual({
      error: 'egress.allow[0].cidr "fd00::/8" is not an IPv4 CIDR',
    });
    expect(parseEgress({ allow: [{ cidr: '10.0.0.0/8', ports: [0] }] })).toEqual({
      error: 'egress.allow[0].ports must be port numbers (1-65535)',
    });
    expect(parseEgress({ dnsServers: ['10.0.0.0/8'] })).toEqual({
      error: 'egress.dnsServers: "10.0.0.0/8" is not an IPv4 address',
    });
    expect(parseEgress('{')).toMatchObject({ error: expect.stringContaining('not JSON') });
  });

  it('says itself in one word for -o wide and logs', () => {
    expect(describeEgress(DEFAULT_EGRESS)).toBe('internet');
    expect(describeEgress({ policy: 'none', allow: [{ cidr: '10.0.0.1/32' }] })).toBe('none +1 allowed');
  });

  it('CIDRs are IPv4 only, an address is a /32', () => {
    expect(ipv4Cidr('169.254.169.254')).toBe('169.254.169.254/32');
    expect(ipv4Cidr('10.1.2.3/8')).toBe('10.0.0.0/8');
    expect(ipv4Cidr('::1')).toBeUndefined();
    expect(ipv4Cidr('nope')).toBeUndefined();
  });
});

describe('DNS', () => {
  it("uses the agent's resolvers a sandbox can reach (never a loopback one: the sandbox's loopback is its own)", () => {
    expect(usableNameservers('search x\nnameserver 127.0.0.53\nnameserver 10.96.0.10\nnameserver fd00::1\n')).toEqual([
      '10.96.0.10',
    ]);
    expect(resolvConf(['10.96.0.10'])).toBe('nameserver 10.96.0.10\noptions ndots:1\n');
  });
});

describe('the nftables ruleset', () => {
  const base = {
    table: 'fsb_t_abc',
    subnet: '198.18.0.0/24',
    podIps: ['10.244.1.7'],
    denyCidrs: ['10.96.0.0/12', '192.0.2.2'],
    sandboxes: [{ hostIf: 'veth1', ip: '198.18.0.2', ports: [8080, 9090] }],
  };

  it('replaces the whole table in one transaction, with what runs now', () => {
    const rs = nftRuleset({ ...base, policy: DEFAULT_EGRESS });
    expect(rs.startsWith('table inet fsb_t_abc {}\ndelete table inet fsb_t_abc\ntable inet fsb_t_abc {')).toBe(true);
    expect(rs).toContain('elements = { "veth1" }');
    expect(rs).toContain('elements = { 8080 : 198.18.0.2, 9090 : 198.18.0.2 }');
    expect(rs).toContain('ip daddr @pod_ips dnat ip to tcp dport map @ports');
  });

  it('keeps sandboxes out of the agent and of each other, and off IPv6, whatever the policy', () => {
    for (const policy of [DEFAULT_EGRESS, { policy: 'none' as const, allow: [] }]) {
      const rs = nftRuleset({ ...base, policy });
      expect(rs).toContain('iifname @sandbox_ifs ct state established,related accept\n    iifname @sandbox_ifs drop');
      // First in the chain, before anything the policy allows.
      const egress = rs
        .slice(rs.indexOf('chain egress'))
        .split('\n')
        .map((l) => l.trim());
      expect(egress.slice(1, 4)).toEqual([
        'ct state established,related accept',
        'meta nfproto ipv6 drop',
        'oifname @sandbox_ifs drop',
      ]);
    }
  });

  it('internet: every non-public range, the cluster ranges and the node denied, then the rest allowed', () => {
    const rs = nftRuleset({ ...base, policy: DEFAULT_EGRESS });
    const deny = /ip daddr \{ ([^}]*) \} drop\n {4}accept\n/.exec(rs)?.[1]?.split(', ');
    expect(deny).toEqual([...NON_PUBLIC_CIDRS, '10.96.0.0/12', '192.0.2.2/32']);
    expect(deny).toContain('169.254.0.0/16');
  });

  it('none: only the allow-list and the given DNS servers, before anything is dropped', () => {
    const rs = nftRuleset({
      ...base,
      policy: { policy: 'none', allow: [{ cidr: '10.1.0.0/16', ports: [443] }], dnsServers: ['10.96.0.10'] },
    });
    const egress = rs.slice(rs.indexOf('chain egress'));
    expect(egress).toContain('ip daddr { 10.96.0.10 } udp dport 53 accept');
    expect(egress).toContain('ip daddr 10.1.0.0/16 tcp dport { 443 } accept');
    expect(egress.trimEnd().endsWith('drop\n  }\n}')).toBe(true);
    expect(egress).not.toContain('ip daddr { 0.0.0.0/8');
  });

  it('a sandbox is added and removed by its interface and ports only', () => {
    const s = { hostIf: 'veth9', ip: '198.18.0.9', ports: [80] };
    expect(sandboxElements(s)).toEqual({ ifnames: ['veth9'], ports: [{ port: 80, ip: '198.18.0.9' }] });
    expect(sandboxElements(s, 'ports')).toEqual({ ifnames: [], ports: [{ port: 80, ip: '198.18.0.9' }] });
  });
});
