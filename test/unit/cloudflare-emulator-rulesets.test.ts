import Cloudflare from 'cloudflare';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startCloudflareEmulator, type RunningEmulator } from '../emulators/cloudflare/index.js';
import { expressionError } from '../emulators/cloudflare/routes/rulesets.js';

describe('rule expression check', () => {
  it('passes balanced expressions, brackets inside strings included', () => {
    for (const e of [
      'ip.src eq 203.0.113.7',
      'ip.src in {1.2.3.0/24 5.6.7.0/24}',
      '(http.host eq "a.example" and not (ip.src in {10.0.0.0/8}))',
      'http.request.uri.path contains "(" or http.request.uri.path contains "\\"}"',
      'any(http.request.headers.names[*] == "x")',
    ])
      expect(expressionError(e), e).toBeUndefined();
  });

  it('finds empty, unbalanced and unterminated expressions, with line:column', () => {
    expect(expressionError('   ')).toMatchObject({ line: 1, column: 4 });
    expect(expressionError('(ip.src eq 1.2.3.4')).toEqual({ line: 1, column: 1, detail: "unclosed '('" });
    expect(expressionError('ip.src eq 1.2.3.4)')).toEqual({ line: 1, column: 18, detail: "unexpected ')'" });
    expect(expressionError('ip.src in {1.2.3.4)')).toMatchObject({
      column: 19,
      detail: "unexpected ')' (expected '}')",
    });
    expect(expressionError('http.host eq "a.example')).toEqual({
      line: 1,
      column: 14,
      detail: 'unterminated string literal',
    });
    expect(expressionError('ip.src eq 1.2.3.4\nand (http.host eq "x"')).toMatchObject({ line: 2, column: 5 });
  });
});

describe('PUT of a phase entrypoint with a malformed expression', () => {
  let emulator: RunningEmulator;
  let cf: Cloudflare;
  const zoneId = 'z'.repeat(32);

  beforeAll(async () => {
    emulator = await startCloudflareEmulator({
      tokens: [{ token: 'good' }],
      seed: { zones: [{ id: zoneId, name: 'a.example', account_id: 'a' }] },
    });
    cf = new Cloudflare({ apiToken: 'good', baseURL: emulator.baseURL, maxRetries: 0 });
  });
  afterAll(() => emulator?.close());

  it('is refused with 400 and a filter parsing error (code 20021), and writes nothing', async () => {
    const good = { action: 'block', expression: 'ip.src eq 203.0.113.7' };
    await cf.rulesets.phases.update('http_request_firewall_custom', { zone_id: zoneId, rules: [good as never] });
    const err = await cf.rulesets.phases
      .update('http_request_firewall_custom', {
        zone_id: zoneId,
        rules: [good as never, { action: 'block', expression: '(ip.src eq 1.2.3.4' } as never],
      })
      .then(
        () => undefined,
        (e: unknown) => e,
      );
    expect(err).toBeInstanceOf(Cloudflare.BadRequestError);
    const apiErr = err as InstanceType<typeof Cloudflare.BadRequestError>;
    expect(apiErr.status).toBe(400);
    expect(apiErr.errors).toEqual([
      { code: 20021, message: `filter parsing error (1:1): unclosed '(' in "(ip.src eq 1.2.3.4"` },
    ]);
    const rs = await cf.rulesets.phases.get('http_request_firewall_custom', { zone_id: zoneId });
    expect(rs.version).toBe('1');
    expect(rs.rules.map((r) => r.expression)).toEqual([good.expression]);
  });

  it('dry_run=true validates as an update does and persists nothing (result null)', async () => {
    const phase = 'http_request_firewall_custom';
    const before = await cf.rulesets.phases.get(phase, { zone_id: zoneId });
    const rules = [{ action: 'block', expression: 'ip.src eq 198.51.100.1' } as never];
    expect(await cf.rulesets.phases.update(phase, { zone_id: zoneId, rules, dry_run: true })).toBeNull();
    const bad = [{ action: 'block', expression: 'ip.src eq (1' } as never];
    await expect(
      cf.rulesets.phases.update(phase, { zone_id: zoneId, rules: bad, dry_run: true }),
    ).rejects.toMatchObject({ status: 400, errors: [expect.objectContaining({ code: 20021 })] });
    expect(await cf.rulesets.phases.get(phase, { zone_id: zoneId })).toEqual(before);
  });
});

describe('PUT of a phase entrypoint: what the Ruleset Engine refuses beyond the body shape', () => {
  let emulator: RunningEmulator;
  let cf: Cloudflare;
  const free = 'f'.repeat(32);
  const enterprise = 'e'.repeat(32);
  const custom = 'http_request_firewall_custom';

  beforeAll(async () => {
    emulator = await startCloudflareEmulator({
      tokens: [{ token: 'good' }],
      seed: {
        zones: [
          { id: free, name: 'free.example', account_id: 'a' },
          { id: enterprise, name: 'ent.example', account_id: 'a', plan: 'enterprise' },
        ],
      },
    });
    cf = new Cloudflare({ apiToken: 'good', baseURL: emulator.baseURL, maxRetries: 0 });
  });
  afterAll(() => emulator?.close());

  const put = async (zoneId: string, phase: string, rules: object[]) =>
    (await cf.rulesets.phases.update(phase as never, { zone_id: zoneId, rules: rules as never })) as {
      rules: unknown[];
    };
  const block = (n: number) => ({ action: 'block', expression: `ip.src eq 192.0.2.${n}` });
  const refusal = (pointer: string) => ({
    status: 400,
    errors: [expect.objectContaining({ code: 20200, source: { pointer } })],
  });

  it('refuses an action the phase does not take (block in a transform phase, rewrite in custom rules)', async () => {
    await expect(put(free, 'http_request_transform', [block(1)])).rejects.toMatchObject(refusal('/rules/0/action'));
    await expect(
      put(free, custom, [block(1), { action: 'rewrite', expression: 'true', action_parameters: {} }]),
    ).rejects.toMatchObject(refusal('/rules/1/action'));
    await expect(cf.rulesets.phases.get('http_request_transform', { zone_id: free })).rejects.toMatchObject({
      status: 404,
    });
  });

  it('refuses log in custom rules below Enterprise, takes it on Enterprise', async () => {
    const log = { action: 'log', expression: 'ip.src eq 192.0.2.9' };
    await expect(put(free, custom, [log])).rejects.toMatchObject(refusal('/rules/0/action'));
    expect((await put(enterprise, custom, [log])).rules).toHaveLength(1);
  });

  it('refuses two rules with the same ref (D17) and persists nothing', async () => {
    await put(free, custom, [block(1)]);
    await expect(
      put(free, custom, [
        { ...block(2), ref: 'same' },
        { ...block(3), ref: 'same' },
      ]),
    ).rejects.toMatchObject(refusal('/rules/1/ref'));
    const rs = await cf.rulesets.phases.get(custom, { zone_id: free });
    expect(rs.rules.map((r) => r.expression)).toEqual([block(1).expression]);
  });

  it("refuses more rules than the zone's plan allows: Free 5 custom rules, 10 redirects; Enterprise 1,000", async () => {
    const n = (count: number) => Array.from({ length: count }, (_, i) => block(i));
    expect((await put(free, custom, n(5))).rules).toHaveLength(5);
    await expect(put(free, custom, n(6))).rejects.toMatchObject(refusal('/rules'));
    // dry_run validates the same way
    await expect(
      cf.rulesets.phases.update(custom, { zone_id: free, rules: n(6) as never, dry_run: true }),
    ).rejects.toMatchObject(refusal('/rules'));
    expect((await put(enterprise, custom, n(6))).rules).toHaveLength(6);
    const redirect = (i: number) => ({
      action: 'redirect',
      expression: `http.request.uri.path eq "/${i}"`,
      action_parameters: { from_value: { target_url: { value: 'https://example.com/' } } },
    });
    const redirects = (count: number) => Array.from({ length: count }, (_, i) => redirect(i));
    expect((await put(free, 'http_request_dynamic_redirect', redirects(10))).rules).toHaveLength(10);
    await expect(put(free, 'http_request_dynamic_redirect', redirects(11))).rejects.toMatchObject(refusal('/rules'));
  });
});
