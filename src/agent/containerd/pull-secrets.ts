/**
 * Registry credentials for pulls, from the pool's image pull Secrets (`kubernetes.io/dockerconfigjson`)
 * mounted in the agent Pod: every `.dockerconfigjson` (or `config.json`) under the directory, read
 * at each pull so a rotated Secret applies without a restart. The entry for an image is the one
 * whose key names the image's registry host, as the kubelet matches them.
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import type { RegistryAuth } from './images.js';

const CONFIG_FILES = new Set(['.dockerconfigjson', 'config.json']);

/** The registry host of an image reference (Docker Hub for a reference without one). */
export function registryHost(ref: string): string {
  const first = ref.split('/')[0]!;
  const hasHost = ref.includes('/') && (first.includes('.') || first.includes(':') || first === 'localhost');
  return hasHost ? first : 'docker.io';
}

/** The host a docker config key names (`https://index.docker.io/v1/` → `docker.io`, `reg:5000/path` → `reg:5000`). */
function keyHost(key: string): string {
  const host = key.replace(/^https?:\/\//, '').split('/')[0]!;
  return host === 'index.docker.io' || host === 'registry-1.docker.io' ? 'docker.io' : host;
}

/** The credentials for `ref` in docker config JSON documents (the first that names its host). */
export function authForRef(ref: string, configs: string[]): RegistryAuth | undefined {
  const host = registryHost(ref);
  for (const text of configs) {
    let auths: Record<string, { auth?: string; username?: string; password?: string }> = {};
    try {
      auths = (JSON.parse(text) as { auths?: typeof auths }).auths ?? {};
    } catch {
      continue; // not a docker config: the Secret's owner sees the pull fail with the registry's answer
    }
    for (const [key, entry] of Object.entries(auths))
      if (keyHost(key) === host)
        return {
          ...(entry.username ? { username: entry.username } : {}),
          ...(entry.password ? { password: entry.password } : {}),
          ...(entry.auth ? { auth: entry.auth } : {}),
        };
  }
  return undefined;
}

/** Reads the docker configs under `dir` (and its direct subdirectories, one per Secret). */
export function readDockerConfigs(dir: string): string[] {
  const out: string[] = [];
  const visit = (d: string, depth: number) => {
    let names: string[];
    try {
      names = readdirSync(d);
    } catch {
      return;
    }
    for (const name of names) {
      if (name.startsWith('..')) continue; // the kubelet's atomic-writer internals
      const p = path.join(d, name);
      const st = statSync(p, { throwIfNoEntry: false });
      if (st?.isDirectory() && depth === 0) visit(p, 1);
      else if (st?.isFile() && CONFIG_FILES.has(name)) out.push(readFileSync(p, 'utf8'));
    }
  };
  visit(dir, 0);
  return out;
}

/** The pull-auth callback of the image store: credentials from the Secrets mounted under `dir`. */
export function pullSecretsAuth(dir: string): (ref: string) => RegistryAuth | undefined {
  return (ref) => authForRef(ref, readDockerConfigs(dir));
}
