/**
 * The project's own image (what the Dockerfile builds), built here without Docker:
 *
 * - a Debian base from Debian's packages by `mmdebstrap` (minbase, the Dockerfile's runtime package
 *   list from scripts/image/runtime-packages, from the machine's own Debian mirror), cached by its inputs;
 * - Node 24 from the npm `node` package the lock pins, at /usr/local/bin/node as in node:24-slim;
 * - `sandbox-init` and `sandbox-netd` built with the host's Go (go-programs.ts);
 * - /app laid out by scripts/image/app.sh, the recipe the Dockerfile's build stage runs too;
 * - packed by umoci into an OCI layout as two layers (Debian, then node + the Go binaries + /app) with
 *   the Dockerfile's config, cached under `cacheRoot()/images/project/` by a hash of every input,
 *   and pushed by skopeo.
 */
import { execFile, spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { createWriteStream, existsSync } from 'node:fs';
import { appendFile, chmod, chown, copyFile, mkdir, readFile, readdir, rm, stat } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { cacheRoot, type ProgressLog } from './binaries.js';
import { buildCached, pushOciImage } from './images.js';
import { buildSandboxInit, buildSandboxNetd } from './go-programs.js';

const run = promisify(execFile);

/** Bump when anything below changes what the image contains beyond its hashed inputs. */
const RECIPE_VERSION = 1;

/** The Debian release of the base: the Dockerfile's `node:24-<suite>-slim` names the same one. */
export const DEBIAN_SUITE = 'bookworm';

/**
 * Packages the local base adds to the shared runtime list: what node:24-slim has by nature
 * (node's libstdc++ and libgcc_s come with minbase) plus the CA bundle.
 */
const LOCAL_BASE_PACKAGES = ['ca-certificates'];

/** The image's repository name in a registry. */
export const PROJECT_IMAGE_REPOSITORY = 'durable-operators';

/** The runtime config: the Dockerfile's ENV, WORKDIR, USER, ENTRYPOINT and CMD (the unit test holds them equal). */
export const PROJECT_IMAGE_CONFIG = {
  env: [
    'PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin',
    'NODE_ENV=production',
    'DO_WORKFLOW_BUNDLE=/app/dist/workflow-bundle.js',
    'DO_FASTPATH_WORKFLOW_BUNDLE=/app/dist/sandbox-workflow-bundle.js',
    'DO_SANDBOX_INIT=/usr/local/bin/sandbox-init',
    'DO_SANDBOX_NETD=/usr/local/bin/sandbox-netd',
  ],
  workdir: '/app',
  user: '1000:1000',
  entrypoint: ['node', 'bin/durable-operators.js'],
  cmd: ['--help'],
} as const;

/** The recipe that lays out /app, and its phases in the order the Dockerfile's build stage runs them. */
export const APP_RECIPE = 'scripts/image/app.sh';
export const APP_RECIPE_PHASES = ['deps', 'build', 'stage'] as const;

/** What the Dockerfile's build context holds (its .dockerignore keeps these): the app's inputs. */
export const APP_INPUTS = [
  'package.json',
  'package-lock.json',
  '.npmrc',
  'tsconfig.json',
  'tsconfig.build.json',
  'src',
  'bin',
  'scripts/image/app.sh',
  'scripts/image/runtime-packages',
];

export interface ProjectImage {
  /** The OCI layout holding the image. */
  layout: string;
  /** Its tag in the layout and in a registry: `<package version>-<input hash>`. */
  tag: string;
  /** The manifest's digest (sha256:…). */
  digest: string;
  /** False when the cache already held it. */
  built: boolean;
}

/** The repository root: where scripts/image/app.sh is. */
export function repoRoot(): string {
  for (const up of ['../..', '../../..']) {
    const dir = fileURLToPath(new URL(`${up}/`, import.meta.url));
    if (existsSync(path.join(dir, APP_RECIPE))) return path.resolve(dir);
  }
  throw new Error('the image recipe (scripts/image/app.sh) is not here: build the image from a checkout');
}

/** The Debian packages of the runtime, from the list the Dockerfile installs too. */
export async function runtimePackages(root = repoRoot()): Promise<string[]> {
  const text = await readFile(path.join(root, 'scripts/image/runtime-packages'), 'utf8');
  return text
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l && !l.startsWith('#'));
}

/**
 * apt source lines for `suite` on the machine's own Debian mirrors (read from its apt sources,
 * deb822 or one-line): the main mirror with `suite` and `suite-updates`, the security mirror with
 * `suite-security`. The base is fetched from nowhere else.
 */
export function debianSourceLines(sourceFiles: { name: string; text: string }[], suite = DEBIAN_SUITE): string[] {
  const entries: { uri: string; suites: string[] }[] = [];
  for (const { name, text } of sourceFiles) {
    if (name.endsWith('.sources')) {
      for (const stanza of text.split(/\n\s*\n/)) {
        const field = (k: string) => new RegExp(`^${k}:\\s*(.+)$`, 'mi').exec(stanza)?.[1]?.trim().split(/\s+/) ?? [];
        if (!field('Types').includes('deb') || field('Enabled')[0]?.toLowerCase() === 'no') continue;
        for (const uri of field('URIs')) entries.push({ uri, suites: field('Suites') });
      }
    } else if (name.endsWith('.list')) {
      for (const line of text.split('\n')) {
        const m = /^\s*deb\s+(?:\[[^\]]*\]\s+)?(\S+)\s+(\S+)/.exec(line);
        if (m) entries.push({ uri: m[1]!, suites: [m[2]!] });
      }
    }
  }
  // Debian's own archives: those whose suites are Debian release names (not a vendor's `nodistro`…).
  const debian = entries.filter((e) => e.suites.some((s) => /^(?:[a-z]+)(?:-(?:updates|security))?$/.test(s)));
  const security = debian.find((e) => e.suites.some((s) => s.endsWith('-security')))?.uri;
  const main = debian.find((e) => !e.suites.some((s) => s.endsWith('-security')))?.uri;
  if (!main) throw new Error("no Debian mirror in the machine's apt sources (/etc/apt/sources.list*)");
  return [
    `deb ${main} ${suite} main`,
    `deb ${main} ${suite}-updates main`,
    ...(security ? [`deb ${security} ${suite}-security main`] : []),
  ];
}

async function hostSourceFiles(): Promise<{ name: string; text: string }[]> {
  const files = [];
  if (existsSync('/etc/apt/sources.list'))
    files.push({ name: 'sources.list', text: await readFile('/etc/apt/sources.list', 'utf8') });
  const dir = '/etc/apt/sources.list.d';
  for (const name of existsSync(dir) ? (await readdir(dir)).sort() : [])
    files.push({ name, text: await readFile(path.join(dir, name), 'utf8') });
  return files;
}

/** The Node binary of the npm `node` package the lock pins (its platform package's bin/node). */
export async function pinnedNode(root = repoRoot()): Promise<{ path: string; version: string }> {
  const lock = JSON.parse(await readFile(path.join(root, 'package-lock.json'), 'utf8')) as {
    packages: Record<string, { version?: string }>;
  };
  const version = lock.packages['node_modules/node']?.version;
  if (!version) throw new Error('package-lock.json pins no `node` package');
  const arch = `node-${process.platform}-${process.arch}`;
  const bin = path.join(root, 'node_modules/node/node_modules', arch, 'bin/node');
  const installed = existsSync(bin)
    ? (JSON.parse(await readFile(path.join(root, 'node_modules/node/node_modules', arch, 'package.json'), 'utf8')) as {
        version: string;
      })
    : undefined;
  if (installed?.version !== version) {
    const has = installed ? `${arch} ${installed.version}` : `no ${arch}`;
    throw new Error(`node_modules has ${has}, the lock pins node ${version}: run \`npm ci\``);
  }
  return { path: bin, version };
}

/** mmdebstrap's options: minbase plus the packages, no recommends, no docs/man/locales (as slim images). */
function mmdebstrapArgs(packages: string[]): string[] {
  return [
    '--variant=minbase',
    `--include=${packages.join(',')}`,
    '--aptopt=Apt::Install-Recommends "false"',
    '--dpkgopt=path-exclude=/usr/share/man/*',
    '--dpkgopt=path-exclude=/usr/share/doc/*',
    '--dpkgopt=path-include=/usr/share/doc/*/copyright',
    '--dpkgopt=path-exclude=/usr/share/locale/*',
    '--dpkgopt=path-exclude=/usr/share/info/*',
    // The build host's resolver and name are no part of the image (a runtime mounts its own).
    '--customize-hook=rm -f "$1/etc/resolv.conf" "$1/etc/hostname"',
  ];
}

/** The Debian base as a tarball, built by mmdebstrap once per package set, mirror and options. */
async function ensureDebianBase(log: ProgressLog, root: string): Promise<{ tar: string; key: string }> {
  const packages = [...(await runtimePackages(root)), ...LOCAL_BASE_PACKAGES].sort();
  const sources = debianSourceLines(await hostSourceFiles());
  const args = mmdebstrapArgs(packages);
  const key = hashOf([`r${RECIPE_VERSION}`, process.arch, DEBIAN_SUITE, ...args, ...sources].join('\n'));
  const tar = path.join(cacheRoot(), 'images', 'project-base', `${DEBIAN_SUITE}-${key}`, 'rootfs.tar');
  const started = Date.now();
  const built = await buildCached(path.dirname(tar), async (out) => {
    await mkdir(out);
    log(`image: mmdebstrap ${DEBIAN_SUITE} minbase + ${packages.join(' ')} from ${sources[0]!.split(' ')[1]}`);
    await logged('mmdebstrap', ['--mode=root', ...args, DEBIAN_SUITE, path.join(out, 'rootfs.tar'), ...sources], {
      logFile: path.join(out, 'mmdebstrap.log'),
    });
  });
  if (built) log(`image: Debian base built (${Date.now() - started} ms)`);
  return { tar, key };
}

/**
 * The project's image as an OCI layout, from the cache when its inputs (the lock, the sources,
 * the recipe, the Debian base's package set and mirror, the pinned Node) are unchanged. Needs root
 * (mmdebstrap, file ownership), Go, mmdebstrap and umoci; npm reaches the npm registry.
 */
export async function buildProjectImage(opts: { log?: ProgressLog; umoci?: string } = {}): Promise<ProjectImage> {
  const log = opts.log ?? (() => {});
  const umoci = opts.umoci ?? 'umoci';
  if (process.getuid?.() !== 0) throw new Error("the image build runs as root (mmdebstrap, the files' owners)");
  const root = repoRoot();
  const node = await pinnedNode(root);
  const base = await ensureDebianBase(log, root);
  const appKey = await hashInputs(root);
  const key = hashOf([`r${RECIPE_VERSION}`, base.key, appKey, node.version].join('\n'));
  const version = (JSON.parse(await readFile(path.join(root, 'package.json'), 'utf8')) as { version: string }).version;
  const tag = `${version}-${key}`;
  const dir = path.join(cacheRoot(), 'images', 'project', tag);
  const layout = path.join(dir, 'layout');
  const started = Date.now();
  const built = await buildCached(dir, async (outDir, work) => {
    const sandboxInit = await buildSandboxInit();
    const sandboxNetd = await buildSandboxNetd();
    const out = path.join(outDir, 'layout');
    const image = `${out}:${tag}`;
    const u = (...args: string[]) => run(umoci, args, { maxBuffer: 64 << 20 });
    await mkdir(outDir);
    await u('init', '--layout', out);
    await u('new', '--image', image);
    const bundle = path.join(work, 'bundle');
    await u('unpack', '--image', image, bundle);
    const rootfs = path.join(bundle, 'rootfs');

    // Layer 1: Debian.
    await run('tar', ['-x', '--numeric-owner', '-f', base.tar, '-C', rootfs]);
    await u('repack', '--refresh-bundle', '--image', image, bundle);

    // Layer 2: node, sandbox-init, sandbox-netd, the `node` user, /app.
    log(`image: laying out /app with scripts/image/app.sh (npm ci, build, bundles, prune)`);
    await layOutApp(root, node.path, path.join(work, 'src'), path.join(rootfs, 'app'), path.join(work, 'app.log'));
    await install(node.path, path.join(rootfs, 'usr/local/bin/node'));
    await install(sandboxInit, path.join(rootfs, 'usr/local/bin/sandbox-init'));
    await install(sandboxNetd, path.join(rootfs, 'usr/local/bin/sandbox-netd'));
    // node:24-slim's user 1000, so the image's user has a name and a home.
    await appendFile(path.join(rootfs, 'etc/passwd'), 'node:x:1000:1000::/home/node:/bin/bash\n');
    await appendFile(path.join(rootfs, 'etc/group'), 'node:x:1000:\n');
    await mkdir(path.join(rootfs, 'home/node'), { recursive: true });
    await chown(path.join(rootfs, 'home/node'), 1000, 1000);
    await u('repack', '--image', image, bundle);

    const c = PROJECT_IMAGE_CONFIG;
    await u(
      'config',
      '--image',
      image,
      ...c.env.flatMap((e) => ['--config.env', e]),
      '--config.workingdir',
      c.workdir,
      '--config.user',
      c.user,
      '--clear=config.entrypoint',
      ...c.entrypoint.flatMap((e) => ['--config.entrypoint', e]),
      '--clear=config.cmd',
      ...c.cmd.flatMap((e) => ['--config.cmd', e]),
    );
    await u('gc', '--layout', out);
  });
  if (built) {
    log(`image: built ${PROJECT_IMAGE_REPOSITORY}:${tag} (${Date.now() - started} ms)`);
    await pruneOldImages(path.dirname(dir), 3);
  }
  return { layout, tag, digest: await manifestDigest(layout, tag), built };
}

/** Pushes the image to `registryHost` (host:port, plain HTTP); returns its reference there. */
export async function pushProjectImage(image: ProjectImage, registryHost: string, skopeo = 'skopeo'): Promise<string> {
  const ref = `${registryHost}/${PROJECT_IMAGE_REPOSITORY}:${image.tag}`;
  await pushOciImage(image.layout, image.tag, ref, skopeo);
  return ref;
}

/**
 * Copies the build context into `work` (as `docker build` sends it) and runs the shared recipe
 * there with the pinned Node first on PATH, staging the app into `app`.
 */
async function layOutApp(root: string, node: string, work: string, app: string, logFile: string): Promise<void> {
  await mkdir(work, { recursive: true });
  for (const input of APP_INPUTS) {
    await mkdir(path.dirname(path.join(work, input)), { recursive: true });
    await run('cp', ['-a', path.join(root, input), path.join(work, input)]);
  }
  // Nothing of the calling npm's or tsx's environment reaches the build (as in a container).
  const env = Object.fromEntries(
    Object.entries(process.env).filter(([k]) => !/^npm_/i.test(k) && k !== 'NODE_OPTIONS' && k !== 'INIT_CWD'),
  );
  env.PATH = `${path.dirname(node)}${path.delimiter}${env.PATH ?? ''}`;
  for (const phase of APP_RECIPE_PHASES)
    await logged('sh', [path.join(work, APP_RECIPE), phase, ...(phase === 'stage' ? [app] : [])], {
      cwd: work,
      env,
      logFile,
    });
}

async function install(from: string, to: string): Promise<void> {
  await mkdir(path.dirname(to), { recursive: true });
  await copyFile(from, to);
  await chmod(to, 0o755);
}

/** Runs a build step with its output in `logFile`; a failure names the file and quotes its end. */
async function logged(
  cmd: string,
  args: string[],
  opts: { cwd?: string; env?: NodeJS.ProcessEnv; logFile: string },
): Promise<void> {
  const out = createWriteStream(opts.logFile, { flags: 'a' });
  await new Promise<void>((resolve) => out.once('open', () => resolve()));
  const code = await new Promise<number | null>((resolve, reject) => {
    const child = spawn(cmd, args, { cwd: opts.cwd, env: opts.env, stdio: ['ignore', out, out] });
    child.once('error', reject);
    child.once('exit', resolve);
  }).finally(() => out.close());
  if (code !== 0) {
    const tail = (await readFile(opts.logFile, 'utf8').catch(() => '')).split('\n').slice(-30).join('\n');
    throw new Error(`image: \`${cmd} ${args.slice(0, 2).join(' ')}…\` exited ${code}:\n${tail}`);
  }
}

/** A hash of every app input: its path, whether it is executable, its content. */
async function hashInputs(root: string): Promise<string> {
  const h = createHash('sha256');
  const walk = async (rel: string): Promise<void> => {
    const abs = path.join(root, rel);
    const st = await stat(abs);
    if (st.isDirectory()) {
      for (const name of (await readdir(abs)).sort()) await walk(path.join(rel, name));
    } else {
      h.update(`${rel}\0${st.mode & 0o111 ? 'x' : '-'}\0`).update(await readFile(abs));
    }
  };
  for (const input of APP_INPUTS) await walk(input);
  return h.digest('hex');
}

function hashOf(text: string): string {
  return createHash('sha256').update(text).digest('hex').slice(0, 12);
}

async function manifestDigest(layout: string, tag: string): Promise<string> {
  const index = JSON.parse(await readFile(path.join(layout, 'index.json'), 'utf8')) as {
    manifests: { digest: string; annotations?: Record<string, string> }[];
  };
  const m = index.manifests.find((d) => d.annotations?.['org.opencontainers.image.ref.name'] === tag);
  if (!m) throw new Error(`${layout} has no image tagged ${tag}`);
  return m.digest;
}

/** Keeps the `keep` newest images (each source change makes one of a few hundred MB). */
async function pruneOldImages(dir: string, keep: number): Promise<void> {
  const entries = await Promise.all(
    (await readdir(dir))
      .filter((n) => !n.startsWith('.'))
      .map(async (n) => ({ n, t: (await stat(path.join(dir, n))).mtimeMs })),
  );
  entries.sort((a, b) => b.t - a.t);
  for (const { n } of entries.slice(keep)) await rm(path.join(dir, n), { recursive: true, force: true });
}
