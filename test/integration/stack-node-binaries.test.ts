/**
 * What a real node in the stack runs, as `npm run infra` provides it (cache hits there): kubelet,
 * kube-proxy and CoreDNS report their pinned versions (kubelet's is checked against the
 * apiserver's skew), CoreDNS has every plugin the node's Corefile uses, runs that Corefile and
 * resolves a Service of the stack's apiserver, and the pause image imports into the stack's
 * containerd under the name CRI's `sandbox_image` gives it, and its /pause runs as the image's user.
 */
import { execFile, spawn } from 'node:child_process';
import { Resolver } from 'node:dns/promises';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import type { V1Service } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ensureBinary } from '../../src/infra/binaries.js';
import { ensurePauseImage, type PauseImage } from '../../src/infra/pause-image.js';
import { renderCorefile } from '../../src/infra/node.js';
import { getFreePort } from '../../src/infra/process.js';
import { COREDNS_PLUGINS, INFRA_VERSIONS, NODE_BINARIES, type InfraBinary } from '../../src/infra/versions.js';
import { eventually, kube, stackInfo, uniq } from '../support/env.js';

const run = promisify(execFile);

describe('node binaries', () => {
  const paths = {} as Record<InfraBinary, string>;
  beforeAll(async () => {
    for (const b of NODE_BINARIES) paths[b] = (await ensureBinary(b)).path;
  });

  it('kubelet and kube-proxy are the apiserver’s release', async () => {
    for (const b of ['kubelet', 'kube-proxy'] as const) {
      const { stdout } = await run(paths[b], ['--version']);
      expect(stdout.trim()).toBe(`Kubernetes v${INFRA_VERSIONS.kubernetes}`);
    }
  });

  it('CoreDNS is the pinned release, with every plugin the node’s Corefile uses', async () => {
    const { stdout } = await run(paths.coredns, ['-version']);
    expect(stdout.split('\n')[0]).toBe(`CoreDNS-${INFRA_VERSIONS.coredns}`);
    const plugins = (await run(paths.coredns, ['-plugins'])).stdout.split('\n').map((l) => l.trim());
    expect(plugins).toEqual(expect.arrayContaining([...COREDNS_PLUGINS]));
  });

  it('CoreDNS runs the node’s Corefile and answers for a Service of the stack’s apiserver', async () => {
    const service = await kube().get<V1Service>({
      apiVersion: 'v1',
      kind: 'Service',
      namespace: 'default',
      name: 'kubernetes',
    });
    const dir = await mkdtemp(path.join(tmpdir(), 'coredns-'));
    const [port, healthPort] = [await getFreePort(), await getFreePort()];
    const corefile = path.join(dir, 'Corefile');
    // Loopback in place of the node's bridge address; every directive as the node has it.
    const network = { bridge: 'unused', podSubnet: '127.0.0.0/24', gateway: '127.0.0.1' };
    await writeFile(
      corefile,
      renderCorefile({
        binary: paths.coredns,
        dir,
        network,
        kubeconfig: stackInfo().kubeconfig,
        port,
        healthPort,
        logFile: '/dev/null',
      }),
    );
    const coredns = spawn(paths.coredns, ['-conf', corefile], { stdio: 'ignore' });
    try {
      await eventually('CoreDNS healthy', async () => (await fetch(`http://127.0.0.1:${healthPort}/health`)).ok);
      const resolver = new Resolver();
      resolver.setServers([`127.0.0.1:${port}`]);
      // The kubernetes plugin answers once it has synced with the apiserver.
      const answer = await eventually('the Service resolved', () =>
        resolver.resolve4('kubernetes.default.svc.cluster.local'),
      );
      expect(answer).toEqual([service!.spec!.clusterIP]);
    } finally {
      coredns.kill('SIGTERM');
      await rm(dir, { recursive: true, force: true });
    }
  });
});

describe('pause image', () => {
  let pause: PauseImage;
  // A namespace of the test's own in the stack's containerd, removed afterwards.
  const namespace = uniq('pause-image');
  const ctr = (...args: string[]) =>
    run('ctr', ['--address', stackInfo().containerd!.socket, '--namespace', namespace, ...args]);

  beforeAll(async () => {
    pause = await ensurePauseImage();
  });
  afterAll(async () => {
    await ctr('images', 'rm', '--sync', pause.reference).catch(() => {});
    await ctr('namespaces', 'rm', namespace).catch(() => {});
  });

  it('imports under its sandbox_image name; /pause runs as 65535 and ends on SIGTERM', async () => {
    expect(pause.reference).toBe(`registry.k8s.io/pause:${INFRA_VERSIONS.pause}`);
    await ctr('images', 'import', '--base-name', 'registry.k8s.io/pause', pause.archive);
    expect((await ctr('images', 'ls', '--quiet')).stdout.split('\n')).toContain(pause.reference);

    const runcRoot = stackInfo().containerd!.runcRoot;
    const version = await ctr('run', '--rm', '--runc-root', runcRoot, pause.reference, uniq('pause'), '/pause', '-v');
    expect(version.stdout.trim()).toBe(`pause.c v${INFRA_VERSIONS.pause}`);

    // Its own entrypoint and user, as a sandbox gets it.
    const id = uniq('pause');
    await ctr('run', '--detach', '--runc-root', runcRoot, pause.reference, id);
    try {
      const task = async () => (await ctr('tasks', 'ls')).stdout.split('\n').find((l) => l.startsWith(`${id} `));
      const pid = Number((await task())!.split(/\s+/)[1]);
      // The task's process is `runc init` until it execs the entrypoint, which `ctr run --detach`
      // does not wait for (a loaded machine shows it).
      await eventually(
        '/pause exec’d',
        async () => (await readFile(`/proc/${pid}/cmdline`, 'utf8')) !== 'runc\0init\0',
      );
      expect(await readFile(`/proc/${pid}/cmdline`, 'utf8')).toBe('/pause\0');
      expect(await readFile(`/proc/${pid}/status`, 'utf8')).toMatch(/^Uid:\s+65535\s+65535\s+65535\s+65535$/m);
      await ctr('tasks', 'kill', '--signal', 'SIGTERM', id);
      await eventually('pause stopped on SIGTERM', async () => (await task())?.includes('STOPPED'));
    } finally {
      await ctr('tasks', 'rm', '--force', id).catch(() => {});
      await ctr('containers', 'rm', id).catch(() => {});
    }
  });
});
