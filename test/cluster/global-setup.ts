/**
 * The cluster family's stack: the local stack with a real node (kubelet on the stack's
 * containerd, kube-proxy, kube-scheduler, CoreDNS), started once for the project. On teardown it
 * stops everything and fails the run if a process survived or the node left anything on the
 * host (its bridge, kube-proxy's table, the kubelet's mounts).
 */
import { spawnSync } from 'node:child_process';
import { mkdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import type {} from 'vitest';
import type { TestProject } from 'vitest/node';
import { LocalStack } from '../../src/infra/stack.js';
import { isAlive } from '../../src/infra/process.js';
import { buildProjectImage, pushProjectImage } from '../../src/infra/project-image.js';
import '../support/global-setup.js'; // the ProvidedContext declarations

declare module 'vitest' {
  export interface ProvidedContext {
    /** The project's image in the stack's registry (`repository:tag`), built as the Dockerfile builds it. */
    projectImage: { repository: string; tag: string };
  }
}

export default async function setup(project: TestProject) {
  const stateDir = path.resolve(process.env.DO_TEST_STATE_DIR ?? '.state/test', project.name);
  await mkdir(stateDir, { recursive: true });
  const t0 = Date.now();
  const stack = await LocalStack.start({ stateDir, mode: 'test', node: true });
  process.stderr.write(`[test] stack with a node ready in ${Date.now() - t0} ms (logs: ${stack.info.logsDir})\n`);
  project.provide('stack', stack.info);
  // The project's image (built here, or the cache's for these sources), as the chart installs it.
  const t1 = Date.now();
  const image = await buildProjectImage({ log: (l) => process.stderr.write(`[image] ${l}\n`) });
  const ref = await pushProjectImage(image, stack.info.registry!.host);
  const [repository, tag] = [ref.slice(0, ref.lastIndexOf(':')), image.tag];
  process.stderr.write(
    `[test] project image ${ref} ${image.built ? 'built' : 'cached'}, pushed in ${Date.now() - t1} ms\n`,
  );
  project.provide('projectImage', { repository, tag });

  return async () => {
    const pids = stack.pids;
    const node = stack.info.node!;
    await stack.stop();
    const survivors = pids.filter(isAlive);
    if (survivors.length) throw new Error(`stack processes still alive after stop: ${survivors.join(', ')}`);
    const left: string[] = [];
    if (spawnSync('ip', ['link', 'show', node.bridge], { stdio: 'ignore' }).status === 0)
      left.push(`bridge ${node.bridge}`);
    if (spawnSync('nft', ['list', 'table', 'ip', 'kube-proxy'], { stdio: 'ignore' }).status === 0)
      left.push('nftables table ip kube-proxy');
    const mounts = (await readFile('/proc/self/mounts', 'utf8')).split('\n').filter((l) => l.includes(stateDir));
    if (mounts.length) left.push(`${mounts.length} mounts under ${stateDir}`);
    if (left.length) throw new Error(`the node left on the host: ${left.join(', ')}`);
  };
}
