import { readFile, readdir } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { API_DOCS_DIR, renderApiReference } from '../../src/api/reference.js';
import { ALL_KINDS } from '../../src/api/index.js';

describe('docs/api', () => {
  it('is what `npm run docs:api` generates from src/api (run it if this fails)', async () => {
    const expected = renderApiReference();
    expect((await readdir(API_DOCS_DIR)).sort()).toEqual([...expected.keys()].sort());
    for (const [name, content] of expected)
      expect(await readFile(path.join(API_DOCS_DIR, name), 'utf8'), name).toBe(content);
  });

  it('documents every kind and every field of its spec', () => {
    const pages = [...renderApiReference().values()].join('\n');
    for (const kind of ALL_KINDS) {
      expect(pages).toContain(`## ${kind.kind}\n`);
      for (const field of Object.keys((kind.spec as { properties?: object }).properties ?? {}))
        expect(pages, `${kind.kind} spec.${field}`).toContain(`| \`spec.${field}\` |`);
    }
  });
});
