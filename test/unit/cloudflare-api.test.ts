/**
 * The Cloudflare kinds' schemas (src/api/cloudflare.ts) checked with TypeBox against objects:
 * the examples of deploy/examples/cloudflare and manifests in the original's shape pass; bad
 * enums and missing required fields fail; CIDRs and expressions are left to the operator.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { TSchema } from '@sinclair/typebox';
import { Value } from '@sinclair/typebox/value';
import { parseAllDocuments } from 'yaml';
import { describe, expect, it } from 'vitest';
import '../support/typebox.js';
import {
  ALL_KINDS,
  CLOUDFLARE_GROUP,
  CLOUDFLARE_SOURCE_FINALIZER,
  CLOUDFLARE_VERSION,
  CloudflareCredentialsKind,
  CloudflareSyncStateKind,
  DeviceSettingsPolicyKind,
  REDIRECT_PHASE,
  RULESET_PHASES,
  RedirectRuleKind,
  SYNC_RESOURCE_TYPES,
  TRANSFORM_PHASES,
  TransformRuleKind,
  ZoneRulesetKind,
  crdOf,
  type KindDefinition,
} from '../../src/api/index.js';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const EXAMPLES = path.join(ROOT, 'deploy/examples/cloudflare');

interface Obj {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string };
  spec?: unknown;
  status?: unknown;
}

const byKind = new Map<string, KindDefinition>(
  [
    CloudflareSyncStateKind,
    CloudflareCredentialsKind,
    DeviceSettingsPolicyKind,
    ZoneRulesetKind,
    TransformRuleKind,
    RedirectRuleKind,
  ].map((k) => [k.kind, k]),
);

/** Every schema problem of an object of one of our kinds, as `spec/path: message`. */
function problems(obj: Obj): string[] {
  const kind = byKind.get(obj.kind);
  if (!kind) return [`unknown kind ${obj.kind}`];
  const out: string[] = [];
  if (obj.apiVersion !== `${CLOUDFLARE_GROUP}/${CLOUDFLARE_VERSION}`) out.push(`apiVersion ${obj.apiVersion}`);
  if (kind.scope === 'Cluster' && obj.metadata.namespace) out.push('cluster-scoped object with a namespace');
  const check = (part: 'spec' | 'status', schema: TSchema) => {
    for (const e of Value.Errors(schema, obj[part])) out.push(`${part}${e.path}: ${e.message}`);
  };
  check('spec', kind.spec);
  if (obj.status !== undefined) check('status', kind.status);
  return out;
}
const valid = (obj: Obj) => problems(obj).length === 0;

function readExamples(file: string): Obj[] {
  return parseAllDocuments(readFileSync(path.join(EXAMPLES, file), 'utf8'))
    .map((d) => d.toJS() as Obj | null)
    .filter((o): o is Obj => o !== null);
}

const ours = (objs: Obj[]) => objs.filter((o) => byKind.has(o.kind));
const apiVersion = `${CLOUDFLARE_GROUP}/${CLOUDFLARE_VERSION}`;

describe('networking.cloudflare-operator.io/v1alpha2', () => {
  it('exports the group, version, finalizer and phase maps', () => {
    expect(CLOUDFLARE_GROUP).toBe('networking.cloudflare-operator.io');
    expect(CLOUDFLARE_VERSION).toBe('v1alpha2');
    expect(CLOUDFLARE_SOURCE_FINALIZER).toBe('cloudflare-operator.io/sync-source');
    expect(RULESET_PHASES).toHaveLength(14);
    // The original's 29, and TunnelDNS (a zone's tunnel CNAMEs, written outside any SyncState in the original).
    expect(SYNC_RESOURCE_TYPES).toHaveLength(30);
    expect(TRANSFORM_PHASES).toEqual({
      url_rewrite: 'http_request_transform',
      request_header: 'http_request_late_transform',
      response_header: 'http_response_headers_transform',
    });
    expect(REDIRECT_PHASE).toBe('http_request_dynamic_redirect');
    for (const phase of [...Object.values(TRANSFORM_PHASES), REDIRECT_PHASE]) expect(RULESET_PHASES).toContain(phase);
  });

  it('registers the six kinds with the original scope and short names', () => {
    const names = (k: KindDefinition) => [k.kind, k.scope, k.plural, ...(k.shortNames ?? [])];
    for (const k of byKind.values()) expect(ALL_KINDS).toContain(k);
    expect([...byKind.values()].map(names)).toEqual([
      ['CloudflareSyncState', 'Cluster', 'cloudflaresyncstates', 'cfss', 'syncstate'],
      ['CloudflareCredentials', 'Cluster', 'cloudflarecredentials', 'cfcreds'],
      ['DeviceSettingsPolicy', 'Cluster', 'devicesettingspolicies', 'dsp'],
      ['ZoneRuleset', 'Namespaced', 'zonerulesets', 'cfzr', 'zoneruleset'],
      ['TransformRule', 'Namespaced', 'transformrules', 'cftransform', 'transformrule'],
      ['RedirectRule', 'Namespaced', 'redirectrules', 'cfredirect', 'redirectrule'],
    ]);
  });

  it('gives every source kind a priority (default 100, ≥ 0), syncState on status and a Ready column', () => {
    for (const k of [DeviceSettingsPolicyKind, ZoneRulesetKind, TransformRuleKind, RedirectRuleKind]) {
      type Props = Record<string, { properties: Record<string, Record<string, unknown>> }>;
      const crd = crdOf(k) as {
        spec: {
          versions: {
            additionalPrinterColumns: { name: string; jsonPath: string }[];
            schema: { openAPIV3Schema: { properties: Props } };
          }[];
        };
      };
      const v = crd.spec.versions[0]!;
      const props = v.schema.openAPIV3Schema.properties;
      expect(props.spec!.properties.priority, k.kind).toMatchObject({ type: 'integer', default: 100, minimum: 0 });
      for (const f of ['conditions', 'observedGeneration', 'syncState', 'state', 'message'])
        expect(props.status!.properties[f], `${k.kind} status.${f}`).toBeDefined();
      expect(v.additionalPrinterColumns).toContainEqual(
        expect.objectContaining({ name: 'Ready', jsonPath: '.status.conditions[?(@.type=="Ready")].status' }),
      );
    }
  });

  describe('deploy/examples/cloudflare', () => {
    it('device-settings-policies.yaml: aws-vpc-proxy and office-network, valid', () => {
      const objs = readExamples('device-settings-policies.yaml');
      expect(objs.map((o) => `${o.kind}/${o.metadata.name}`)).toEqual([
        'DeviceSettingsPolicy/aws-vpc-proxy',
        'DeviceSettingsPolicy/office-network',
      ]);
      for (const o of objs) expect(problems(o), o.metadata.name).toEqual([]);
      const include = objs.map((o) => (o.spec as { splitTunnelInclude: unknown[] }).splitTunnelInclude);
      expect(include).toEqual([
        [{ address: '10.0.0.0/8', description: 'AWS VPC' }],
        [{ address: '192.168.1.0/24', description: 'Office Network' }],
      ]);
      for (const o of objs) expect(o.spec).toMatchObject({ cloudflare: { credentialsRef: { name: 'default' } } });
    });

    it('zone-rulesets.yaml: two teams’ WAF rules for one zone and phase, valid', () => {
      const objs = readExamples('zone-rulesets.yaml');
      expect(objs.map((o) => `${o.kind} ${o.metadata.namespace}/${o.metadata.name}`)).toEqual([
        'ZoneRuleset default/waf-rules-team-a',
        'ZoneRuleset default/waf-rules-team-b',
      ]);
      for (const o of objs) expect(problems(o), o.metadata.name).toEqual([]);
      expect(objs.map((o) => o.spec)).toEqual([
        expect.objectContaining({
          zone: 'example.com',
          phase: 'http_request_firewall_custom',
          rules: [expect.objectContaining({ expression: 'ip.src in {1.2.3.0/24}', action: 'block' })],
        }),
        expect.objectContaining({
          zone: 'example.com',
          phase: 'http_request_firewall_custom',
          rules: [expect.objectContaining({ expression: 'ip.src in {5.6.7.0/24}', action: 'block' })],
        }),
      ]);
    });

    it('credentials.yaml: the default credentials and their Secret, with a placeholder token', () => {
      const objs = readExamples('credentials.yaml');
      const creds = objs.find((o) => o.kind === 'CloudflareCredentials')!;
      const secret = objs.find((o) => o.kind === 'Secret') as Obj & { stringData: Record<string, string> };
      expect(problems(creds)).toEqual([]);
      expect(creds.metadata.name).toBe('default');
      expect(creds.spec).toMatchObject({
        isDefault: true,
        secretRef: {
          name: 'cloudflare-api-token',
          namespace: 'durable-operators',
          apiTokenKey: 'CLOUDFLARE_API_TOKEN',
        },
      });
      expect(secret.metadata).toEqual({ name: 'cloudflare-api-token', namespace: 'durable-operators' });
      expect(secret.stringData).toEqual({ CLOUDFLARE_API_TOKEN: 'REPLACE-WITH-CLOUDFLARE-API-TOKEN' });
    });

    it('every object of our kinds in the examples is valid', () => {
      const all = ['credentials.yaml', 'device-settings-policies.yaml', 'zone-rulesets.yaml'].flatMap(readExamples);
      expect(ours(all)).toHaveLength(5);
      for (const o of ours(all)) expect(problems(o), `${o.kind}/${o.metadata.name}`).toEqual([]);
    });
  });

  describe('ZoneRuleset', () => {
    const rs = (spec: Record<string, unknown>): Obj => ({
      apiVersion,
      kind: 'ZoneRuleset',
      metadata: { name: 'r', namespace: 'default' },
      spec: {
        zone: 'example.com',
        phase: 'http_request_firewall_custom',
        rules: [{ expression: 'true', action: 'block' }],
        ...spec,
      },
    });

    it('refuses an unknown phase, an unknown action, no rules, a negative priority', () => {
      expect(problems(rs({ phase: 'nope' }))).toEqual([expect.stringMatching(/^spec\/phase: /)]);
      expect(valid(rs({ rules: [{ expression: 'true', action: 'explode' }] }))).toBe(false);
      expect(valid(rs({ rules: [] }))).toBe(false);
      expect(valid(rs({ rules: [{ action: 'block' }] }))).toBe(false);
      expect(valid(rs({ priority: -1 }))).toBe(false);
      expect(valid(rs({ priority: 0 }))).toBe(true);
    });

    it('leaves expressions to the operator, and keeps typed and unknown action parameters', () => {
      expect(valid(rs({ rules: [{ expression: 'ip.src in {999.1.2.3/77', action: 'block' }] }))).toBe(true);
      const rule = {
        expression: 'http.request.uri.path eq "/old"',
        action: 'rewrite',
        ref: 'r1',
        enabled: false,
        actionParameters: {
          uri: { path: { value: '/new' } },
          headers: { 'X-Team': { operation: 'set', value: 'a' } },
          somethingNew: { x: 1 },
        },
        rateLimit: { characteristics: ['ip.src'], period: 60, requestsPerPeriod: 100, mitigationTimeout: 600 },
      };
      expect(problems(rs({ phase: 'http_request_transform', rules: [rule] }))).toEqual([]);
      const badHeader = { ...rule, actionParameters: { headers: { 'X-Team': { operation: 'append' } } } };
      expect(valid(rs({ rules: [badHeader] }))).toBe(false);
    });

    it('accepts the status the operator writes', () => {
      const obj = rs({});
      obj.status = {
        state: 'Ready',
        rulesetId: 'abc',
        zoneId: 'z',
        ruleCount: 1,
        observedGeneration: 2,
        syncState: 'zoneruleset-z-http-request-firewall-custom',
        message: 'synced',
        conditions: [
          { type: 'Ready', status: 'True', reason: 'Synced', message: '', lastTransitionTime: '2026-01-01T00:00:00Z' },
        ],
      };
      expect(problems(obj)).toEqual([]);
    });
  });

  describe('CloudflareSyncState', () => {
    const ss = (sources: unknown[], status?: unknown): Obj => ({
      apiVersion,
      kind: 'CloudflareSyncState',
      metadata: { name: 'zoneruleset-z-phase' },
      spec: {
        resourceType: 'ZoneRuleset',
        cloudflareId: 'pending',
        accountId: 'acc',
        zoneId: 'z',
        credentialsRef: { name: 'default' },
        sources,
      },
      ...(status ? { status } : {}),
    });
    const source = {
      ref: { kind: 'ZoneRuleset', namespace: 'default', name: 'waf-rules-team-a' },
      priority: 100,
      config: { rules: [{ expression: 'ip.src in {1.2.3.0/24}', action: 'block' }] },
      lastUpdated: '2026-01-01T00:00:00Z',
    };

    it('accepts sources with free-form config and the status of a failed sync', () => {
      const status = {
        syncStatus: 'Failed',
        configVersion: 3,
        configHash: 'sha256:00',
        aggregatedConfig: { anything: [1, 'two'] },
        error: 'bad expression',
        failureReason: 'permanent error',
        retryCount: 5,
        maxRetries: 5,
        failedAt: '2026-01-01T00:00:00Z',
        errorCategory: 'Validation',
        resultData: { rulesetId: 'abc' },
        observedGeneration: 1,
      };
      expect(problems(ss([source], status))).toEqual([]);
      expect(problems(ss([{ ...source, ref: { kind: 'DeviceSettingsPolicy', name: 'aws-vpc-proxy' } }]))).toEqual([]);
    });

    it('refuses a source without ref, an unknown resource type or sync status', () => {
      const { ref: _ref, ...noRef } = source;
      expect(problems(ss([noRef]))).toContainEqual(expect.stringMatching(/^spec\/sources\/0\/ref: /));
      expect(valid(ss([{ ...source, ref: { kind: 'ZoneRuleset' } }]))).toBe(false);
      expect(valid(ss([{ ref: source.ref }]))).toBe(false);
      const obj = ss([source]);
      (obj.spec as Record<string, unknown>).resourceType = 'Nope';
      expect(valid(obj)).toBe(false);
      expect(valid(ss([source], { syncStatus: 'Done' }))).toBe(false);
    });
  });

  describe('DeviceSettingsPolicy', () => {
    const dsp = (spec: Record<string, unknown>): Obj => ({
      apiVersion,
      kind: 'DeviceSettingsPolicy',
      metadata: { name: 'p' },
      spec: { cloudflare: { credentialsRef: { name: 'default' } }, ...spec },
    });

    it('takes the original fields, leaves bad CIDRs to the operator, refuses an unknown mode', () => {
      expect(
        problems(
          dsp({
            splitTunnelMode: 'exclude',
            splitTunnelExclude: [{ address: 'not-a-cidr' }, { host: 'corp.internal', description: 'corp' }],
            fallbackDomains: [{ suffix: 'corp.internal', dnsServer: ['10.0.0.2'] }],
            autoPopulateFromRoutes: { enabled: true, labelSelector: { matchLabels: { team: 'a' } } },
            priority: 10,
            cloudflare: { accountId: 'acc', secret: 'legacy', CLOUDFLARE_API_TOKEN: 'TOKEN' },
          }),
        ),
      ).toEqual([]);
      expect(valid(dsp({ splitTunnelMode: 'both' }))).toBe(false);
      expect(valid(dsp({ fallbackDomains: [{ description: 'no suffix' }] }))).toBe(false);
      expect(valid(dsp({ splitTunnelInclude: [{ address: '10.0.0.0/8', description: 'x'.repeat(201) }] }))).toBe(false);
      const { cloudflare: _c, ...noCloudflare } = dsp({}).spec as Record<string, unknown>;
      expect(valid({ ...dsp({}), spec: noCloudflare })).toBe(false);
    });
  });

  describe('TransformRule and RedirectRule', () => {
    const tr = (spec: Record<string, unknown>): Obj => ({
      apiVersion,
      kind: 'TransformRule',
      metadata: { name: 't', namespace: 'default' },
      spec: { zone: 'example.com', type: 'request_header', ...spec },
    });
    const rr = (spec: Record<string, unknown>): Obj => ({
      apiVersion,
      kind: 'RedirectRule',
      metadata: { name: 'r', namespace: 'default' },
      spec: { zone: 'example.com', ...spec },
    });

    it('TransformRule: the original rules, type and header operation enums', () => {
      const rule = {
        name: 'add header',
        expression: 'true',
        headers: [{ name: 'X-A', operation: 'set', value: '1' }],
      };
      expect(problems(tr({ rules: [rule], credentialsRef: { name: 'default' }, priority: 5 }))).toEqual([]);
      expect(
        problems(
          tr({
            type: 'url_rewrite',
            rules: [{ name: 'v2', expression: 'true', urlRewrite: { path: { expression: 'concat("/v2", x)' } } }],
          }),
        ),
      ).toEqual([]);
      expect(valid(tr({ type: 'cookie', rules: [rule] }))).toBe(false);
      expect(valid(tr({ rules: [] }))).toBe(false);
      expect(valid(tr({ rules: [{ ...rule, headers: [{ name: 'X', operation: 'append' }] }] }))).toBe(false);
    });

    it('RedirectRule: rules and wildcardRules, status codes 301/302/307/308 only', () => {
      const spec = {
        rules: [{ name: 'old', expression: 'http.request.uri.path eq "/old"', target: { url: 'https://e.com/new' } }],
        wildcardRules: [
          {
            name: 'blog',
            sourceUrl: 'https://example.com/blog/*',
            targetUrl: 'https://example.com/articles/${1}',
            statusCode: 308,
            includeSubdomains: true,
          },
        ],
      };
      expect(problems(rr(spec))).toEqual([]);
      expect(problems(rr({}))).toEqual([]);
      expect(valid(rr({ rules: [{ ...spec.rules[0], statusCode: 303 }] }))).toBe(false);
      expect(valid(rr({ rules: [{ ...spec.rules[0], statusCode: '301' }] }))).toBe(false);
      expect(valid(rr({ rules: [{ name: 'no target', expression: 'true' }] }))).toBe(false);
      expect(valid(rr({ wildcardRules: [{ name: 'w', sourceUrl: 'https://e.com/*' }] }))).toBe(false);
    });
  });

  it('CloudflareCredentials: authType enum, secretRef required', () => {
    const c = (spec: Record<string, unknown>): Obj => ({
      apiVersion,
      kind: 'CloudflareCredentials',
      metadata: { name: 'c' },
      spec: { accountId: 'acc', secretRef: { name: 's' }, ...spec },
    });
    expect(problems(c({}))).toEqual([]);
    expect(problems(c({ authType: 'globalAPIKey', secretRef: { name: 's', apiKeyKey: 'K', emailKey: 'E' } }))).toEqual(
      [],
    );
    expect(valid(c({ authType: 'password' }))).toBe(false);
    expect(valid(c({ secretRef: undefined }))).toBe(false);
  });
});
