/**
 * Prometheus' text format as the tests read it, and the series the alert rules' unit tests
 * (deploy/monitoring/tests) feed them, so a test can check that the roles really export them.
 */
import { readFileSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { parse } from 'yaml';
import { REPO_ROOT } from './env.js';

export interface Series {
  name: string;
  labels: Record<string, string>;
}

const SERIES = /^([a-zA-Z_:][\w:]*)(?:\{(.*)\})?/;
const LABEL = /(\w+)="((?:[^"\\]|\\.)*)"/g;

function parseSeries(text: string): Series | undefined {
  const m = SERIES.exec(text.trim());
  if (!m) return undefined;
  const labels: Record<string, string> = {};
  for (const [, k, v] of (m[2] ?? '').matchAll(LABEL)) labels[k!] = v!;
  return { name: m[1]!, labels };
}

/** A scrape: every sample's series, and the metric names declared (`# TYPE`) even without one. */
export function parseExposition(body: string): { series: Series[]; declared: Set<string> } {
  const series: Series[] = [];
  const declared = new Set<string>();
  for (const line of body.split('\n')) {
    if (line.startsWith('# TYPE ')) declared.add(line.split(' ')[2]!);
    else if (line && !line.startsWith('#')) {
      const s = parseSeries(line);
      if (s) series.push(s);
    }
  }
  return { series, declared };
}

/** Labels Prometheus (the ServiceMonitor) sets on a target, not the role. */
const TARGET_LABELS = ['job', 'namespace', 'pod', 'container', 'endpoint', 'instance', 'service'];

/**
 * The input series of deploy/monitoring/tests/*.yaml as a role exports them: target labels off,
 * `exported_namespace` back to the `namespace` the Temporal SDK writes. `up` is Prometheus' own.
 */
export function ruleTestSeries(): Series[] {
  const dir = path.join(REPO_ROOT, 'deploy/monitoring/tests');
  const out = new Map<string, Series>();
  for (const f of readdirSync(dir).filter((n) => n.endsWith('.yaml'))) {
    const doc = parse(readFileSync(path.join(dir, f), 'utf8')) as { tests: { input_series?: { series: string }[] }[] };
    for (const { series } of doc.tests.flatMap((t) => t.input_series ?? [])) {
      const s = parseSeries(series);
      if (!s || s.name === 'up') continue;
      const labels = Object.fromEntries(Object.entries(s.labels).filter(([k]) => !TARGET_LABELS.includes(k)));
      if ('exported_namespace' in labels) {
        labels.namespace = labels.exported_namespace!;
        delete labels.exported_namespace;
      }
      out.set(`${s.name}${JSON.stringify(Object.keys(labels).sort())}`, { name: s.name, labels });
    }
  }
  return [...out.values()];
}
