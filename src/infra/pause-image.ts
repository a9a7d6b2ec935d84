/**
 * The pause image a real node's containerd names as its CRI `sandbox_image`: nothing can be
 * pulled here, so it is built as upstream builds it — Kubernetes' own `build/pause/linux/pause.c`
 * from the pinned k8s.io/kubernetes module, compiled `gcc -static`, alone in an image with
 * entrypoint `/pause` and user 65535:65535 — packed with umoci and written as an oci-archive tar,
 * cached by Kubernetes version.
 */
import { execFile } from 'node:child_process';
import { chmod, copyFile, readFile } from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';
import { cacheRoot, downloadKubernetesModule, type ProgressLog } from './binaries.js';
import { findHostTools } from './host-tools.js';
import { buildIntoImageCache } from './images.js';
import { INFRA_VERSIONS } from './versions.js';

const run = promisify(execFile);

/** The repository containerd's CRI plugin looks the sandbox image up under (kubeadm's default). */
const PAUSE_REPOSITORY = 'registry.k8s.io/pause';

export interface PauseImage {
  /** An oci-archive tar (an OCI layout whose one manifest is tagged with the pause version). */
  archive: string;
  /** `registry.k8s.io/pause:<tag>`: the name to give `sandbox_image`, and the one the archive imports as. */
  reference: string;
}

/** Where the archive is cached: by Kubernetes version, as its pause.c comes from that release. */
export function pauseArchivePath(): string {
  return path.join(cacheRoot(), 'images', `pause-${INFRA_VERSIONS.kubernetes}`, 'pause.oci.tar');
}

/**
 * Returns the pause image's archive, building it on first use. Import it under its reference with
 * `ctr -n k8s.io images import --base-name registry.k8s.io/pause <archive>` (the layout tag is the
 * pause version, which the base name completes).
 */
export async function ensurePauseImage(log: ProgressLog = defaultLog): Promise<PauseImage> {
  const archive = await buildIntoImageCache(pauseArchivePath(), buildPauseArchive, log);
  return { archive, reference: `${PAUSE_REPOSITORY}:${INFRA_VERSIONS.pause}` };
}

async function buildPauseArchive(out: string, work: string): Promise<void> {
  const umoci = findHostTools().tools.umoci;
  if (!umoci) throw new Error('the pause image is packed with umoci: apt-get install umoci');
  const tag = INFRA_VERSIONS.pause;
  const source = path.join(downloadKubernetesModule().Dir, 'build', 'pause');
  // The pinned tag must be the one this release builds, or containerd would run a different pause than named.
  const makefileTag = /^TAG \?= (\S+)$/m.exec(await readFile(path.join(source, 'Makefile'), 'utf8'))?.[1];
  if (makefileTag !== tag)
    throw new Error(`k8s.io/kubernetes v${INFRA_VERSIONS.kubernetes} builds pause ${makefileTag}, pinned ${tag}`);

  const binary = path.join(work, 'pause');
  // Upstream's CFLAGS (build/pause/Makefile), with the tag as the version `pause -v` prints.
  await run('gcc', ['-Os', '-Wall', '-Werror', '-static', `-DVERSION=v${tag}`, '-o', binary, 'linux/pause.c'], {
    cwd: source,
  }).catch((err: unknown) => {
    throw new Error(
      `gcc -static ${path.join(source, 'linux/pause.c')} failed (the pause image needs gcc and libc6-dev): ` +
        (err instanceof Error ? err.message : String(err)),
    );
  });

  const layout = path.join(work, 'layout');
  const image = `${layout}:${tag}`;
  const bundle = path.join(work, 'bundle');
  const umociRun = (...args: string[]) => run(umoci, args);
  await umociRun('init', '--layout', layout);
  await umociRun('new', '--image', image);
  await umociRun('unpack', '--image', image, bundle);
  await copyFile(binary, path.join(bundle, 'rootfs', 'pause'));
  await chmod(path.join(bundle, 'rootfs', 'pause'), 0o755);
  await umociRun('repack', '--image', image, bundle);
  await umociRun('config', '--image', image, '--config.entrypoint', '/pause', '--config.user', '65535:65535');
  await umociRun('gc', '--layout', layout);
  // An oci-archive is the layout as a tar, index.json and oci-layout at its root.
  await run('tar', ['--sort=name', '-C', layout, '-cf', out, '.']);
}

function defaultLog(line: string): void {
  process.stderr.write(`[infra] ${line}\n`);
}
