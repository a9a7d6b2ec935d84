/**
 * Go duration strings (metav1.Duration), e.g. `90s`, `1h30m`, `1.5h`. Workflow-safe (pure).
 */
const UNIT_MS: Record<string, number> = {
  ns: 1e-6,
  us: 1e-3,
  µs: 1e-3,
  ms: 1,
  s: 1000,
  m: 60_000,
  h: 3_600_000,
};

export function parseGoDuration(text: string): number {
  const re = /([0-9]+(?:\.[0-9]+)?)(ns|us|µs|ms|s|m|h)/gy;
  let total = 0;
  let consumed = 0;
  let m: RegExpExecArray | null;
  while ((m = re.exec(text)) !== null) {
    total += Number(m[1]) * UNIT_MS[m[2]!]!;
    consumed = re.lastIndex;
  }
  if (text.length === 0 || consumed !== text.length) throw new Error(`invalid duration ${JSON.stringify(text)}`);
  return Math.round(total);
}
