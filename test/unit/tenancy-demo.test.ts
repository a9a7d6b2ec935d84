/** The `dev` hint must be a request that really resolves to the demo tenant, whatever the resolver config. */
import { describe, expect, it } from 'vitest';
import { DEMO_TENANT, demoRequest, redactSecrets } from '../../src/cli/tenants.js';
import { documentEntries } from '../../src/tenancy/document.js';
import type { ResolverConfig } from '../../src/tenancy/model.js';
import { validateResolverConfig } from '../../src/tenancy/parse.js';
import { resolveHttpTenant, type HttpRequestLike } from '../../src/tenancy/resolve.js';
import { buildSnapshot } from '../../src/tenancy/snapshot.js';

/** Turns `curl [-H 'Name: value'] <url>` back into the request it sends. */
function requestOf(hint: string): HttpRequestLike {
  const headers: Record<string, string> = {};
  for (const [, name, value] of hint.matchAll(/-H '([^:]+): ([^']+)'/g)) headers[name!.toLowerCase()] = value!;
  const url = new URL(/'?(http:\/\/[^\s']+)'?/.exec(hint)![1]!.replace('<port>', '8080'));
  headers.host ??= url.host;
  return { url: url.pathname + url.search, headers };
}

describe('demoRequest', () => {
  it.each<Partial<ResolverConfig>>([
    { httpType: 'header', httpHeaderName: 'X-Tenant-ID' },
    { httpType: 'header', httpHeaderName: 'X-Org' },
    { httpType: 'query', httpQueryParam: 'tenant' },
    { httpType: 'path', httpPathIndex: 0 },
    { httpType: 'path', httpPathIndex: 2 },
    { httpType: 'host', httpHostMode: 'numeric' },
    { httpType: 'host', httpHostMode: 'domain' },
    { httpType: 'host', httpHostMode: 'code' },
  ])('gives a request that resolves to the demo tenant under %j', (input) => {
    const parsed = validateResolverConfig(input);
    if (!parsed.ok) throw new Error(parsed.reason);
    const directory = buildSnapshot(
      [...documentEntries(DEMO_TENANT), ['common/resolver', JSON.stringify(parsed.value)]],
      {
        revision: 1,
      },
    ).snapshot;
    for (const base of ['http://127.0.0.1:<port>', 'http://127.0.0.1:8080/']) {
      const hint = demoRequest(parsed.value, base);
      expect(hint).toMatch(/^curl /);
      expect(resolveHttpTenant(requestOf(hint), directory), hint).toEqual({ ok: true, tenantId: DEMO_TENANT.id });
    }
  });
});

describe('redactSecrets', () => {
  it('masks passwords and password hashes, and only those', () => {
    const view = redactSecrets({
      id: 1,
      databases: { svc: { driver: 'pg', host: 'h', port: 1, database: 'd', password: 'secret' } },
      ftp: [{ username: 'u', passwordHash: 'hash' }, { username: 'v' }],
    });
    expect(view.databases?.svc?.password).toBe('***');
    expect(view.databases?.svc?.host).toBe('h');
    expect(view.ftp?.map((f) => f.passwordHash)).toEqual(['***', undefined]);
  });
});
