import { readFile, readdir } from 'node:fs/promises';
import path from 'node:path';
import { parse } from 'yaml';
import { describe, expect, it } from 'vitest';
import { CRD_DIR, renderCrdFiles } from '../../src/api/generate.js';

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
});
