/**
 * Helpers of the cluster family (test/cluster/): Pods run by the stack's real kubelet, their
 * logs read where the kubelet writes them (the stack's apiserver has no client certificate for
 * the kubelet, so `kubectl logs` is not wired), waits on Pod and Deployment state.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import type { V1Pod } from '@kubernetes/client-node';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { eventually, kube, stackInfo } from './env.js';

const run = promisify(execFile);

export function node() {
  const n = stackInfo().node;
  if (!n) throw new Error('the cluster family needs the stack with a node (test/cluster/global-setup.ts)');
  return n;
}

/** What a Pod's container wrote so far (every restart's log, in order), from the kubelet's log files. */
export function podLogs(namespace: string, pod: string, container?: string): string {
  const root = node().podLogsDir;
  if (!existsSync(root)) return '';
  const dir = readdirSync(root).find((d) => d.startsWith(`${namespace}_${pod}_`));
  if (!dir) return '';
  const containers = container ? [container] : readdirSync(path.join(root, dir));
  return containers
    .flatMap((c) => {
      const cdir = path.join(root, dir, c);
      if (!existsSync(cdir)) return [];
      return readdirSync(cdir)
        .sort((a, b) => parseInt(a) - parseInt(b))
        .map((f) => readFileSync(path.join(cdir, f), 'utf8'));
    })
    .join('')
    .split('\n')
    .map((line) => line.replace(/^\S+ (stdout|stderr) [FP] /, '')) // CRI log format: time stream tag text
    .join('\n');
}

/** Waits until `pod` is Running and Ready; fails early (with the reason) when it cannot start. */
export async function waitForPodReady(namespace: string, name: string, timeoutMs = 120_000): Promise<V1Pod> {
  const k = kube();
  return eventually(
    `Pod ${namespace}/${name} Ready`,
    async () => {
      const pod = await k.core.readNamespacedPod({ namespace, name });
      const waiting = pod.status?.containerStatuses?.find((c) =>
        c.state?.waiting?.reason?.match(/Err|Invalid|BackOff/),
      );
      if (waiting)
        throw new Error(`${waiting.name}: ${waiting.state?.waiting?.reason}: ${waiting.state?.waiting?.message}`);
      return pod.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') && pod;
    },
    { timeoutMs, intervalMs: 500 },
  );
}

/** kubectl (Debian's) on the stack's cluster: what a platform engineer types. */
export async function kubectl(
  args: string[],
  opts: { timeoutMs?: number } = {},
): Promise<{ code: number; out: string }> {
  try {
    const { stdout, stderr } = await run('kubectl', ['--kubeconfig', stackInfo().kubeconfig, ...args], {
      timeout: opts.timeoutMs ?? 300_000,
      maxBuffer: 64 << 20,
    });
    return { code: 0, out: stdout + stderr };
  } catch (err) {
    const e = err as { code?: number; stdout?: string; stderr?: string };
    return { code: typeof e.code === 'number' ? e.code : 1, out: `${e.stdout ?? ''}${e.stderr ?? ''}` };
  }
}

/** Copies an image within the stack's registry under another name (skopeo): a new tag the chart rolls to. */
export async function copyImage(from: string, to: string): Promise<void> {
  await run(
    'skopeo',
    ['copy', '--src-tls-verify=false', '--dest-tls-verify=false', `docker://${from}`, `docker://${to}`],
    {
      maxBuffer: 16 << 20,
    },
  );
}
