import { mkdir, mkdtemp, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { authForRef, pullSecretsAuth, registryHost } from '../../src/agent/containerd/pull-secrets.js';

const config = (auths: Record<string, unknown>) => JSON.stringify({ auths });

describe('image pull credentials from the pool’s docker config Secrets', () => {
  it.each([
    ['python:3.12', 'docker.io'],
    ['library/python', 'docker.io'],
    ['ghcr.io/acme/tool:1', 'ghcr.io'],
    ['127.0.0.1:5000/sandbox/busybox:1', '127.0.0.1:5000'],
    ['localhost/x', 'localhost'],
  ])('%s is pulled from %s', (ref, host) => {
    expect(registryHost(ref)).toBe(host);
  });

  it('picks the entry naming the image’s registry, Docker Hub under its legacy key too', () => {
    const configs = [
      config({ 'ghcr.io': { username: 'u', password: 'p' } }),
      config({ 'https://index.docker.io/v1/': { auth: 'dTpw' } }),
    ];
    expect(authForRef('ghcr.io/acme/tool:1', configs)).toEqual({ username: 'u', password: 'p' });
    expect(authForRef('python:3.12', configs)).toEqual({ auth: 'dTpw' });
    expect(authForRef('quay.io/x/y', configs)).toBeUndefined();
    expect(authForRef('ghcr.io/a/b', ['not json'])).toBeUndefined();
  });

  it('reads the mounted Secrets (kubelet layout, one directory each) at every pull: a rotation applies at once', async () => {
    const dir = await mkdtemp(path.join(tmpdir(), 'pull-secrets-'));
    try {
      const secret = path.join(dir, 'regcred');
      await mkdir(path.join(secret, '..data'), { recursive: true });
      await writeFile(
        path.join(secret, '..data', '.dockerconfigjson'),
        config({ 'reg.example:5000': { auth: 'old' } }),
      );
      await symlink('..data/.dockerconfigjson', path.join(secret, '.dockerconfigjson'));
      const auth = pullSecretsAuth(dir);
      expect(auth('reg.example:5000/app:1')).toEqual({ auth: 'old' });
      await writeFile(
        path.join(secret, '..data', '.dockerconfigjson'),
        config({ 'reg.example:5000': { auth: 'new' } }),
      );
      expect(auth('reg.example:5000/app:1')).toEqual({ auth: 'new' });
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
