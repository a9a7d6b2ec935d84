/**
 * The stack's containerd side: its own containerd answers on its socket, and the local registry
 * serves the two demo images as built. (The agent's containerd runtime is tested on its own.)
 */
import net from 'node:net';
import { describe, expect, it } from 'vitest';
import { stackInfo } from '../support/env.js';

const OCI_MANIFEST = 'application/vnd.oci.image.manifest.v1+json';

// The suite needs it (CI installs the tools and runs as root): a silently missing containerd fails here.
describe('containerd stack', () => {
  it('runs its own containerd, reachable on its socket', async () => {
    const { containerd } = stackInfo();
    expect(containerd).toBeDefined();
    expect(containerd!.namespace).toBe('k8s.io');
    expect(containerd!.socket).not.toMatch(/^\/run\/containerd\//);
    await new Promise<void>((resolve, reject) => {
      const conn = net.connect({ path: containerd!.socket }, () => {
        conn.destroy();
        resolve();
      });
      conn.once('error', reject);
    });
  });

  it('serves the demo images from the local registry', async () => {
    const { registry } = stackInfo();
    expect(registry).toBeDefined();
    const { host, images } = registry!;
    expect(images).toEqual({ busybox: `${host}/sandbox/busybox:1`, busyboxUser: `${host}/sandbox/busybox-user:1` });

    const get = (p: string, accept: string) => fetch(`http://${host}/v2/${p}`, { headers: { Accept: accept } });
    const configOf = async (repo: string) => {
      const res = await get(`${repo}/manifests/1`, OCI_MANIFEST);
      expect(res.status).toBe(200);
      expect(res.headers.get('content-type')).toBe(OCI_MANIFEST);
      const manifest = (await res.json()) as { config: { digest: string; mediaType: string } };
      const blob = await get(`${repo}/blobs/${manifest.config.digest}`, manifest.config.mediaType);
      return ((await blob.json()) as { config: Record<string, unknown> }).config;
    };

    expect(await configOf('sandbox/busybox')).toMatchObject({
      Entrypoint: ['/bin/sh', '-c'],
      Cmd: ['echo hello from the image; sleep 3600'],
      Env: ['PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin'],
      WorkingDir: '/',
      User: 'root',
    });
    expect(await configOf('sandbox/busybox-user')).toMatchObject({
      Entrypoint: ['/bin/sleep'],
      Cmd: ['3600'],
      Env: ['PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin', 'GREETING=from-image'],
      WorkingDir: '/home/app',
      User: 'app',
    });
  });
});
