/**
 * Crash drills inside an activity, between two of its side effects (the companion of
 * DO_FAULT_KILL_AFTER_ACTIVITY in src/workers/fault-injection.ts, which kills after a whole
 * activity). `DO_FAULT_KILL_AT=<point>[,<point>…]` makes the process SIGKILL itself when it
 * reaches such a point, e.g. `cloudflare-read` (after the GET, before the PUT),
 * `cloudflare-write` (after the PUT, before the status write) or `cloudflare-settings-recorded`
 * (a settings target's holdings recorded, nothing written yet). Never set it in production.
 */
export function faultPoint(name: string, env: NodeJS.ProcessEnv = process.env): void {
  const spec = env.DO_FAULT_KILL_AT;
  if (
    !spec ||
    !spec
      .split(',')
      .map((s) => s.trim())
      .includes(name)
  )
    return;
  process.stderr.write(`fault injection: SIGKILL at ${name}\n`);
  process.kill(process.pid, 'SIGKILL');
}
