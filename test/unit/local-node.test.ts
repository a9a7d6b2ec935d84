/**
 * The stack's node configuration (src/infra/node.ts): its network never overlaps a route the host
 * uses, and what its components are told (CRI, CNI, kubelet, kube-proxy, CoreDNS) keeps the node
 * to its own bridge, address and cgroups.
 */
import { parse } from 'yaml';
import { describe, expect, it } from 'vitest';
import { renderContainerdConfig } from '../../src/infra/containerd.js';
import {
  CLUSTER_DNS_IP,
  chooseNodeNetwork,
  clusterDnsObjects,
  overlapsAny,
  renderCniConflist,
  renderCorefile,
  renderKubeProxyConfig,
  renderKubeletConfig,
} from '../../src/infra/node.js';
import { otherNodeOwner } from '../../src/infra/node-stack.js';
import { COREDNS_PLUGINS } from '../../src/infra/versions.js';

describe('chooseNodeNetwork', () => {
  it('takes the first 10.244.N.0/24 no route of the host covers, and a bridge named by the stack’s directory', () => {
    const routes = [
      { dst: '10.244.0.0/24', dev: 'cni0' },
      { dst: '10.244.1.7/32', dev: 'eth1' },
    ];
    const net = chooseNodeNetwork('/srv/a/.state/test/cluster', routes);
    expect(net.podSubnet).toBe('10.244.2.0/24');
    expect(net.gateway).toBe('10.244.2.1');
    expect(net.bridge).toMatch(/^dob[0-9a-f]{8}$/);
    expect(net.bridge.length).toBeLessThanOrEqual(15);
    expect(chooseNodeNetwork('/srv/b/.state/test/cluster', routes).bridge).not.toBe(net.bridge);
  });
  it('keeps the subnet its own bridge already routes (an earlier run of the same stack)', () => {
    const first = chooseNodeNetwork('/srv/a', []);
    expect(chooseNodeNetwork('/srv/a', [{ dst: first.podSubnet, dev: first.bridge }]).podSubnet).toBe(first.podSubnet);
  });
  it('refuses when a wider route covers the whole range', () => {
    expect(() => chooseNodeNetwork('/srv/a', [{ dst: '10.0.0.0/8', dev: 'vpn0' }])).toThrow(/no free \/24/);
  });
  it('overlap: a host route inside, a wider route over, but not loopback or multicast', () => {
    expect(overlapsAny('10.244.3.0/24', ['10.244.3.9/32'])).toBe(true);
    expect(overlapsAny('10.244.3.0/24', ['10.0.0.0/8'])).toBe(true);
    expect(overlapsAny('10.244.3.0/24', ['10.244.4.0/24', '127.0.0.0/8'])).toBe(false);
  });
});

const net = { bridge: 'dob12345678', podSubnet: '10.244.5.0/24', gateway: '10.244.5.1' };

it('containerd: the pause image, the restricted oom_score_adj and the CNI directory belong to the CRI table itself', () => {
  const toml = renderContainerdConfig({
    root: '/s/root',
    state: '/s/state',
    socket: '/s/c.sock',
    dir: '/s',
    node: { sandboxImage: 'registry.k8s.io/pause:3.10.1', runcRoot: '/s/state/runc' },
  });
  // TOML puts a key under the last table header: these two must come before the CRI's sub-tables.
  const cri = toml.slice(toml.indexOf('[plugins."io.containerd.grpc.v1.cri"]'));
  const firstSubTable = cri.indexOf('[plugins."io.containerd.grpc.v1.cri".');
  expect(cri.indexOf('sandbox_image = "registry.k8s.io/pause:3.10.1"')).toBeLessThan(firstSubTable);
  expect(cri.indexOf('restrict_oom_score_adj = true')).toBeLessThan(firstSubTable);
  expect(toml).toContain('conf_dir = "/s/net.d"');
  expect(toml).toContain('Root = "/s/state/runc"');
  expect(renderContainerdConfig({ root: '/r', state: '/s', socket: '/c', dir: '/d' })).not.toContain('sandbox_image');
});

it('CNI: a veth on the stack’s bridge, an address of its subnet, leases under the stack’s directory, no masquerade', () => {
  const conf = JSON.parse(renderCniConflist(net, '/s/node/cni-ipam'));
  const bridge = conf.plugins[0];
  expect(bridge).toMatchObject({ type: 'bridge', bridge: net.bridge, isGateway: true, ipMasq: false });
  expect(bridge.ipam).toMatchObject({
    type: 'host-local',
    ranges: [[{ subnet: net.podSubnet, gateway: net.gateway }]],
    dataDir: '/s/node/cni-ipam',
  });
});

it('kubelet: cgroupfs on v1 allowed, its own cgroup root, the stack’s containerd, cluster DNS, no read-only port', () => {
  const c = parse(
    renderKubeletConfig({
      binary: 'kubelet',
      dir: '/s/node/kubelet',
      nodeName: 'local-node',
      network: net,
      kubeconfig: '/s/kubeconfig',
      containerdSocket: '/s/c.sock',
      port: 1,
      healthzPort: 2,
      cgroupRoot: '/durable-operators-x',
      logFile: '/dev/null',
    }),
  );
  expect(c).toMatchObject({
    failCgroupV1: false,
    cgroupDriver: 'cgroupfs',
    cgroupRoot: '/durable-operators-x',
    containerRuntimeEndpoint: 'unix:///s/c.sock',
    clusterDNS: [CLUSTER_DNS_IP],
    readOnlyPort: 0,
    address: net.gateway,
    authentication: { anonymous: { enabled: false } },
  });
});

it('kube-proxy: nftables, NodePorts on the node’s address only, the host’s conntrack left alone', () => {
  const c = parse(
    renderKubeProxyConfig({
      binary: 'kube-proxy',
      dir: '/s',
      nodeName: 'local-node',
      network: net,
      kubeconfig: '/k',
      healthzPort: 1,
      metricsPort: 2,
      logFile: '/dev/null',
    }),
  );
  expect(c).toMatchObject({ mode: 'nftables', nodePortAddresses: [`${net.gateway}/32`], conntrack: { maxPerCore: 0 } });
});

it('CoreDNS answers on the node’s address with plugins its build has; the kube-dns Service forwards port 53 to it', () => {
  const corefile = renderCorefile({
    binary: 'coredns',
    dir: '/s',
    network: net,
    kubeconfig: '/k',
    port: 10053,
    healthPort: 10054,
    logFile: '/dev/null',
  });
  expect(corefile).toContain(`bind ${net.gateway}`);
  expect(corefile).toMatch(/kubernetes cluster\.local/);
  // The stack's CoreDNS is built with exactly the plugins of the server block's directives.
  const directives = [...corefile.matchAll(/^ {4}([a-z_0-9]+)/gm)].map((m) => m[1]);
  expect(directives).toEqual(['bind', 'errors', 'health', 'kubernetes', 'forward', 'cache']);
  expect([...COREDNS_PLUGINS].sort()).toEqual(directives.sort());
  const [svc, slice] = clusterDnsObjects(net, 10053) as [
    { spec: { clusterIP: string; ports: { port: number; targetPort: number }[] } },
    { endpoints: { addresses: string[] }[] },
  ];
  expect(svc.spec.clusterIP).toBe(CLUSTER_DNS_IP);
  expect(svc.spec.ports.every((p) => p.port === 53 && p.targetPort === 10053)).toBe(true);
  expect(slice.endpoints[0]!.addresses).toEqual([net.gateway]);
});

it('one node per host: another live stack’s claim refuses, a stale one or our own does not', () => {
  const claim = { stackDir: '/a', pid: 42, startTime: '7' };
  expect(otherNodeOwner(claim, '/b', () => true)).toEqual(claim);
  expect(otherNodeOwner(claim, '/b', () => false)).toBeUndefined();
  expect(otherNodeOwner(claim, '/a', () => true)).toBeUndefined();
  expect(otherNodeOwner(undefined, '/b', () => true)).toBeUndefined();
});
