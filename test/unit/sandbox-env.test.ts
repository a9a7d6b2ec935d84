/** envs[].valueFrom decided as the kubelet decides a container's env (src/domain/sandbox-env.ts). */
import { describe, expect, it } from 'vitest';
import { envSourceOf, envSourceValue } from '../../src/domain/sandbox-env.js';

const b64 = (s: string) => Buffer.from(s).toString('base64');

describe('envSourceOf', () => {
  it("reads a secretKeyRef or configMapKeyRef, in the Sandbox's namespace", () => {
    expect(envSourceOf('ns', { secretKeyRef: { name: 's', key: 'k' } })).toEqual({
      kind: 'Secret',
      namespace: 'ns',
      name: 's',
      key: 'k',
      optional: false,
    });
    expect(envSourceOf('ns', { configMapKeyRef: { name: 'c', key: 'k', optional: true } })).toMatchObject({
      kind: 'ConfigMap',
      optional: true,
    });
    expect(envSourceOf('ns', { fieldRef: { fieldPath: 'metadata.name' } })).toBeUndefined();
  });
});

describe('envSourceValue', () => {
  const secret = envSourceOf('ns', { secretKeyRef: { name: 'db', key: 'pw' } })!;
  const configMap = envSourceOf('ns', { configMapKeyRef: { name: 'cfg', key: 'mode' } })!;

  it("a Secret's key is decoded (base64); a ConfigMap's data is taken as is", () => {
    expect(envSourceValue(secret, { data: { pw: b64('hünter2') } })).toEqual({ value: 'hünter2' });
    expect(envSourceValue(configMap, { data: { mode: 'fast' } })).toEqual({ value: 'fast' });
  });

  it("a missing object or key: the kubelet's message; optional: the variable is left out", () => {
    expect(envSourceValue(secret, undefined)).toEqual({ error: 'secret "db" not found' });
    expect(envSourceValue(configMap, undefined)).toEqual({ error: 'configmap "cfg" not found' });
    expect(envSourceValue(secret, { data: {} })).toEqual({ error: "couldn't find key pw in Secret ns/db" });
    expect(envSourceValue(configMap, {})).toEqual({ error: "couldn't find key mode in ConfigMap ns/cfg" });
    expect(envSourceValue({ ...secret, optional: true }, undefined)).toEqual({ omit: true });
    expect(envSourceValue({ ...secret, optional: true }, { data: {} })).toEqual({ omit: true });
  });
});
