/**
 * The alert rules of deploy/monitoring/prometheus-rule.yaml evaluated by Prometheus' own rule
 * engine: `promtool test rules` over deploy/monitoring/tests/*.yaml (each alert fires on the
 * series the roles export, as a ServiceMonitor labels them, and stays silent where it should).
 * promtool is provisioned with the other tools by `npm run infra` (src/infra/binaries.ts).
 */
import { execFile } from 'node:child_process';
import { copyFile, mkdtemp, readFile, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse, stringify } from 'yaml';
import { findBinary } from '../../src/infra/binaries.js';

const MONITORING = path.resolve(import.meta.dirname, '../../deploy/monitoring');
let dir: string;

beforeAll(async () => {
  dir = await mkdtemp(path.join(tmpdir(), 'rules-'));
  // promtool reads Prometheus rule files: the PrometheusRule's spec is one.
  const rule = parse(await readFile(path.join(MONITORING, 'prometheus-rule.yaml'), 'utf8')) as { spec: object };
  await writeFile(path.join(dir, 'rules.yaml'), stringify(rule.spec));
});

afterAll(async () => {
  if (dir) await rm(dir, { recursive: true, force: true });
});

describe('the alert rules', () => {
  it('pass promtool check rules and every case of deploy/monitoring/tests', async () => {
    const attempts: string[] = [];
    const promtool = findBinary('promtool', attempts);
    if (!promtool) throw new Error(`promtool is missing (npm run infra provisions it): ${attempts.join('; ')}`);
    const run = promisify(execFile);
    await run(promtool.path, ['check', 'rules', path.join(dir, 'rules.yaml')]);
    const cases = (await readdir(path.join(MONITORING, 'tests'))).filter((f) => f.endsWith('.yaml'));
    expect(cases.length).toBeGreaterThan(0);
    for (const f of cases) await copyFile(path.join(MONITORING, 'tests', f), path.join(dir, f));
    const result = await run(promtool.path, ['test', 'rules', ...cases], { cwd: dir }).catch(
      (e: { stdout: string; stderr: string }) => e,
    );
    expect(`${result.stdout}${result.stderr}`).not.toMatch(/FAILED|error/i);
    expect(result.stdout).toMatch(/SUCCESS/);
  });

  it('name every alert in a test case', async () => {
    const rule = parse(await readFile(path.join(MONITORING, 'prometheus-rule.yaml'), 'utf8')) as {
      spec: { groups: { rules: { alert?: string }[] }[] };
    };
    const alerts = rule.spec.groups.flatMap((g) => g.rules.map((r) => r.alert)).filter(Boolean);
    const tested = new Set<string>();
    for (const f of await readdir(path.join(MONITORING, 'tests'))) {
      const t = parse(await readFile(path.join(MONITORING, 'tests', f), 'utf8')) as {
        tests: { alert_rule_test?: { alertname: string; exp_alerts: unknown[] }[] }[];
      };
      for (const c of t.tests.flatMap((x) => x.alert_rule_test ?? [])) if (c.exp_alerts.length) tested.add(c.alertname);
    }
    expect(alerts.filter((a) => !tested.has(a!))).toEqual([]);
  });
});
