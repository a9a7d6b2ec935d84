import { readFile, readdir } from 'node:fs/promises';
import path from 'node:path';
import { parse, parseAllDocuments } from 'yaml';
import { describe, expect, it } from 'vitest';
import { CRD_DIR, renderCrdFiles } from '../../src/api/generate.js';

/** Every YAML file under deploy/ (the CRDs, RBAC, examples…). */
async function deployYamlFiles(): Promise<string[]> {
  const root = path.resolve(CRD_DIR, '..');
  const entries = await readdir(root, { recursive: true });
  return entries.filter((f) => /\.ya?ml$/.test(f)).map((f) => path.join(root, f));
}

describe('deploy/crds', () => {
  it('is what `npm run crds` generates from src/api (run it if this fails)', async () => {
    const expected = renderCrdFiles();
    const onDisk = (await readdir(CRD_DIR)).sort();
    expect(onDisk).toEqual([...expected.keys()].sort());
    for (const [name, content] of expected)
      expect(await readFile(path.join(CRD_DIR, name), 'utf8'), name).toBe(content);
  });

  it('ObjectKeeper has a structural schema with the mode enum, CEL rules and status subresource', () => {
    const crd = parse(renderCrdFiles().get('deckhouse.io_objectkeepers.yaml')!);
    const version = crd.spec.versions[0];
    expect(crd.spec.scope).toBe('Cluster');
    expect(version.subresources).toEqual({ status: {} });
    const spec = version.schema.openAPIV3Schema.properties.spec;
    expect(spec.properties.mode.enum).toEqual(['FollowObject', 'TTL', 'FollowObjectWithTTL']);
    expect(spec.required).toEqual(['mode']);
    expect(spec.properties.followObjectRef.required).toEqual(['apiVersion', 'kind', 'name', 'uid']);
    const rules = spec['x-kubernetes-validations'].map((r: { rule: string }) => r.rule);
    expect(rules).toContain("self.mode != 'FollowObject' || !has(self.ttl)");
    // Structural schemas may not carry TypeBox's own keywords.
    expect(JSON.stringify(crd)).not.toMatch(/"(anyOf|const|\$id|kind":"(Object|String))"/);
  });

  it('reads the same to kubectl (YAML 1.1: unquoted on/off/yes/no are booleans) as it is meant (YAML 1.2)', async () => {
    const files = await deployYamlFiles();
    expect(files.length).toBeGreaterThan(26);
    for (const file of files) {
      const text = await readFile(file, 'utf8');
      const as11 = parseAllDocuments(text, { version: '1.1' }).map((d) => d.toJS());
      const as12 = parseAllDocuments(text).map((d) => d.toJS());
      expect(as11, path.relative(CRD_DIR, file)).toEqual(as12);
    }
    const domain = parse(
      await readFile(path.join(CRD_DIR, 'networking.cloudflare-operator.io_cloudflaredomains.yaml'), 'utf8'),
      {
        version: '1.1',
      },
    );
    const ssl = domain.spec.versions[0].schema.openAPIV3Schema.properties.spec.properties.ssl.properties.mode;
    expect(ssl.enum[0]).toBe('off');
  });

  it("Tunnel and ClusterTunnel: the original's v1alpha1 still served (deprecated, same schema), v1alpha2 stored", () => {
    for (const plural of ['tunnels', 'clustertunnels']) {
      const crd = parse(renderCrdFiles().get(`networking.cloudflare-operator.io_${plural}.yaml`)!);
      const versions = crd.spec.versions as Array<{
        name: string;
        served: boolean;
        storage: boolean;
        deprecated?: boolean;
        schema: unknown;
      }>;
      expect(versions.map((v) => [v.name, v.served, v.storage, !!v.deprecated])).toEqual([
        ['v1alpha1', true, false, true],
        ['v1alpha2', true, true, false],
      ]);
      expect(versions[0]!.schema).toEqual(versions[1]!.schema);
      const spec = (
        versions[0]!.schema as {
          openAPIV3Schema: { properties: { spec: { properties: Record<string, { properties?: object }> } } };
        }
      ).openAPIV3Schema.properties.spec.properties;
      for (const field of ['size', 'image', 'nodeSelectors', 'tolerations', 'deployPatch'])
        expect(spec).toHaveProperty(field);
      expect(spec.cloudflare!.properties).toHaveProperty('zoneId');
    }
  });
});
