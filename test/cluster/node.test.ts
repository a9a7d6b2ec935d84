/**
 * The stack's node is a real one: the kubelet runs Pods through the stack's containerd (CRI),
 * each in a network namespace of its own on the stack's bridge; Services reach their Pods through
 * kube-proxy and resolve through CoreDNS; Pods get their ServiceAccount token.
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { eventually, kube, uniq } from '../support/env.js';
import { node, podLogs, waitForPodReady } from '../support/cluster.js';
import { sandboxImage } from '../support/fastpath.js';

const k = kube();
const ns = uniq('node');

beforeAll(async () => {
  await k.core.createNamespace({ body: { metadata: { name: ns } } });
});
afterAll(async () => {
  await k.core.deleteNamespace({ name: ns }).catch(() => undefined);
});

function pod(name: string, script: string, labels: Record<string, string> = {}) {
  return {
    metadata: { name, namespace: ns, labels },
    spec: {
      terminationGracePeriodSeconds: 1,
      containers: [{ name: 'main', image: sandboxImage(), command: ['sh', '-c', script] }],
    },
  };
}

it('the kubelet runs a Pod in a network namespace of its own, with an address of the node’s Pod subnet', async () => {
  const n = node();
  const status = await k.core.readNode({ name: n.name });
  expect(status.status?.conditions?.find((c) => c.type === 'Ready')?.status).toBe('True');
  expect(status.status?.addresses?.find((a) => a.type === 'InternalIP')?.address).toBe(n.address);

  await k.core.createNamespacedPod({ namespace: ns, body: pod('addr', 'ip -o -4 addr; ip -o link; sleep 3600') });
  const running = await waitForPodReady(ns, 'addr');
  const ip = running.status!.podIP!;
  expect(ip.split('.').slice(0, 3).join('.')).toBe(n.podSubnet.split('.').slice(0, 3).join('.'));
  const out = await eventually(
    'the Pod’s interfaces in its log',
    async () => podLogs(ns, 'addr').includes('eth0') && podLogs(ns, 'addr'),
  );
  // Its own loopback and eth0 only: none of the host's interfaces (the bridge, the host's eth0 address).
  expect(out).toContain(`inet ${ip}/24`);
  expect(out).not.toContain(n.bridge);
  expect(out).not.toContain(`inet ${n.address}/`);
});

it('a Service resolves through cluster DNS and reaches its Pod through kube-proxy', async () => {
  await k.core.createNamespacedPod({
    namespace: ns,
    body: pod('web', 'mkdir -p /www && echo hello-from-web > /www/index.html && exec httpd -f -p 8080 -h /www', {
      app: 'web',
    }),
  });
  await k.core.createNamespacedService({
    namespace: ns,
    body: { metadata: { name: 'web' }, spec: { selector: { app: 'web' }, ports: [{ port: 80, targetPort: 8080 }] } },
  });
  await waitForPodReady(ns, 'web');
  const fqdn = `web.${ns}.svc.${node().clusterDomain}`;
  await k.core.createNamespacedPod({
    namespace: ns,
    body: pod(
      'client',
      `while true; do echo "via-name: $(printf 'GET / HTTP/1.0\\r\\n\\r\\n' | nc -w 2 ${fqdn} 80 | tail -1)"; sleep 1; done`,
    ),
  });
  await eventually('the client Pod reaching web by its Service name', async () =>
    podLogs(ns, 'client').includes('via-name: hello-from-web'),
  );
});

it('a Pod gets its ServiceAccount token and reaches the apiserver through the kubernetes Service', async () => {
  await k.core.createNamespacedPod({
    namespace: ns,
    body: pod(
      'sa',
      'wc -c < /var/run/secrets/kubernetes.io/serviceaccount/token | sed "s/^/token-bytes=/"; ' +
        'cat /var/run/secrets/kubernetes.io/serviceaccount/namespace | sed "s/^/sa-namespace=/"; echo; ' +
        'while true; do nc -w 2 $KUBERNETES_SERVICE_HOST $KUBERNETES_SERVICE_PORT </dev/null && echo apiserver-open; sleep 1; done',
    ),
  });
  await eventually('the Pod reaching the apiserver', async () => podLogs(ns, 'sa').includes('apiserver-open'));
  const out = podLogs(ns, 'sa');
  expect(Number(/token-bytes=(\d+)/.exec(out)?.[1])).toBeGreaterThan(100);
  expect(out).toContain(`sa-namespace=${ns}`);
});
