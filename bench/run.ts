/**
 * Runs the benchmarks of this folder one after another, each with the command its own header
 * documents (the `Usage:` line), and prints what each prints. A thin runner: every bench stays
 * runnable on its own, and the figures it prints are the ones recorded in bench/RESULTS.md.
 *
 * Usage: npm run bench -- [--list] [--dry-run] [NAME [ARG…]]…
 *   npm run bench                         every bench except those run only when named
 *   npm run bench -- tenancy requests     these two, in this order, with their default arguments
 *   npm run bench -- tenancy 1000 100     tenancy with TENANTS=1000 PUTS=100 (numbers after a
 *                                         name are that bench's positional arguments)
 *   npm run bench -- --list               the benches, their commands and arguments
 *   npm run bench -- --dry-run requests   print the commands without running them
 */
import { spawn } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';

const BENCH_DIR = path.dirname(fileURLToPath(import.meta.url));
const REPO_ROOT = path.resolve(BENCH_DIR, '..');
/** Files in bench/ that are not benchmarks. */
const NOT_BENCHES = new Set(['run.ts', 'support.ts']);
/** Benches a plain `npm run bench` skips: they are run only when named. */
const ONLY_WHEN_NAMED: Record<string, string> = {
  'infra-cold': 'empties every cache and rebuilds all binaries (~10 min on 2 cores)',
};

interface Bench {
  name: string;
  /** The program and its leading arguments, as the header's Usage line spells them. */
  command: string[];
  /** Positional parameters with their defaults, e.g. `N=50`. */
  params: string[];
  /** First sentence of the header comment. */
  about: string;
}

/** Reads a bench's header: its Usage line is the command, its first line the description. */
function readBench(file: string): Bench {
  const text = readFileSync(path.join(BENCH_DIR, file), 'utf8');
  const usage = /Usage:\s+(bash|npx tsx)\s+(bench\/\S+)((?:[ \t]+\[[^\]\n]*\])*)/.exec(text);
  if (!usage) throw new Error(`bench/${file} has no "Usage: npx tsx bench/…" or "Usage: bash bench/…" line`);
  const [, program, script, paramText] = usage;
  const params = [...paramText!.matchAll(/\[([^\]]*)\]/g)].map((m) => m[1]!);
  return {
    name: file.replace(/\.(ts|sh)$/, ''),
    command: [...program!.split(' '), script!],
    params,
    about: firstSentence(text),
  };
}

/** The header comment's first sentence, shortened to fit one line of `--list`. */
function firstSentence(text: string): string {
  const lines: string[] = [];
  for (const raw of text.split('\n')) {
    if (raw.startsWith('#!') || raw.trim() === '/**') continue;
    if (!/^\s*(\/\*\*|\*|#)/.test(raw)) break; // end of the header comment
    const line = raw.replace(/^\s*(\/\*\*|\*|#)\s?/, '').trim();
    lines.push(line);
    if (/[.:]$/.test(line)) break;
  }
  const sentence = lines.join(' ').split(/\.\s/)[0]!.replace(/[.:]$/, '');
  if (sentence.length <= 100) return sentence;
  return `${sentence.slice(0, sentence.lastIndexOf(' ', 98))} …`;
}

function discover(): Bench[] {
  return readdirSync(BENCH_DIR)
    .filter((f) => /\.(ts|sh)$/.test(f) && !NOT_BENCHES.has(f))
    .sort()
    .map(readBench);
}

interface Plan {
  list: boolean;
  dryRun: boolean;
  runs: { bench: Bench; args: string[] }[];
}

const USAGE = `Usage: npm run bench -- [--list] [--dry-run] [NAME [ARG…]]…
  no NAME         every bench except those run only when named
  NAME [ARG…]     that bench; numbers after a name are its positional arguments
  --list, -l      the benches (or the named ones), their commands and arguments
  --dry-run, -n   print the commands instead of running them`;

function usageError(message: string): never {
  console.error(`bench: ${message}\n${USAGE}`);
  process.exit(2);
}

function parseArgs(argv: string[], benches: Bench[]): Plan {
  const byName = new Map(benches.map((b) => [b.name, b]));
  const plan: Plan = { list: false, dryRun: false, runs: [] };
  for (const arg of argv) {
    if (arg === '--list' || arg === '-l') plan.list = true;
    else if (arg === '--dry-run' || arg === '-n') plan.dryRun = true;
    else if (arg === '--help' || arg === '-h') {
      console.log(USAGE);
      process.exit(0);
    } else if (arg.startsWith('-') && !/^-?\d/.test(arg)) usageError(`unknown option ${arg}`);
    else if (byName.has(arg)) plan.runs.push({ bench: byName.get(arg)!, args: [] });
    else if (/^-?\d+(\.\d+)?$/.test(arg)) {
      const last = plan.runs.at(-1);
      if (!last) usageError(`argument ${arg} given before any benchmark name`);
      if (last.args.length >= last.bench.params.length)
        usageError(`${last.bench.name} takes at most ${last.bench.params.length} argument(s): ${show(last.bench)}`);
      last.args.push(arg);
    } else usageError(`no benchmark named "${arg}" (known: ${benches.map((b) => b.name).join(', ')})`);
  }
  if (plan.list) return plan;
  if (plan.runs.length === 0)
    plan.runs = benches.filter((b) => !(b.name in ONLY_WHEN_NAMED)).map((bench) => ({ bench, args: [] }));
  return plan;
}

function show(b: Bench): string {
  return [...b.command, ...b.params.map((p) => `[${p}]`)].join(' ');
}

function list(benches: Bench[]): void {
  const width = Math.max(...benches.map((b) => b.name.length));
  for (const b of benches) {
    const only = ONLY_WHEN_NAMED[b.name];
    console.log(`${b.name.padEnd(width)}  ${b.about}`);
    console.log(
      `${' '.repeat(width)}  $ ${show(b)}${only ? `\n${' '.repeat(width)}  (only when named: ${only})` : ''}`,
    );
  }
  console.log('\nFigures recorded so far, with the machine and the floors: bench/RESULTS.md');
}

let interrupted = false;

/** Runs one command in the foreground; Ctrl-C reaches the bench too, which stops its own stack. */
function run(command: string[]): Promise<number> {
  return new Promise((resolve) => {
    const child = spawn(command[0]!, command.slice(1), { cwd: REPO_ROOT, stdio: 'inherit' });
    child.on('error', (err) => {
      console.error(`bench: cannot start ${command[0]}: ${err.message}`);
      resolve(127);
    });
    child.on('exit', (code, signal) => resolve(code ?? 128 + (signal ? os.constants.signals[signal] : 0)));
  });
}

const benches = discover();
const plan = parseArgs(process.argv.slice(2), benches);
if (plan.list) {
  list(plan.runs.length > 0 ? plan.runs.map((r) => r.bench) : benches);
  process.exit(0);
}

// The bench process gets Ctrl-C from the terminal itself; the runner only stops starting new ones.
process.on('SIGINT', () => (interrupted = true));
process.on('SIGTERM', () => (interrupted = true));

const results: { name: string; code: number | 'skipped'; seconds: number }[] = [];
for (const { bench, args } of plan.runs) {
  const command = [...bench.command, ...args];
  if (plan.dryRun) {
    console.log(command.join(' '));
    continue;
  }
  if (interrupted) {
    results.push({ name: bench.name, code: 'skipped', seconds: 0 });
    continue;
  }
  console.log(`\n== ${bench.name}: ${command.join(' ')}`);
  const t = performance.now();
  const code = await run(command);
  const seconds = (performance.now() - t) / 1000;
  results.push({ name: bench.name, code, seconds });
  console.log(`== ${bench.name}: ${code === 0 ? 'done' : `exit ${code}`} after ${seconds.toFixed(1)} s`);
}

if (results.length > 1) {
  console.log('\n== summary');
  for (const r of results)
    console.log(
      `${r.name.padEnd(16)} ${r.code === 'skipped' ? 'skipped (interrupted)' : r.code === 0 ? 'ok' : `failed (exit ${r.code})`}` +
        (r.code === 'skipped' ? '' : `  ${r.seconds.toFixed(1)} s`),
    );
}
process.exit(results.some((r) => r.code !== 0) ? 1 : 0);
