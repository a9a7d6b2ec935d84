/**
 * How infrastructure binaries resolve, without building anything: the node's binaries (kubelet,
 * kube-proxy, CoreDNS) by their own variables and versions, from the cache when there, never
 * required by the plain stack; which Kubernetes binaries one build makes; the pause image's
 * cache slot and reference.
 */
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  cachedBinaryPath,
  ensureAllBinaries,
  ensureBinary,
  kubernetesBuildTargets,
  type ResolvedBinary,
} from '../../src/infra/binaries.js';
import { ensurePauseImage, pauseArchivePath } from '../../src/infra/pause-image.js';
import {
  INFRA_BINARIES,
  INFRA_VERSIONS,
  NODE_BINARIES,
  envVarOf,
  versionOf,
  type InfraBinary,
} from '../../src/infra/versions.js';

describe('node binaries', () => {
  it('are named by their own variables and pinned with the apiserver (kubelet, kube-proxy, kube-scheduler) or CoreDNS', () => {
    expect(NODE_BINARIES).toEqual(['kubelet', 'kube-proxy', 'kube-scheduler', 'coredns']);
    expect(NODE_BINARIES.map(envVarOf)).toEqual([
      'DO_KUBELET_BIN',
      'DO_KUBE_PROXY_BIN',
      'DO_KUBE_SCHEDULER_BIN',
      'DO_COREDNS_BIN',
    ]);
    expect(versionOf('kube-scheduler')).toBe(INFRA_VERSIONS.kubernetes);
    expect(versionOf('kubelet')).toBe(versionOf('kube-apiserver'));
    expect(versionOf('kube-proxy')).toBe(INFRA_VERSIONS.kubernetes);
    expect(versionOf('coredns')).toBe(INFRA_VERSIONS.coredns);
  });

  it('are not among what the plain stack requires', () => {
    expect(INFRA_BINARIES.filter((b) => NODE_BINARIES.includes(b))).toEqual([]);
  });
});

describe('which Kubernetes binaries one build makes', () => {
  const cachedOnly =
    (...cached: InfraBinary[]) =>
    (b: InfraBinary) =>
      cached.includes(b);

  it('the node binaries the cache lacks, never a cached control plane again', () => {
    expect(kubernetesBuildTargets('kubelet', cachedOnly('kube-apiserver', 'kube-controller-manager'))).toEqual([
      'kubelet',
      'kube-proxy',
      'kube-scheduler',
    ]);
    expect(kubernetesBuildTargets('kube-proxy', cachedOnly('kubelet'))).toEqual(['kube-proxy', 'kube-scheduler']);
    expect(kubernetesBuildTargets('kube-scheduler', cachedOnly('kubelet', 'kube-proxy'))).toEqual(['kube-scheduler']);
  });

  it('the control plane without the node binaries', () => {
    expect(kubernetesBuildTargets('kube-apiserver', cachedOnly())).toEqual([
      'kube-apiserver',
      'kube-controller-manager',
    ]);
    expect(kubernetesBuildTargets('kube-controller-manager', cachedOnly('kube-apiserver'))).toEqual([
      'kube-controller-manager',
    ]);
  });
});

describe('resolution from a cache of its own', () => {
  const saved = { ...process.env };
  let dir: string;

  // Nothing on PATH (so no go to build with), no downloads, no DO_*_BIN: only the cache can answer.
  beforeEach(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'infra-binaries-'));
    await mkdir(path.join(dir, 'empty-path'));
    for (const b of [...INFRA_BINARIES, ...NODE_BINARIES]) delete process.env[envVarOf(b)];
    Object.assign(process.env, {
      DO_CACHE_DIR: path.join(dir, 'cache'),
      PATH: path.join(dir, 'empty-path'),
      DO_NO_DOWNLOAD: '1',
    });
  });
  afterEach(async () => {
    process.env = { ...saved };
    await rm(dir, { recursive: true, force: true });
  });

  async function cache(...binaries: InfraBinary[]): Promise<void> {
    for (const b of binaries) {
      await mkdir(path.dirname(cachedBinaryPath(b)), { recursive: true });
      await writeFile(cachedBinaryPath(b), '#!/bin/sh\n', { mode: 0o755 });
    }
  }
  const quiet = () => {};

  it('starts the plain stack without any node binary', async () => {
    await cache(...INFRA_BINARIES);
    const all = await ensureAllBinaries(quiet);
    expect(Object.keys(all).sort()).toEqual([...INFRA_BINARIES].sort());
    expect(Object.values(all).map((r) => r.source)).toEqual(INFRA_BINARIES.map(() => 'cache'));
  });

  it('takes each node binary from its cache slot, keyed by version, without building', async () => {
    await cache(...NODE_BINARIES);
    for (const b of NODE_BINARIES) {
      expect(await ensureBinary(b, quiet)).toEqual<ResolvedBinary>({
        name: b,
        path: path.join(dir, 'cache', 'bin', `${b}-${versionOf(b)}`, b),
        version: versionOf(b),
        source: 'cache',
      });
    }
  });

  it('takes a node binary from its variable first', async () => {
    const own = path.join(dir, 'my-kube-proxy');
    await writeFile(own, '#!/bin/sh\necho Kubernetes v1.34.4\n', { mode: 0o755 });
    process.env.DO_KUBE_PROXY_BIN = own;
    expect(await ensureBinary('kube-proxy', quiet)).toMatchObject({ path: own, source: 'env', version: '1.34.4' });
  });

  it('says how to supply a node binary it cannot build', async () => {
    await expect(ensureBinary('coredns', quiet)).rejects.toThrow(/Cannot provide coredns .*DO_COREDNS_BIN=/s);
  });

  it('keeps the pause image by Kubernetes version and names it as kubeadm does', async () => {
    expect(pauseArchivePath()).toBe(
      path.join(dir, 'cache', 'images', `pause-${INFRA_VERSIONS.kubernetes}`, 'pause.oci.tar'),
    );
    await mkdir(path.dirname(pauseArchivePath()), { recursive: true });
    await writeFile(pauseArchivePath(), 'cached');
    expect(await ensurePauseImage(quiet)).toEqual({
      archive: pauseArchivePath(),
      reference: `registry.k8s.io/pause:${INFRA_VERSIONS.pause}`,
    });
  });
});
