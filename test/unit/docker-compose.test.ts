/**
 * docker-compose.yml and the Dockerfile, checked structurally (no Docker engine here): the
 * services users need exist and are wired to each other, start-up ordering waits on things that
 * can actually report health, and the search attributes the workflows set are the ones the
 * one-shot service registers.
 */
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { APP_RECIPE, DEBIAN_SUITE } from '../../src/infra/project-image.js';
import { INFRA_VERSIONS } from '../../src/infra/versions.js';
import { SEARCH_ATTRIBUTE_DEFINITIONS } from '../../src/temporal/search-attributes.js';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

type Environment = Record<string, string> | string[];
interface Service {
  image?: string;
  build?: string | { context?: string; dockerfile?: string };
  command?: string | string[];
  entrypoint?: string | string[];
  environment?: Environment;
  ports?: (string | number | { published?: string | number; target?: number; host_ip?: string })[];
  volumes?: (string | { type?: string; source?: string; target?: string })[];
  depends_on?: string[] | Record<string, { condition?: string }>;
  healthcheck?: { test?: string | string[]; disable?: boolean };
  restart?: string;
}
interface Compose {
  services: Record<string, Service>;
  volumes?: Record<string, unknown>;
}

function loadCompose(file = path.join(ROOT, 'docker-compose.yml')): Compose {
  return parse(readFileSync(file, 'utf8')) as Compose;
}

function envOf(svc: Service): Record<string, string> {
  const env = svc.environment ?? {};
  if (!Array.isArray(env)) return Object.fromEntries(Object.entries(env).map(([k, v]) => [k, String(v)]));
  return Object.fromEntries(
    env.map((e) => {
      const i = e.indexOf('=');
      return i < 0 ? [e, ''] : [e.slice(0, i), e.slice(i + 1)];
    }),
  );
}

function dependencies(svc: Service): { name: string; condition: string }[] {
  const deps = svc.depends_on ?? [];
  if (Array.isArray(deps)) return deps.map((name) => ({ name, condition: 'service_started' }));
  return Object.entries(deps).map(([name, d]) => ({ name, condition: d?.condition ?? 'service_started' }));
}

function hasHealthcheck(svc: Service): boolean {
  const t = svc.healthcheck?.test;
  if (!t || svc.healthcheck?.disable) return false;
  return Array.isArray(t) ? (t[0] === 'CMD' || t[0] === 'CMD-SHELL') && t.length > 1 : t.trim() !== '' && t !== 'NONE';
}

/** Host side of each published port, as `<ip>:<port>/<proto>` (ip empty = all interfaces). */
function publishedPorts(svc: Service): string[] {
  const out: string[] = [];
  for (const p of svc.ports ?? []) {
    if (typeof p === 'object') {
      if (p.published !== undefined) out.push(`${p.host_ip ?? ''}:${p.published}/tcp`);
      continue;
    }
    const [spec, proto = 'tcp'] = String(p).split('/');
    const parts = spec!.split(':');
    if (parts.length === 1) continue; // container port only: Docker picks a free host port
    const hostPort = parts[parts.length - 2]!;
    const ip = parts.length === 3 ? parts[0]! : '';
    out.push(`${ip}:${hostPort}/${proto}`);
  }
  return out;
}

/**
 * Compose interpolates `$VAR` and `${VAR}` in the file with the *host's* environment; a shell
 * script meant to see `$VAR` at run time must write `$$VAR`. Returns the script as the shell
 * will receive it, or throws when a single `$` would be interpolated by Compose.
 */
function unescapeComposeScript(script: string): string {
  if (script.replaceAll('$$', '').includes('$'))
    throw new Error(`unescaped $ (Compose would interpolate it): ${script}`);
  return script.replaceAll('$$', '$');
}

const compose = loadCompose();
const services = compose.services;

describe('docker-compose.yml', () => {
  it('has the services a user needs', () => {
    for (const name of ['postgresql', 'temporal', 'temporal-ui', 'etcd', 'worker', 'watcher', 'search-attributes']) {
      expect(services, `service ${name}`).toHaveProperty(name);
    }
  });

  it('pins every image to a tag (never :latest)', () => {
    for (const [name, svc] of Object.entries(services)) {
      if (svc.build && !svc.image) continue;
      expect(svc.image, `${name}.image`).toMatch(/^[^\s]+:[\w][\w.-]*$/);
      expect(svc.image, `${name}.image`).not.toMatch(/:latest$/);
    }
  });

  it('uses etcd v3.6, the series the local stack pins', () => {
    expect(INFRA_VERSIONS.etcd).toMatch(/^3\.6\./);
    expect(services.etcd!.image).toMatch(/^quay\.io\/coreos\/etcd:v3\.6\.\d+$/);
  });

  it('persists Temporal in the postgresql service', () => {
    const env = envOf(services.temporal!);
    expect(env.DB).toMatch(/^postgres/);
    expect(env.POSTGRES_SEEDS).toBe('postgresql');
    expect(env.POSTGRES_USER).toBe(envOf(services.postgresql!).POSTGRES_USER);
    expect(env.POSTGRES_PWD).toBe(envOf(services.postgresql!).POSTGRES_PASSWORD);
  });

  it('serves the Web UI on 8080, talking to the temporal service', () => {
    expect(services['temporal-ui']!.image).toMatch(/^temporalio\/ui:/);
    expect(publishedPorts(services['temporal-ui']!)).toContain(':8080/tcp');
    expect(envOf(services['temporal-ui']!).TEMPORAL_ADDRESS).toBe('temporal:7233');
  });

  describe.each(['worker', 'watcher'])('%s', (role) => {
    const svc = services[role]!;

    it('is built from the repository Dockerfile', () => {
      const build = typeof svc.build === 'string' ? { context: svc.build } : svc.build;
      expect(build, `${role}.build`).toBeDefined();
      const context = path.resolve(ROOT, build!.context ?? '.');
      expect(context).toBe(ROOT);
      expect(existsSync(path.join(context, build!.dockerfile ?? 'Dockerfile'))).toBe(true);
      expect(build!.dockerfile ?? 'Dockerfile').toBe('Dockerfile');
    });

    it(`runs the '${role}' command`, () => {
      const command = Array.isArray(svc.command) ? svc.command : String(svc.command).split(/\s+/);
      expect(command).toEqual([role]);
      expect(svc.entrypoint, 'the image ENTRYPOINT runs the CLI').toBeUndefined();
    });

    it('reaches Temporal through the temporal service', () => {
      const env = envOf(svc);
      expect(env.TEMPORAL_ADDRESS).toBe('temporal:7233');
      const [host, port] = env.TEMPORAL_ADDRESS!.split(':');
      expect(services).toHaveProperty(host!);
      expect(services[host!]!.image).toMatch(/^temporalio\/(auto-setup|server):/);
      expect(port).toBe('7233');
      expect(env.TEMPORAL_NAMESPACE).toBe('default');
    });

    it('waits for Temporal and the registered search attributes', () => {
      const deps = Object.fromEntries(dependencies(svc).map((d) => [d.name, d.condition]));
      expect(deps.temporal).toBe('service_healthy');
      expect(deps['search-attributes']).toBe('service_completed_successfully');
    });

    it('gets the host kubeconfig mounted read-only at $KUBECONFIG', () => {
      const env = envOf(svc);
      expect(env.KUBECONFIG).toBe('/kube/config');
      const mounts = (svc.volumes ?? []).map((v) => (typeof v === 'string' ? v : `${v.source}:${v.target}`));
      expect(mounts).toContain('${KUBECONFIG:-~/.kube/config}:/kube/config:ro');
    });
  });

  it('the watcher serves /healthz on DO_METRICS_PORT, published and health-checked', () => {
    const w = services.watcher!;
    const port = envOf(w).DO_METRICS_PORT;
    expect(port).toBe('9464');
    expect(publishedPorts(w)).toContain(`:${port}/tcp`);
    expect(hasHealthcheck(w)).toBe(true);
    expect(JSON.stringify(w.healthcheck!.test)).toContain(`127.0.0.1:${port}/healthz`);
  });

  it('depends_on only on services that exist and can satisfy the condition', () => {
    const problems: string[] = [];
    for (const [name, svc] of Object.entries(services)) {
      for (const dep of dependencies(svc)) {
        const target = services[dep.name];
        if (!target) problems.push(`${name} depends on missing service ${dep.name}`);
        else if (dep.name === name) problems.push(`${name} depends on itself`);
        else if (dep.condition === 'service_healthy' && !hasHealthcheck(target)) {
          problems.push(`${name} waits for ${dep.name} to be healthy, but ${dep.name} has no healthcheck`);
        } else if (dep.condition === 'service_completed_successfully' && (target.restart ?? 'no') !== 'no') {
          problems.push(`${name} waits for ${dep.name} to complete, but ${dep.name} restarts (${target.restart})`);
        } else if (!['service_started', 'service_healthy', 'service_completed_successfully'].includes(dep.condition)) {
          problems.push(`${name}: unknown depends_on condition ${dep.condition}`);
        }
      }
    }
    expect(problems).toEqual([]);
  });

  it('publishes no host port twice', () => {
    const owners = new Map<string, string[]>();
    for (const [name, svc] of Object.entries(services)) {
      for (const p of publishedPorts(svc)) owners.set(p, [...(owners.get(p) ?? []), name]);
    }
    const clashes = [...owners].filter(([, names]) => names.length > 1);
    expect(clashes).toEqual([]);
    expect(owners.size).toBeGreaterThan(0);
  });

  it('declares every named volume it mounts', () => {
    for (const [name, svc] of Object.entries(services)) {
      for (const v of svc.volumes ?? []) {
        const source = typeof v === 'string' ? v.split(':')[0]! : (v.source ?? '');
        if (/^[A-Za-z0-9][\w.-]*$/.test(source))
          expect(compose.volumes, `${name} mounts volume ${source}`).toHaveProperty(source);
      }
    }
  });

  describe('search-attributes one-shot', () => {
    const svc = services['search-attributes']!;
    const env = envOf(svc);

    it('runs once, with the Temporal CLI of temporalio/admin-tools, against the temporal service', () => {
      expect(svc.image).toMatch(/^temporalio\/admin-tools:/);
      expect(svc.restart ?? 'no').toBe('no');
      expect(env.TEMPORAL_ADDRESS).toBe('temporal:7233');
      expect(env.TEMPORAL_NAMESPACE).toBe(envOf(services.worker!).TEMPORAL_NAMESPACE);
      expect(dependencies(svc)).toContainEqual({ name: 'temporal', condition: 'service_healthy' });
    });

    it('registers exactly SEARCH_ATTRIBUTE_DEFINITIONS, with their types', () => {
      const registered = Object.fromEntries(
        env
          .SEARCH_ATTRIBUTES!.trim()
          .split(/\s+/)
          .map((pair) => pair.split('=') as [string, string]),
      );
      const expected = Object.fromEntries(SEARCH_ATTRIBUTE_DEFINITIONS.map((d) => [d.name, d.cliType]));
      expect(registered).toEqual(expected);
      expect(Object.keys(expected)).toEqual([
        'K8sKind',
        'K8sNamespace',
        'K8sName',
        'K8sUID',
        'OperationPhase',
        'Tenant',
        'CloudflareTarget',
        'CloudflareSources',
        'CloudflareAccount',
      ]);
    });

    it('creates each listed attribute with `temporal operator search-attribute create`', () => {
      expect(svc.entrypoint).toEqual(['/bin/sh', '-c']);
      const command = Array.isArray(svc.command) ? svc.command : [svc.command!];
      expect(command).toHaveLength(1);
      const script = unescapeComposeScript(command[0]!);
      expect(script).toMatch(/^set -eu$/m);
      expect(script).toContain('for pair in $SEARCH_ATTRIBUTES; do');
      expect(script).toContain('temporal operator search-attribute create --name "${pair%%=*}" --type "${pair#*=}"');
    });

    it('the helper rejects a script Compose would interpolate', () => {
      expect(() => unescapeComposeScript('echo $HOME')).toThrow(/unescaped/);
      expect(unescapeComposeScript('echo $$HOME')).toBe('echo $HOME');
    });
  });
});

describe('Dockerfile', () => {
  const dockerfile = readFileSync(path.join(ROOT, 'Dockerfile'), 'utf8');
  const lines = dockerfile
    .replace(/\\\n\s*/g, ' ')
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l && !l.startsWith('#'));
  const stages = lines.filter((l) => /^FROM /i.test(l));
  const finalStage = lines.slice(lines.lastIndexOf(stages[stages.length - 1]!));
  const recipe = readFileSync(path.join(ROOT, APP_RECIPE), 'utf8');

  it("is multi-stage on node:24 slim of the local build's Debian release; Go only builds sandbox-init and sandbox-netd, which the image ships and names", () => {
    const node = `node:24-${DEBIAN_SUITE}-slim`;
    expect(stages.filter((s) => s.startsWith(`FROM ${node}`)).length).toBeGreaterThanOrEqual(2);
    for (const s of stages) expect(s).toMatch(new RegExp(`^FROM (${node}\\b|golang:\\S+ AS sandbox-init$)`));
    expect(stages.at(-1)).toBe(`FROM ${node}`);
    expect(dockerfile).toContain('COPY --from=sandbox-init /sandbox-init /usr/local/bin/sandbox-init');
    expect(dockerfile).toContain('DO_SANDBOX_INIT=/usr/local/bin/sandbox-init');
    expect(dockerfile).toContain('COPY --from=sandbox-init /sandbox-netd /usr/local/bin/sandbox-netd');
    expect(dockerfile).toContain('DO_SANDBOX_NETD=/usr/local/bin/sandbox-netd');
  });

  it('installs exactly the lock (as CI does), builds, bundles the workflows, and prunes dev dependencies', () => {
    // The Dockerfile runs these through the shared recipe (image-contents.test.ts checks it does).
    const runs = recipe;
    expect(runs).not.toContain('npm install');
    expect(readFileSync(path.join(ROOT, '.ci/run'), 'utf8')).toMatch(/^npm ci\b/m);
    const order = ['npm ci', 'npm run build', 'writeWorkflowBundle', 'npm prune --omit=dev'].map((s) =>
      runs.indexOf(s),
    );
    expect(order.every((i) => i >= 0)).toBe(true);
    expect([...order].sort((a, b) => a - b)).toEqual(order);
  });

  it.each([
    ['DO_WORKFLOW_BUNDLE', 'every workflow', undefined],
    ['DO_FASTPATH_WORKFLOW_BUNDLE', 'the sandbox workflows', 'sandbox'],
  ])('points %s at the bundle of %s the build writes', (name, _what, set) => {
    const workdir = finalStage.find((l) => l.startsWith('WORKDIR '))!.slice('WORKDIR '.length);
    const writes = [...recipe.matchAll(/writeWorkflowBundle\('([^']+)'(?:, '(\w+)')?\)/g)];
    const written = writes.find((m) => m[2] === set)?.[1];
    expect(written, `a writeWorkflowBundle for ${set ?? 'all'}`).toBeDefined();
    const env = new RegExp(`(?<![A-Z_])${name}=(\\S+)`).exec(finalStage.join('\n'))?.[1];
    expect(env).toBe(path.posix.join(workdir, written!));
    // The build script imports the compiled bundle module; its source must exist and export it.
    const source = readFileSync(path.join(ROOT, 'src/workers/bundle.ts'), 'utf8');
    expect(source).toMatch(/export async function writeWorkflowBundle\(/);
    expect(source).toContain(`'${name}'`);
  });

  it('runs as a numeric non-root user with the CLI as entrypoint', () => {
    const user = finalStage.filter((l) => l.startsWith('USER ')).pop();
    expect(user).toMatch(/^USER [1-9]\d*(:\d+)?$/);
    expect(finalStage).toContain('ENTRYPOINT ["node", "bin/durable-operators.js"]');
    expect(existsSync(path.join(ROOT, 'bin/durable-operators.js'))).toBe(true);
  });

  it('.dockerignore keeps what the build copies and drops local state', () => {
    const ignore = readFileSync(path.join(ROOT, '.dockerignore'), 'utf8')
      .split('\n')
      .map((l) => l.trim())
      .filter((l) => l && !l.startsWith('#'));
    expect(ignore[0]).toBe('*');
    const copied = [...dockerfile.matchAll(/^COPY (?!--from)(.+) \S+$/gm)].flatMap((m) => m[1]!.split(/\s+/));
    expect(copied.length).toBeGreaterThan(0);
    for (const src of copied) {
      const name = src.replace(/\/$/, '');
      const kept = ignore.includes(`!${name}`) || ignore.includes(`!${name}/`);
      expect(kept, `${src} is copied by the Dockerfile, so .dockerignore must keep it`).toBe(true);
    }
    for (const local of ['node_modules', '.state', 'dist', '.git']) expect(ignore).not.toContain(`!${local}`);
  });
});
