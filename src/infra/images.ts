/**
 * The project's own demo/test images, built from the host's static busybox with umoci (no Docker,
 * no base image to download) into one OCI layout, cached under `cacheRoot()/images/` by busybox
 * version and recipe version, and pushed with skopeo to the stack's registry.
 *
 * - `sandbox/busybox:1`: busybox with its applets in /bin; prints a line, then sleeps (as root).
 * - `sandbox/busybox-user:1`: the same plus a user `app` (1000:1000, named in the config) with its home as working
 *   directory, an image-defined environment variable, and `sleep 3600` as entrypoint + cmd.
 */
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import {
  appendFile,
  chmod,
  chown,
  copyFile,
  mkdir,
  mkdtemp,
  readdir,
  rename,
  rm,
  symlink,
  writeFile,
} from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';
import { cacheRoot, type ProgressLog } from './binaries.js';
import type { HostTools } from './host-tools.js';
import { isAlive } from './process.js';

/** Bump when anything below changes what the images contain. */
const RECIPE_VERSION = 2;

export interface SandboxImages {
  busybox: string;
  busyboxUser: string;
}

/** Image key → its tag in the OCI layout and its repository:tag in the registry. */
const IMAGES: Record<keyof SandboxImages, { layoutTag: string; ref: string }> = {
  busybox: { layoutTag: 'busybox', ref: 'sandbox/busybox:1' },
  busyboxUser: { layoutTag: 'busybox-user', ref: 'sandbox/busybox-user:1' },
};

const PATH_ENV = 'PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin';

const run = promisify(execFile);

/** `1.35.0-debian-1-1.35.0-4-deb12u1-b1` from busybox's banner, file-name safe. */
export function busyboxVersion(banner: string): string {
  const m = /BusyBox v(\S+)(?: \(([^)]*)\))?/.exec(banner);
  if (!m) throw new Error(`not a busybox banner: ${banner.split('\n')[0]}`);
  return [m[1], m[2]]
    .filter(Boolean)
    .join('-')
    .replace(/[^A-Za-z0-9.]+/g, '-')
    .toLowerCase();
}

/** The OCI layout holding both images, built once per busybox and recipe version. */
export async function ensureImageLayout(
  tools: Pick<HostTools, 'busybox' | 'umoci'>,
  log: ProgressLog,
): Promise<string> {
  const { stdout } = await run(tools.busybox, ['--help']);
  const layout = path.join(cacheRoot(), 'images', `busybox-${busyboxVersion(stdout)}-r${RECIPE_VERSION}`, 'layout');
  const started = Date.now();
  if (await buildCached(layout, (out, work) => buildLayout(tools, out, work)))
    log(`images: built ${layout} (${Date.now() - started} ms)`);
  return layout;
}

/** `target` in the image cache, built first if absent (buildCached), with a log line when it was. */
export async function buildIntoImageCache(
  target: string,
  build: (out: string, work: string) => Promise<void>,
  log: ProgressLog,
): Promise<string> {
  const started = Date.now();
  if (await buildCached(target, build)) log(`images: built ${target} (${Date.now() - started} ms)`);
  return target;
}

/**
 * Builds `dest` unless it exists: `build(out, work)` writes `out` using `work` as scratch, both in
 * a temporary directory beside `dest`, and `out` is renamed into place complete, so a reader never
 * sees half a build (a concurrent build that got there first wins). True when it built.
 */
export async function buildCached(dest: string, build: (out: string, work: string) => Promise<void>): Promise<boolean> {
  if (existsSync(dest)) return false;
  const parent = path.dirname(dest);
  await mkdir(parent, { recursive: true });
  // What a killed build left (its process is gone): image builds are hundreds of MB.
  for (const name of await readdir(parent)) {
    const pid = /^\.build-(\d+)-/.exec(name)?.[1];
    if (pid && !isAlive(Number(pid))) await rm(path.join(parent, name), { recursive: true, force: true });
  }
  const tmp = await mkdtemp(path.join(parent, `.build-${process.pid}-`));
  try {
    const out = path.join(tmp, path.basename(dest));
    await build(out, tmp);
    await rename(out, dest).catch((err: unknown) => {
      if (!existsSync(dest)) throw err;
    });
  } finally {
    await rm(tmp, { recursive: true, force: true });
  }
  return true;
}

async function buildLayout(tools: Pick<HostTools, 'busybox' | 'umoci'>, layout: string, work: string): Promise<void> {
  const umoci = (...args: string[]) => run(tools.umoci, args);
  const base = `${layout}:${IMAGES.busybox.layoutTag}`;
  const user = `${layout}:${IMAGES.busyboxUser.layoutTag}`;

  await umoci('init', '--layout', layout);
  await umoci('new', '--image', base);
  const baseBundle = path.join(work, 'base');
  await umoci('unpack', '--image', base, baseBundle);
  await populateBase(tools.busybox, path.join(baseBundle, 'rootfs'));
  await umoci('repack', '--image', base, baseBundle);
  await umoci(
    'config',
    '--image',
    base,
    '--config.entrypoint',
    '/bin/sh',
    '--config.entrypoint=-c',
    '--config.cmd',
    'echo hello from the image; sleep 3600',
    '--config.env',
    PATH_ENV,
    '--config.workingdir',
    '/',
    '--config.user',
    'root',
  );

  const userBundle = path.join(work, 'user');
  await umoci('unpack', '--image', base, userBundle);
  const rootfs = path.join(userBundle, 'rootfs');
  await appendFile(path.join(rootfs, 'etc/passwd'), 'app:x:1000:1000:app:/home/app:/bin/sh\n');
  await appendFile(path.join(rootfs, 'etc/group'), 'app:x:1000:\n');
  await mkdir(path.join(rootfs, 'home/app'), { recursive: true });
  await chown(path.join(rootfs, 'home/app'), 1000, 1000);
  await umoci('repack', '--image', user, userBundle);
  await umoci(
    'config',
    '--image',
    user,
    '--config.user',
    'app', // a name, as most images give it: the agent resolves it through the image's /etc/passwd
    '--config.workingdir',
    '/home/app',
    '--config.env',
    'GREETING=from-image',
    '--clear=config.entrypoint',
    '--config.entrypoint',
    '/bin/sleep',
    '--clear=config.cmd',
    '--config.cmd',
    '3600',
  );
  await umoci('gc', '--layout', layout); // the blobs the config edits replaced
}

/** busybox and a symlink per applet in /bin; /etc/passwd and /etc/group so `root` resolves. */
async function populateBase(busybox: string, rootfs: string): Promise<void> {
  const bin = path.join(rootfs, 'bin');
  await mkdir(bin, { recursive: true });
  await copyFile(busybox, path.join(bin, 'busybox'));
  await chmod(path.join(bin, 'busybox'), 0o755);
  const { stdout } = await run(busybox, ['--list']);
  for (const applet of stdout.split('\n')) {
    // The list names busybox itself: a link in its place would point at itself.
    if (applet && applet !== 'busybox') await symlink('busybox', path.join(bin, applet));
  }
  await mkdir(path.join(rootfs, 'etc'));
  await writeFile(
    path.join(rootfs, 'etc/passwd'),
    'root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/bin/false\n',
  );
  await writeFile(path.join(rootfs, 'etc/group'), 'root:x:0:\nnogroup:x:65534:\n');
  await mkdir(path.join(rootfs, 'root'), { mode: 0o700 });
  await mkdir(path.join(rootfs, 'tmp'));
  await chmod(path.join(rootfs, 'tmp'), 0o1777);
}

/**
 * Pushes both images to `registryHost` (plain HTTP) and returns their references. Pushing again
 * is harmless: the registry already has the blobs and the tag is rewritten with the same manifest.
 */
export async function pushImages(layout: string, registryHost: string, skopeo: string): Promise<SandboxImages> {
  const refs = {} as SandboxImages;
  await Promise.all(
    (Object.keys(IMAGES) as (keyof SandboxImages)[]).map(async (key) => {
      const { layoutTag, ref } = IMAGES[key];
      refs[key] = `${registryHost}/${ref}`;
      await pushOciImage(layout, layoutTag, refs[key], skopeo);
    }),
  );
  return refs;
}

/** Copies the image `layoutTag` of an OCI layout to `ref` (host:port/repository:tag) over plain HTTP. */
export async function pushOciImage(layout: string, layoutTag: string, ref: string, skopeo: string): Promise<void> {
  // --insecure-policy: no /etc/containers/policy.json needed for a local copy between our own stores.
  await run(skopeo, [
    '--insecure-policy',
    'copy',
    '--quiet',
    '--dest-tls-verify=false',
    `oci:${layout}:${layoutTag}`,
    `docker://${ref}`,
  ]);
}
