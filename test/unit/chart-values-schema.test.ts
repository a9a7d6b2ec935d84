/**
 * charts/durable-operators/values.schema.json: generated from src/api/chart-values.ts, and it
 * takes the chart's own values.yaml while refusing a misspelt or mistyped value (helm checks
 * values against it before rendering: test/integration/helm-chart.test.ts shows helm refusing one).
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { Value } from '@sinclair/typebox/value';
import { parse } from 'yaml';
import { describe, expect, it } from 'vitest';
import { ChartValues, chartValuesSchema } from '../../src/api/chart-values.js';
import { CHART_VALUES_SCHEMA } from '../../src/api/generate.js';

const values = parse(readFileSync(path.join(path.dirname(CHART_VALUES_SCHEMA), 'values.yaml'), 'utf8')) as Record<
  string,
  Record<string, unknown>
>;
const errorsOf = (v: unknown) => [...Value.Errors(ChartValues, v)].map((e) => e.path);
const withValue = (set: (v: typeof values) => void) => {
  const v = structuredClone(values);
  set(v);
  return v;
};

describe('the chart’s values.schema.json', () => {
  it('is what `npm run crds` generates from src/api/chart-values.ts (run it if this fails)', () => {
    expect(readFileSync(CHART_VALUES_SCHEMA, 'utf8')).toBe(chartValuesSchema());
  });

  it('takes the chart’s values.yaml', () => {
    expect(errorsOf(values)).toEqual([]);
  });

  it('refuses a misspelt key, at any depth, and a value of the wrong type', () => {
    expect(errorsOf(withValue((v) => (v.worker!.replica = 3)))).toContain('/worker/replica');
    expect(errorsOf(withValue((v) => (v.tolerate = [] as never)))).toContain('/tolerate');
    expect(errorsOf(withValue((v) => ((v.fastpath!.tls as Record<string, unknown>).secret = 'x')))).toContain(
      '/fastpath/tls/secret',
    );
    expect(errorsOf(withValue((v) => (v.fastpath!.consistencyMode = 'eventual')))).toContain(
      '/fastpath/consistencyMode',
    );
    expect(errorsOf(withValue((v) => (v.extraEnv = [{ name: 'A', vaule: 'b' }] as never)))).toContain(
      '/extraEnv/0/vaule',
    );
  });

  it('leaves to the templates what they refuse with a reason of their own (agentPools, the old monitoring booleans)', () => {
    expect(errorsOf(withValue((v) => (v.agentPools = [{ name: 'a' }] as never)))).toEqual([]);
    expect(errorsOf(withValue((v) => (v.monitoring!.serviceMonitor = true)))).toEqual([]);
  });
});
