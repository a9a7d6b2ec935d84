/**
 * Patch discipline (docs/operations.md, "Patches"): every patch ID the workflow code or its
 * interceptors call is in src/workflows/patches.ts at the stage its call says — `patched()` for
 * active, `deprecatePatch()` for deprecated, no call once removed — and an interceptor calls no
 * `patched()` (it would mark every run of every workflow type). The recorded histories carry only
 * IDs the registry knows. And every workflow type says how its runs move between builds under
 * Worker Deployment Versioning.
 */
import { readFile, readdir } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { expect, it } from 'vitest';
import { PATCHES } from '../../src/workflows/patches.js';
import * as workflows from '../../src/workflows/index.js';
import { versioningBehaviors } from '../../src/workflows/versioning-behavior.js';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const WORKFLOWS = path.join(root, 'src/workflows');
const INTERCEPTORS = path.join(root, 'src/tracing/workflow-interceptors.ts');

async function sources(dir: string): Promise<string[]> {
  const entries = await readdir(dir, { recursive: true });
  return entries.filter((f) => f.endsWith('.ts')).map((f) => path.join(dir, f));
}

interface Call {
  id: string;
  kind: 'patched' | 'deprecatePatch';
  file: string;
}

/** The patch calls of a file (comments left out): the ID a string literal or a `const NAME = '…'` of the same file. */
function patchCalls(file: string, source: string): Call[] {
  const text = source.replace(/\/\*[\s\S]*?\*\//g, '').replace(/^\s*\/\/.*$/gm, '');
  const constants = new Map([...text.matchAll(/\bconst\s+(\w+)\s*=\s*'([^']+)'/g)].map((m) => [m[1]!, m[2]!]));
  return [...text.matchAll(/\b(patched|deprecatePatch)\(\s*(?:'([^']+)'|(\w+))\s*\)/g)].map((m) => {
    const id = m[2] ?? constants.get(m[3]!);
    if (!id) throw new Error(`${path.relative(root, file)}: ${m[0]} names no constant of its file`);
    return { id, kind: m[1] as Call['kind'], file: path.relative(root, file) };
  });
}

const calls: Call[] = [];
for (const file of [...(await sources(WORKFLOWS)), INTERCEPTORS])
  calls.push(...patchCalls(file, await readFile(file, 'utf8')));

it('finds the patch calls', () => {
  expect(new Set(calls.map((c) => c.id)).size).toBeGreaterThanOrEqual(20);
});

it('every patch called is in the registry, at the stage its call says', () => {
  const wrong = calls
    .filter((c) => {
      const entry = PATCHES[c.id];
      return !entry || entry.stage !== (c.kind === 'patched' ? 'active' : 'deprecated');
    })
    .map((c) => `${c.file}: ${c.kind}('${c.id}') is ${PATCHES[c.id]?.stage ?? 'not in src/workflows/patches.ts'}`);
  expect(wrong).toEqual([]);
});

it('every active or deprecated patch in the registry is still called, from the file it names', () => {
  const called = new Map(calls.map((c) => [c.id, c.file]));
  const stale = Object.entries(PATCHES)
    .filter(([id, p]) => (p.stage === 'removed' ? called.has(id) : called.get(id) !== path.join('src/workflows', p.in)))
    .map(([id, p]) => `${id} (${p.stage}, ${p.in}): called from ${called.get(id) ?? 'nowhere'}`);
  expect(stale).toEqual([]);
});

it('no interceptor calls patched()', () => {
  expect(calls.filter((c) => c.file === path.relative(root, INTERCEPTORS) && c.kind === 'patched')).toEqual([]);
});

it('the recorded histories carry only patch IDs the registry knows', async () => {
  const dir = path.join(root, 'test/fixtures/histories');
  const unknown = new Set<string>();
  for (const file of (await readdir(dir)).filter((f) => f.endsWith('.json'))) {
    const history = JSON.parse(await readFile(path.join(dir, file), 'utf8')) as {
      events: {
        markerRecordedEventAttributes?: {
          markerName?: string;
          details?: Record<string, { payloads?: { data: string }[] }>;
        };
      }[];
    };
    for (const e of history.events) {
      const marker = e.markerRecordedEventAttributes;
      if (marker?.markerName !== 'core_patch') continue;
      for (const p of marker.details?.['patch-data']?.payloads ?? []) {
        const { id } = JSON.parse(Buffer.from(p.data, 'base64').toString()) as { id: string };
        if (!PATCHES[id] || PATCHES[id].stage === 'removed') unknown.add(`${file}: ${id}`);
      }
    }
  }
  expect([...unknown]).toEqual([]);
});

it('every workflow type says how its runs move between builds: requests pinned, entities auto-upgrade', () => {
  const types = Object.entries(workflows)
    .filter(([name, f]) => typeof f === 'function' && name.endsWith('Workflow'))
    .map(([name]) => name);
  expect(Object.fromEntries(types.map((name) => [name, versioningBehaviors.get(name)]))).toEqual({
    manifestCaptureRequestWorkflow: 'PINNED',
    volumeCaptureRequestWorkflow: 'PINNED',
    volumeRestoreRequestWorkflow: 'PINNED',
    requestTtlSweepWorkflow: 'PINNED',
    objectKeeperWorkflow: 'AUTO_UPGRADE',
    sandboxWorkflow: 'AUTO_UPGRADE',
    sandboxPoolWorkflow: 'AUTO_UPGRADE',
    sandboxQuotaWorkflow: 'AUTO_UPGRADE',
    sandboxJanitorWorkflow: 'AUTO_UPGRADE',
    cloudflareSourceWorkflow: 'AUTO_UPGRADE',
    cloudflareSyncWorkflow: 'AUTO_UPGRADE',
  });
});
