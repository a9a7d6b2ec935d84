/**
 * The image's two builds — the Dockerfile and the local one (src/infra/project-image.ts, no
 * Docker) — produce the same layout: the Dockerfile lays out /app only through the shared recipe
 * (scripts/image/app.sh) the local build runs, both install the one Debian package list, both
 * start from the same build context, and the local image's config is the Dockerfile's. What the
 * build compiles (tsconfig.build.json) is src/ only. test/integration/project-image.test.ts
 * checks the built image itself.
 */
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import {
  APP_INPUTS,
  APP_RECIPE,
  APP_RECIPE_PHASES,
  PROJECT_IMAGE_CONFIG,
  debianSourceLines,
  runtimePackages,
} from '../../src/infra/project-image.js';
import { REPO_ROOT } from '../support/env.js';

const run = promisify(execFile);

/** The Dockerfile's instructions (continuations joined, comments dropped), split into stages. */
function dockerfileStages(): { from: string; lines: string[] }[] {
  const lines = readFileSync(path.join(REPO_ROOT, 'Dockerfile'), 'utf8')
    .replace(/\\\n\s*/g, ' ')
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l && !l.startsWith('#'));
  const stages: { from: string; lines: string[] }[] = [];
  for (const l of lines) {
    if (l.startsWith('FROM ')) stages.push({ from: l, lines: [] });
    else stages.at(-1)?.lines.push(l);
  }
  return stages;
}

const stages = dockerfileStages();
const build = stages.find((s) => / AS build$/.test(s.from))!;
const runtime = stages.at(-1)!;
const args = (stage: { lines: string[] }, op: string) =>
  stage.lines.filter((l) => l.startsWith(`${op} `)).map((l) => l.slice(op.length + 1));

describe('the Dockerfile and the local build', () => {
  it('lay out /app with the one recipe: the build stage runs its phases in order and nothing else', () => {
    expect(args(build, 'COPY')).toContain(`${APP_RECIPE} /usr/local/bin/app-recipe`);
    expect(args(build, 'RUN')).toEqual(
      APP_RECIPE_PHASES.map((phase) => `app-recipe ${phase}${phase === 'stage' ? ' /app' : ''}`),
    );
    // The runtime takes /app whole from where the recipe staged it.
    expect(args(runtime, 'COPY').filter((c) => c.startsWith('--from=build'))).toEqual(['--from=build /app /app']);
    const recipe = readFileSync(path.join(REPO_ROOT, APP_RECIPE), 'utf8');
    for (const phase of APP_RECIPE_PHASES) expect(recipe).toMatch(new RegExp(`^${phase}\\)$`, 'm'));
  });

  it('start from the same build context: the .dockerignore keeps exactly what the local build copies', () => {
    const kept = readFileSync(path.join(REPO_ROOT, '.dockerignore'), 'utf8')
      .split('\n')
      .filter((l) => l.startsWith('!'))
      .map((l) => l.slice(1).replace(/\/$/, ''));
    expect([...kept].sort()).toEqual([...APP_INPUTS].sort());
  });

  it('install the one Debian package list: the agent tools (ip, nft, the CNI plugins)', async () => {
    expect(args(runtime, 'COPY')).toContain('scripts/image/runtime-packages /tmp/runtime-packages');
    expect(args(runtime, 'RUN').join('\n')).toContain(
      "apt-get install -y --no-install-recommends $(grep -v '^#' /tmp/runtime-packages)",
    );
    expect(await runtimePackages(REPO_ROOT)).toEqual(['iproute2', 'nftables', 'containernetworking-plugins']);
  });

  it("give the image the Dockerfile's env, workdir, user, entrypoint and cmd", () => {
    const env = args(runtime, 'ENV')
      .flatMap((e) => e.split(/\s+/))
      .sort();
    const c = PROJECT_IMAGE_CONFIG;
    // node:24-slim's PATH is the base image's; everything else is declared in the Dockerfile.
    expect(c.env.filter((e) => !e.startsWith('PATH=')).sort()).toEqual(env);
    expect(c.env).toContain('PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin');
    expect(args(runtime, 'WORKDIR')).toEqual([c.workdir]);
    expect(args(runtime, 'USER')).toEqual([c.user]);
    expect(args(runtime, 'ENTRYPOINT').map((e) => JSON.parse(e) as string[])).toEqual([c.entrypoint]);
    expect(args(runtime, 'CMD').map((e) => JSON.parse(e) as string[])).toEqual([c.cmd]);
  });
});

describe("the local base's Debian mirror is the machine's own", () => {
  it('from deb822 sources: the main mirror for the suite and its updates, the security mirror for security', () => {
    const lines = debianSourceLines(
      [
        {
          name: 'debian.sources',
          text: [
            'Types: deb',
            'URIs: http://mirror.example/debian',
            'Suites: bookworm bookworm-updates',
            'Components: main',
            '',
            'Types: deb',
            'URIs: http://mirror.example/debian-security',
            'Suites: bookworm-security',
            'Components: main',
          ].join('\n'),
        },
        // A vendor's archive and a file apt ignores are no Debian mirror.
        { name: 'nodesource.sources', text: 'Types: deb\nURIs: https://vendor.example/node\nSuites: nodistro\n' },
        { name: 'other.list.disabled', text: 'deb http://elsewhere.example/debian bookworm main\n' },
      ],
      'bookworm',
    );
    expect(lines).toEqual([
      'deb http://mirror.example/debian bookworm main',
      'deb http://mirror.example/debian bookworm-updates main',
      'deb http://mirror.example/debian-security bookworm-security main',
    ]);
  });

  it('from one-line sources.list, and a clear refusal when there is no Debian mirror', () => {
    expect(
      debianSourceLines(
        [{ name: 'sources.list', text: '# c\ndeb [arch=amd64] http://m.example/debian trixie main\n' }],
        'bookworm',
      ),
    ).toEqual(['deb http://m.example/debian bookworm main', 'deb http://m.example/debian bookworm-updates main']);
    expect(() => debianSourceLines([], 'bookworm')).toThrow(/no Debian mirror/);
  });
});

it('the build compiles src/ only: no test tool (the Cloudflare emulator) reaches the image', async () => {
  const tsc = path.join(REPO_ROOT, 'node_modules/typescript/bin/tsc');
  const { stdout } = await run(process.execPath, [tsc, '-p', 'tsconfig.build.json', '--listFilesOnly'], {
    cwd: REPO_ROOT,
    maxBuffer: 64 << 20,
  });
  const ours = stdout
    .split('\n')
    .filter(Boolean)
    .filter((f) => !f.split(path.sep).includes('node_modules')) // dependencies (maybe a linked dir)
    .map((f) => path.relative(REPO_ROOT, f));
  expect(ours.length).toBeGreaterThan(100);
  expect(ours.filter((f) => !f.startsWith('src/'))).toEqual([]);
  expect(ours.filter((f) => /emulator/i.test(f))).toEqual([]);
}, 120_000);
