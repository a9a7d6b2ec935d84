/**
 * docs/web-ui.md's saved queries: each is accepted by a real Temporal server (search attributes
 * registered as the stack registers them), and every workflow type it names is one the worker
 * runs, so a renamed workflow or attribute breaks this test rather than an operator's saved view.
 */
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import * as bundle from '../../src/workflows/index.js';
import { REPO_ROOT, temporal } from '../support/env.js';

async function documentedQueries(): Promise<Map<string, string>> {
  const text = await readFile(path.join(REPO_ROOT, 'docs/web-ui.md'), 'utf8');
  const queries = new Map<string, string>();
  for (const m of text.matchAll(/<!-- query: ([\w-]+) -->\s*```sql\n([\s\S]*?)\n```/g))
    queries.set(m[1]!, m[2]!.trim());
  return queries;
}

describe('the Web UI saved queries in docs/web-ui.md', () => {
  it('one per system, each accepted by Temporal, naming only workflow types the worker runs', async () => {
    const queries = await documentedQueries();
    expect([...queries.keys()]).toEqual(
      expect.arrayContaining(['requests', 'tenant', 'sandboxes', 'sandbox-housekeeping', 'cloudflare-targets']),
    );
    const client = await temporal();
    for (const [name, query] of queries) {
      await expect(client.workflow.count(query), `query ${name}: ${query}`).resolves.toMatchObject({
        count: expect.any(Number),
      });
      const types = [...query.matchAll(/WorkflowType\s*(?:=|IN)\s*\(?([^)]*?)\)?(?:\s+AND|$)/g)].flatMap((m) =>
        [...m[1]!.matchAll(/'(\w+)'/g)].map((t) => t[1]!),
      );
      for (const t of types)
        expect(typeof (bundle as Record<string, unknown>)[t], `${name}: workflow type ${t}`).toBe('function');
    }
  });
});
