/**
 * The project's image built here without Docker (src/infra/project-image.ts; a cache hit when an
 * earlier run built the same inputs): its config and file tree are what the Dockerfile declares,
 * its entrypoint runs under runc as the image's own user with the spec umoci derives from that
 * config, and it is pushed to the stack's registry. The unit test image-contents.test.ts holds the
 * Dockerfile and this build to one recipe.
 */
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, readFile, readdir, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { requireHostTools } from '../../src/infra/host-tools.js';
import {
  PROJECT_IMAGE_CONFIG,
  PROJECT_IMAGE_REPOSITORY,
  buildProjectImage,
  pushProjectImage,
  type ProjectImage,
} from '../../src/infra/project-image.js';
import { stackInfo, uniq } from '../support/env.js';

const run = promisify(execFile);
const tools = requireHostTools();
const stack = stackInfo();

let image: ProjectImage;
let bundle: string;
let rootfs: string;
/** The runtime spec umoci derived from the image's config. */
let imageSpec: Spec;

type Spec = {
  process: { args: string[]; user: { uid: number; gid: number }; cwd: string; env: string[]; terminal?: boolean };
};

beforeAll(async () => {
  image = await buildProjectImage({ log: (l) => process.stderr.write(`[image] ${l}\n`), umoci: tools.umoci });
  const dir = await mkdtemp(path.join(stack.stateDir, 'project-image-'));
  bundle = path.join(dir, 'bundle');
  await run(tools.umoci, ['unpack', '--image', `${image.layout}:${image.tag}`, bundle]);
  rootfs = path.join(bundle, 'rootfs');
  imageSpec = JSON.parse(await readFile(path.join(bundle, 'config.json'), 'utf8')) as Spec;
}, 900_000);

afterAll(async () => {
  if (bundle) await rm(path.dirname(bundle), { recursive: true, force: true });
});

/** Runs the image under runc with umoci's spec (the image's user, env, cwd), `args` replacing its entrypoint + cmd. */
async function runInImage(args?: string[]): Promise<string> {
  const spec = structuredClone(imageSpec);
  spec.process.terminal = false;
  if (args) spec.process.args = args;
  await writeFile(path.join(bundle, 'config.json'), JSON.stringify(spec));
  const state = path.join(path.dirname(bundle), 'runc');
  const { stdout } = await run(tools.runc, ['--root', state, 'run', '--bundle', bundle, uniq('image')], {
    maxBuffer: 16 << 20,
  });
  return stdout;
}

describe("the project's image built without Docker", () => {
  it("carries the Dockerfile's config, and umoci's runtime spec runs it as 1000:1000 in /app", async () => {
    const index = JSON.parse(await readFile(path.join(image.layout, 'index.json'), 'utf8')) as {
      manifests: { digest: string }[];
    };
    expect(index.manifests.map((m) => m.digest)).toContain(image.digest);
    const blob = (digest: string) => readFile(path.join(image.layout, 'blobs', ...digest.split(':')), 'utf8');
    const manifest = JSON.parse(await blob(image.digest)) as { config: { digest: string }; layers: unknown[] };
    expect(manifest.layers).toHaveLength(2); // Debian, then node + sandbox-init + /app
    const { config } = JSON.parse(await blob(manifest.config.digest)) as {
      config: { User: string; WorkingDir: string; Entrypoint: string[]; Cmd: string[]; Env: string[] };
    };
    expect(config).toMatchObject({
      User: '1000:1000',
      WorkingDir: '/app',
      Entrypoint: ['node', 'bin/durable-operators.js'],
      Cmd: ['--help'],
    });
    expect([...config.Env].sort()).toEqual([...PROJECT_IMAGE_CONFIG.env].sort());

    const spec = imageSpec;
    expect(spec.process.user).toMatchObject({ uid: 1000, gid: 1000 });
    expect(spec.process.cwd).toBe('/app');
    expect(spec.process.args).toEqual(['node', 'bin/durable-operators.js', '--help']);
  });

  it('holds the app as the recipe lays it out: bundles, protos, production dependencies only, no tests', async () => {
    for (const f of [
      'dist/workflow-bundle.js',
      'dist/sandbox-workflow-bundle.js',
      'bin/durable-operators.js',
      'package.json',
    ])
      expect(existsSync(path.join(rootfs, 'app', f)), f).toBe(true);
    expect(
      (await readdir(path.join(rootfs, 'app/dist/api/proto'), { recursive: true })).some((f) => f.endsWith('.proto')),
    ).toBe(true);
    expect((await readdir(path.join(rootfs, 'app'))).sort()).toEqual(['bin', 'dist', 'node_modules', 'package.json']);
    const modules = await readdir(path.join(rootfs, 'app/node_modules'));
    expect(modules).toContain('@temporalio');
    for (const dev of ['vitest', 'typescript', 'eslint', 'tsx', 'node', 'prettier']) expect(modules).not.toContain(dev);
    const dist = await readdir(path.join(rootfs, 'app/dist'), { recursive: true });
    expect(dist.filter((f) => /emulator|(^|\/)test\//i.test(f))).toEqual([]);
  });

  it('has Node 24, sandbox-init, sandbox-netd and the agent tools (ip, nft, the CNI plugins) on their paths', async () => {
    for (const f of [
      'usr/local/bin/node',
      'usr/local/bin/sandbox-init',
      'usr/local/bin/sandbox-netd',
      'usr/lib/cni/ptp',
      'usr/lib/cni/host-local',
    ])
      expect(existsSync(path.join(rootfs, f)), f).toBe(true);
    expect(await runInImage(['node', '--version'])).toMatch(/^v24\./);
    // Each tool starts in the image (its libraries are there), as the image's user.
    expect(await runInImage(['ip', '-V'])).toMatch(/iproute2/);
    expect(await runInImage(['nft', '--version'])).toMatch(/nftables/);
    expect(await runInImage(['id', '-u'])).toBe('1000\n');
  });

  it('runs its entrypoint: the CLI answers --help', async () => {
    const help = await runInImage();
    expect(help).toMatch(/Usage: durable-operators/);
    for (const role of ['worker', 'watcher', 'admission', 'fastpath', 'agent']) expect(help).toContain(role);
  });

  it("is pushed to the stack's registry under its tag, with the layout's digest", async () => {
    const ref = await pushProjectImage(image, stack.registry!.host, tools.skopeo);
    expect(ref).toBe(`${stack.registry!.host}/${PROJECT_IMAGE_REPOSITORY}:${image.tag}`);
    const { stdout } = await run(tools.skopeo, ['inspect', '--tls-verify=false', `docker://${ref}`]);
    expect((JSON.parse(stdout) as { Digest: string }).Digest).toBe(image.digest);
  });

  it('a second build is a cache hit with the same digest', async () => {
    const again = await buildProjectImage({ umoci: tools.umoci });
    expect(again).toEqual({ ...image, built: false });
  });
});
