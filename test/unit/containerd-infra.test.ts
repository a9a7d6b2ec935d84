/**
 * The pure parts of the stack's containerd side: the files written for containerd, its registry
 * hosts and the registry, the socket path rule, which mounts a stop unmounts, the image cache key
 * and how an image is built into the cache.
 */
import { spawnSync } from 'node:child_process';
import { mkdir, mkdtemp, readFile, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import {
  containerdSocketPath,
  mountPointsUnder,
  renderContainerdConfig,
  renderHostsToml,
  renderRunscWrapper,
} from '../../src/infra/containerd.js';
import { buildCached, busyboxVersion } from '../../src/infra/images.js';
import { renderRegistryConfig } from '../../src/infra/registry.js';

describe('containerd config', () => {
  const dir = '/srv/state/containerd';
  const config = renderContainerdConfig({
    root: `${dir}/root`,
    state: `${dir}/state`,
    socket: `${dir}/containerd.sock`,
    dir,
  });

  it('keeps root, state, both sockets and /opt under its directory', () => {
    expect(config).toMatch(/^version = 2\n/);
    expect(config).toContain(`root = "${dir}/root"`);
    expect(config).toContain(`state = "${dir}/state"`);
    expect(config).toContain(`[grpc]\n  address = "${dir}/containerd.sock"`);
    expect(config).toContain(`[ttrpc]\n  address = "${dir}/containerd.sock.ttrpc"`);
    expect(config).toContain(`[plugins."io.containerd.internal.v1.opt"]\n  path = "${dir}/opt"`);
    expect(config).not.toContain('/run/containerd');
    expect(config).not.toContain('/var/lib/containerd');
  });

  it('keeps CRI with the overlayfs snapshotter and its registry hosts in certs.d', () => {
    expect(config).not.toContain('disabled_plugins');
    expect(config).toContain('[plugins."io.containerd.grpc.v1.cri".containerd]\n    snapshotter = "overlayfs"');
    expect(config).toContain(`[plugins."io.containerd.grpc.v1.cri".registry]\n    config_path = "${dir}/certs.d"`);
  });

  it('quotes paths as TOML strings', () => {
    const odd = renderContainerdConfig({ root: '/a "b"\\c', state: '/s', socket: '/s.sock', dir: '/d' });
    expect(odd).toContain('root = "/a \\"b\\"\\\\c"');
  });

  it('sends pulls from a plain-HTTP registry to http://', () => {
    expect(renderHostsToml('127.0.0.1:5000')).toBe(
      'server = "http://127.0.0.1:5000"\n\n[host."http://127.0.0.1:5000"]\n  capabilities = ["pull", "resolve"]\n',
    );
  });

  it('wraps runsc with the flags this host needs', () => {
    expect(renderRunscWrapper('/usr/bin/runsc')).toBe(
      '#!/bin/sh\nexec /usr/bin/runsc --platform=ptrace --network=host "$@"\n',
    );
  });
});

describe('containerd socket path', () => {
  it('is in the directory when it fits a unix socket address', () => {
    expect(containerdSocketPath('/work/.state/test/containerd')).toBe('/work/.state/test/containerd/containerd.sock');
  });

  it('moves to a short per-directory path under /run when it does not', () => {
    const deep = `/home/someone/${'very-long-directory-name/'.repeat(4)}containerd`;
    const socket = containerdSocketPath(deep);
    expect(socket).toMatch(/^\/run\/durable-operators\/[0-9a-f]{16}\/containerd\.sock$/);
    expect(Buffer.byteLength(`${socket}.ttrpc`)).toBeLessThanOrEqual(107);
    expect(containerdSocketPath(deep)).toBe(socket);
    expect(containerdSocketPath(`${deep}2`)).not.toBe(socket);
  });
});

describe('mountPointsUnder', () => {
  const dir = '/s/containerd';
  const mounts = [
    'proc /proc proc rw 0 0',
    `overlay ${dir}/state/io.containerd.runtime.v2.task/k8s.io/a/rootfs overlay rw 0 0`,
    `shm ${dir}/state/x/shm tmpfs rw 0 0`,
    `overlay ${dir}/state/io.containerd.runtime.v2.task/k8s.io/with\\040space/rootfs overlay rw 0 0`,
    `tmpfs ${dir}-other/state tmpfs rw 0 0`,
    `tmpfs ${dir} tmpfs rw 0 0`,
    '',
  ].join('\n');

  it('lists the mounts at or under the directory, deepest first, unescaped', () => {
    const found = mountPointsUnder(mounts, dir);
    expect(found).toHaveLength(4);
    expect(found).toContain(`${dir}/state/io.containerd.runtime.v2.task/k8s.io/with space/rootfs`);
    expect(found.at(-2)).toBe(`${dir}/state/x/shm`);
    expect(found.at(-1)).toBe(dir);
  });
});

describe('registry config', () => {
  it('listens on loopback only and stores under the given directory', () => {
    const config = parse(renderRegistryConfig('/s/registry/storage', 5000)) as {
      version: string;
      http: { addr: string };
      storage: { filesystem: { rootdirectory: string } };
    };
    expect(config.version).toBe('0.1');
    expect(config.http.addr).toBe('127.0.0.1:5000');
    expect(config.storage.filesystem.rootdirectory).toBe('/s/registry/storage');
    expect(config).not.toHaveProperty('auth');
  });

  it('asks for basic auth (htpasswd) when given the file', () => {
    const config = parse(renderRegistryConfig('/s', 5000, '/s/htpasswd')) as { auth?: unknown };
    expect(config.auth).toEqual({ htpasswd: { realm: 'durable-operators', path: '/s/htpasswd' } });
  });
});

describe('busyboxVersion', () => {
  it('keys the image cache by the full build, file-name safe', () => {
    expect(busyboxVersion('BusyBox v1.35.0 (Debian 1:1.35.0-4+deb12u1+b1) multi-call binary.\nUsage: ...')).toBe(
      '1.35.0-debian-1-1.35.0-4-deb12u1-b1',
    );
    expect(busyboxVersion('BusyBox v1.36.1 multi-call binary.')).toBe('1.36.1');
    expect(() => busyboxVersion('sh: busybox: not found')).toThrow(/not a busybox banner/);
  });
});

describe('buildCached', () => {
  it('builds once into place, then hits; a failed build leaves nothing; a killed build is cleared by the next', async () => {
    const dir = await mkdtemp(path.join(tmpdir(), 'build-cached-'));
    try {
      const dest = path.join(dir, 'thing');
      await expect(
        buildCached(dest, async () => {
          throw new Error('boom');
        }),
      ).rejects.toThrow('boom');
      expect(await readdir(dir)).toEqual([]);

      // A process that is gone left its scratch directory behind.
      const dead = spawnSync('true').pid!;
      await mkdir(path.join(dir, `.build-${dead}-abc123`, 'half'), { recursive: true });
      const live = path.join(dir, `.build-${process.pid}-def456`);
      await mkdir(live);
      let builds = 0;
      const build = async (out: string) => {
        builds++;
        await writeFile(out, 'built');
      };
      expect(await buildCached(dest, build)).toBe(true);
      expect(await buildCached(dest, build)).toBe(false);
      expect(builds).toBe(1);
      expect(await readFile(dest, 'utf8')).toBe('built');
      // A build still under way (its process alive) is left alone.
      expect((await readdir(dir)).sort()).toEqual([path.basename(live), 'thing']);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
