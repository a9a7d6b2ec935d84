/**
 * The README and docs/ stand alone: every relative link resolves to a file or folder inside the
 * repository (and its #anchor to a heading of the target), and nothing points outside it. Every
 * page of docs/ is reachable: linked from the README, and from the navigation bar each page
 * carries under its title.
 */
import { existsSync, readFileSync, readdirSync, statSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const DOCS = [
  'README.md',
  ...readdirSync(path.join(ROOT, 'docs'), { recursive: true, encoding: 'utf8' })
    .filter((f) => f.endsWith('.md'))
    .map((f) => `docs/${f}`),
];

/** Markdown links and images, `[text](target)`, outside code blocks and code spans (regex patterns in docs/api). */
function links(markdown: string): string[] {
  const prose = markdown.replace(/^```[\s\S]*?^```/gm, '').replace(/`[^`\n]*`/g, '');
  return [...prose.matchAll(/\]\(([^)\s]+)(?:\s+"[^"]*")?\)/g)].map((m) => m[1]!);
}

/** GitHub's heading anchors: lower-case, punctuation dropped, spaces to hyphens. */
function anchors(markdown: string): Set<string> {
  const prose = markdown.replace(/^```[\s\S]*?^```/gm, '');
  return new Set(
    [...prose.matchAll(/^#{1,6}\s+(.+)$/gm)].map((m) =>
      m[1]!
        .trim()
        .toLowerCase()
        .replace(/[^\p{L}\p{N}\s_-]/gu, '')
        .replace(/\s/g, '-'),
    ),
  );
}

describe.each(DOCS)('%s', (doc) => {
  const text = readFileSync(path.join(ROOT, doc), 'utf8');

  it('does not refer to files outside the repository', () => {
    expect(text).not.toMatch(/\.\.\/shared\b|DESIGN\.md/);
  });

  it('has only relative links that resolve inside the repository', () => {
    const broken: string[] = [];
    for (const link of links(text)) {
      if (/^[a-z][a-z0-9+.-]*:/i.test(link)) continue; // https:, mailto:, …
      const [target, anchor] = link.split('#') as [string, string | undefined];
      const file = target === '' ? path.join(ROOT, doc) : path.resolve(path.dirname(path.join(ROOT, doc)), target);
      if (path.relative(ROOT, file).startsWith('..')) broken.push(`${link} (outside the repository)`);
      else if (!existsSync(file)) broken.push(`${link} (no such file)`);
      else if (anchor && statSync(file).isFile() && file.endsWith('.md')) {
        if (!anchors(readFileSync(file, 'utf8')).has(anchor)) broken.push(`${link} (no such heading)`);
      }
    }
    expect(broken).toEqual([]);
  });
});

/** The pages of docs/ (not the generated API reference under docs/api/). */
const PAGES = readdirSync(path.join(ROOT, 'docs')).filter((f) => f.endsWith('.md'));

describe('every docs page is reachable', () => {
  it('from the README', () => {
    const linked = new Set(links(readFileSync(path.join(ROOT, 'README.md'), 'utf8')).map((l) => l.split('#')[0]));
    expect(PAGES.filter((page) => !linked.has(`docs/${page}`))).toEqual([]);
  });

  it.each(PAGES)('from the navigation bar under the title of %s', (page) => {
    const [title, blank, bar] = readFileSync(path.join(ROOT, 'docs', page), 'utf8').split('\n');
    expect(title).toMatch(/^# /);
    expect(blank).toBe('');
    const targets = new Set(links(bar ?? ''));
    expect(['../README.md', 'api/README.md', ...PAGES].filter((target) => !targets.has(target))).toEqual([]);
  });
});
