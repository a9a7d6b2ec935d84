/**
 * The original operator's own samples (test/fixtures/original-samples, its config/samples) as a
 * migrating user applies them: with `credentialsRef` added, each is admitted by the CRD here —
 * no field unknown, every type, enum and pattern as the schema says — and its spec is valid for
 * the operator (no LegacyCredentials, no InvalidSpec); its Ingress examples route as they did.
 */
import { readFile, readdir } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseAllDocuments } from 'yaml';
import { describe, expect, it } from 'vitest';
import { crdOf } from '../../src/api/kind.js';
import { legacyCredentialsOf } from '../../src/domain/cloudflare/legacy-credentials.js';
import { isSourceKind, kindDefinition, validateSource } from '../../src/domain/cloudflare/sources.js';
import { ingressRules, type IngressFacts } from '../../src/domain/cloudflare/tunnels.js';

const DIR = path.join(path.dirname(fileURLToPath(import.meta.url)), '../fixtures/original-samples');

interface Sample {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string; annotations?: Record<string, string> };
  spec?: Record<string, unknown>;
  [top: string]: unknown;
}

async function samples(): Promise<Array<{ file: string; doc: Sample }>> {
  const out: Array<{ file: string; doc: Sample }> = [];
  for (const file of (await readdir(DIR)).filter((f) => f.endsWith('.yaml')).sort())
    for (const d of parseAllDocuments(await readFile(path.join(DIR, file), 'utf8')))
      if (d.contents) out.push({ file, doc: d.toJS() as Sample });
  return out;
}

type Schema = {
  type?: string;
  enum?: unknown[];
  pattern?: string;
  required?: string[];
  properties?: Record<string, Schema>;
  items?: Schema;
  additionalProperties?: boolean | Schema;
  'x-kubernetes-preserve-unknown-fields'?: boolean;
};

/** The paths of `value` the schema does not know (what kubectl's strict field validation refuses). */
function unknownFields(schema: Schema, value: unknown, at: string): string[] {
  if (Array.isArray(value))
    return value.flatMap((v, i) => (schema.items ? unknownFields(schema.items, v, `${at}[${i}]`) : []));
  if (!value || typeof value !== 'object' || schema['x-kubernetes-preserve-unknown-fields']) return [];
  const out: string[] = [];
  for (const [k, v] of Object.entries(value)) {
    const sub =
      schema.properties?.[k] ??
      (typeof schema.additionalProperties === 'object' ? schema.additionalProperties : undefined);
    if (sub) out.push(...unknownFields(sub, v, `${at}.${k}`));
    else if (schema.additionalProperties !== true) out.push(`${at}.${k}`);
  }
  return out;
}

/** `value` as the apiserver stores it: unknown fields pruned. */
function pruneUnknown(schema: Schema, value: unknown): unknown {
  if (Array.isArray(value)) return value.map((v) => (schema.items ? pruneUnknown(schema.items, v) : v));
  if (!value || typeof value !== 'object' || schema['x-kubernetes-preserve-unknown-fields']) return value;
  return Object.fromEntries(
    Object.entries(value).flatMap(([k, v]) => {
      const sub =
        schema.properties?.[k] ??
        (typeof schema.additionalProperties === 'object' ? schema.additionalProperties : undefined);
      if (sub) return [[k, pruneUnknown(sub, v)]];
      return schema.additionalProperties === true ? [[k, v]] : [];
    }),
  );
}

/** What the apiserver refuses of `value` beyond unknown fields: types, enums, patterns, required fields. */
function schemaErrors(schema: Schema, value: unknown, at: string): string[] {
  const t = schema.type;
  const typeOk =
    !t ||
    (t === 'object' && !!value && typeof value === 'object' && !Array.isArray(value)) ||
    (t === 'array' && Array.isArray(value)) ||
    (t === 'integer' && Number.isInteger(value)) ||
    (t === 'number' && typeof value === 'number') ||
    typeof value === t;
  if (!typeOk) return [`${at}: not ${t}`];
  if (schema.enum && !schema.enum.includes(value)) return [`${at}: ${JSON.stringify(value)} not in the enum`];
  if (schema.pattern && typeof value === 'string' && !new RegExp(schema.pattern, 'u').test(value))
    return [`${at}: ${JSON.stringify(value)} does not match ${schema.pattern}`];
  if (Array.isArray(value))
    return value.flatMap((v, i) => (schema.items ? schemaErrors(schema.items, v, `${at}[${i}]`) : []));
  if (!value || typeof value !== 'object') return [];
  const o = value as Record<string, unknown>;
  return [
    ...(schema.required ?? []).filter((r) => o[r] === undefined).map((r) => `${at}.${r}: required`),
    ...Object.entries(o).flatMap(([k, v]) =>
      schema.properties?.[k] ? schemaErrors(schema.properties[k], v, `${at}.${k}`) : [],
    ),
  ];
}

/**
 * Fields the original's samples set that its own CRDs (8631b11, config/crd/bases) do not have
 * either — exactly these, checked against them: its apiserver pruned them as this one does.
 */
const ORIGINAL_SAMPLE_ERRORS: Record<string, string[]> = {
  'networking_v1alpha2_accessidentityprovider.yaml': ['spec.config.clientSecretRef'],
  'networking_v1alpha2_devicesettingspolicy.yaml': [
    'spec.name',
    'spec.description',
    'spec.default',
    'spec.enabled',
    'spec.precedence',
    'spec.match',
    'spec.splitTunnel',
    'spec.fallbackDomains[0].dnsServers',
  ],
  'networking_v1alpha2_gatewayconfiguration.yaml': [
    'spec.settings.activityLogEnabled',
    'spec.settings.tlsDecryptEnabled',
    'spec.settings.blockPageEnabled',
    'spec.settings.blockPageReason',
  ],
};

/**
 * Refusals a sample meets, each naming its field: the IdP sample's secret is in a field its CRD
 * never had, so its provider had no client secret there; here one is required (configSecretRef).
 */
const EXPECTED_PROBLEMS: Record<string, string[]> = {
  'networking_v1alpha2_accessidentityprovider.yaml': [
    'spec.configSecretRef: a github provider needs its client secret, from a Secret',
  ],
};

describe("the original's config/samples, with credentialsRef added", () => {
  it('are admitted by the CRDs and valid for the operator', async () => {
    const checked: string[] = [];
    for (const { file, doc } of await samples()) {
      if (!doc.apiVersion.startsWith('networking.cloudflare-operator.io/') || !isSourceKind(doc.kind)) continue;
      // The v1alpha2 Tunnel and ClusterTunnel samples are skeletons (`spec:` with comments only).
      if ('spec' in doc && doc.spec === null) continue;
      const def = kindDefinition(doc.kind);
      const versions = [def.version, ...(def.olderVersions ?? []).map((v) => v.name)];
      expect(versions, `${file}: ${doc.apiVersion} served`).toContain(doc.apiVersion.split('/')[1]);
      const spec = structuredClone(doc.spec ?? {});
      const cloudflare = spec.cloudflare as Record<string, unknown> | undefined;
      if (cloudflare) cloudflare.credentialsRef = { name: 'migrated' };
      const root = (crdOf(def) as { spec: { versions: Array<{ schema: { openAPIV3Schema: Schema } }> } }).spec
        .versions[0]!.schema.openAPIV3Schema;
      const object = { ...doc, spec };
      const unknown = unknownFields(root, object, '')
        .map((p) => p.slice(1))
        .filter((p) => !p.startsWith('metadata.'));
      expect(unknown, `${file} ${doc.kind}/${doc.metadata.name}: unknown fields`).toEqual(
        ORIGINAL_SAMPLE_ERRORS[file] ?? [],
      );
      const specSchema = root.properties!.spec!;
      const pruned = pruneUnknown(specSchema, spec) as Record<string, unknown>;
      expect(schemaErrors(root, { ...doc, spec: pruned }, ''), `${file}: admitted`).toEqual([]);
      expect(legacyCredentialsOf(spec), `${file}: not LegacyCredentials`).toBeUndefined();
      // What the expansion adds for the kinds that name a tunnel: the tunnel found.
      const ns = doc.metadata.namespace ?? 'default';
      const view = {
        ...(doc.kind === 'TunnelBinding'
          ? {
              subjects: doc.subjects,
              tunnelRef: doc.tunnelRef,
              services: {
                [((doc.subjects as Array<{ name: string }>) ?? [])[0]?.name ?? '']: { ports: [{ port: 80 }] },
              },
            }
          : pruned),
        namespace: ns,
        tunnel: { kind: 'ClusterTunnel', name: 't', tunnelId: 'tid', domain: 'example.com' },
        ingresses: [],
        services: {},
      };
      const subjects = (doc.subjects as Array<{ name: string }> | undefined) ?? [];
      if (doc.kind === 'TunnelBinding')
        view.services = Object.fromEntries(subjects.map((s) => [s.name, { ports: [{ port: 80 }] }]));
      const problems = validateSource(
        doc.kind,
        (['TunnelBinding', 'TunnelIngressClassConfig', 'TunnelGatewayClassConfig'].includes(doc.kind)
          ? view
          : pruned) as never,
        {
          name: doc.metadata.name,
          namespace: ns,
        } as never,
      );
      expect(problems, `${file} ${doc.kind}/${doc.metadata.name}: valid`).toEqual(EXPECTED_PROBLEMS[file] ?? []);
      checked.push(`${doc.kind}@${doc.apiVersion.split('/')[1]}`);
    }
    expect(checked.sort()).toEqual(
      [
        'AccessGroup@v1alpha2',
        'AccessIdentityProvider@v1alpha2',
        'ClusterTunnel@v1alpha1',
        'DNSRecord@v1alpha2',
        'DeviceSettingsPolicy@v1alpha2',
        'GatewayConfiguration@v1alpha2',
        'Tunnel@v1alpha1',
        'TunnelBinding@v1alpha1',
        'TunnelGatewayClassConfig@v1alpha2',
        'TunnelGatewayClassConfig@v1alpha2',
        'TunnelIngressClassConfig@v1alpha2',
        'VirtualNetwork@v1alpha2',
      ].sort(),
    );
  });

  it('its Ingress examples route as they did: the protocol and origin annotations, disable-dns', async () => {
    const all = await samples();
    const config = all.find((s) => s.doc.kind === 'TunnelIngressClassConfig')!.doc.spec as {
      defaultOriginRequest: Record<string, unknown>;
    };
    const ingresses: IngressFacts[] = all
      .filter((s) => s.doc.kind === 'Ingress')
      .map(({ doc }) => ({
        namespace: doc.metadata.namespace ?? 'default',
        name: doc.metadata.name,
        ...(doc.metadata.annotations ? { annotations: doc.metadata.annotations } : {}),
        rules: (doc.spec as { rules: IngressFacts['rules'] }).rules,
      }));
    const { rules, notes, dns } = ingressRules(
      ingresses,
      {},
      {
        protocol: 'http',
        originRequest: config.defaultOriginRequest,
      },
    );
    expect(notes).toEqual([]);
    expect(rules.find((r) => r.hostname === 'secure.example.com')).toEqual({
      hostname: 'secure.example.com',
      service: 'https://secure-service.default.svc:443',
      originRequest: { connectTimeout: 30, http2Origin: true, noTLSVerify: false },
    });
    expect(rules.find((r) => r.hostname === 'app.example.com')).toMatchObject({
      service: 'http://example-service.default.svc:8080',
      originRequest: { connectTimeout: 30 },
    });
    expect(dns.disabled).toEqual(['external.example.com']);
  });
});
