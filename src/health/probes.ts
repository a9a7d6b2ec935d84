/**
 * Kubernetes probes, the same for every role. `/healthz` (liveness): the process answers, and
 * what keeps the role useful is still running (say, its Temporal worker) — a failure here makes
 * the kubelet restart the container. `/readyz` (readiness): it can reach what it needs right now
 * (Temporal, the apiserver…): each check runs with a deadline, and a 503 names the ones that
 * failed and why, so `kubectl describe pod` says what is wrong. Probes that arrive together share
 * one round of checks.
 */
import type { Client } from '@temporalio/client';
import type { Worker } from '@temporalio/worker';
import type { KubeClient } from '../kube/client.js';

export interface ReadinessCheck {
  name: string;
  /** Resolves when the dependency answers; throws with the reason otherwise. */
  run(): Promise<unknown>;
}

export interface ProbeOptions {
  ready: ReadinessCheck[];
  /** Why the role is not alive any more (undefined while it is). */
  dead?: () => string | undefined;
  /** Deadline of each readiness check (default READINESS_CHECK_TIMEOUT_MS). */
  timeoutMs?: number;
}

/**
 * Each readiness check's deadline. The checks run side by side, so `/readyz` answers within about
 * this; the readiness probes of deploy/ and the chart wait 5 s (`timeoutSeconds`), so a hung
 * dependency's `[-]name: no answer…` line reaches `kubectl describe pod` before the kubelet gives up.
 */
export const READINESS_CHECK_TIMEOUT_MS = 2_000;

export interface ProbeAnswer {
  status: 200 | 503;
  text: string;
}

export class Probes {
  private round?: Promise<{ ok: boolean; lines: string[] }>;

  constructor(private readonly opts: ProbeOptions) {}

  /** The answer to `/healthz` or `/readyz` (text/plain); undefined for any other path, the caller's to answer. */
  answer(path: string): Promise<ProbeAnswer> | undefined {
    if (path === '/healthz') {
      const dead = this.opts.dead?.();
      return Promise.resolve({ status: dead ? 503 : 200, text: dead ?? 'ok' });
    }
    if (path === '/readyz')
      return this.readiness().then(({ ok, lines }) => ({ status: ok ? 200 : 503, text: lines.join('\n') + '\n' }));
    return undefined;
  }

  /** Every check's verdict, one line each (`[+]name ok` / `[-]name: reason`, as the apiserver's /readyz). */
  readiness(): Promise<{ ok: boolean; lines: string[] }> {
    this.round ??= this.check().finally(() => (this.round = undefined));
    return this.round;
  }

  private async check(): Promise<{ ok: boolean; lines: string[] }> {
    const timeoutMs = this.opts.timeoutMs ?? READINESS_CHECK_TIMEOUT_MS;
    const dead = this.opts.dead?.();
    const results = await Promise.all(
      this.opts.ready.map(async (c) => {
        let timer: NodeJS.Timeout | undefined;
        const deadline = new Promise<never>((_, reject) => {
          timer = setTimeout(() => reject(new Error(`no answer within ${timeoutMs} ms`)), timeoutMs);
        });
        try {
          await Promise.race([c.run(), deadline]);
          return { ok: true, line: `[+]${c.name} ok` };
        } catch (err) {
          return { ok: false, line: `[-]${c.name}: ${(err as Error).message}` };
        } finally {
          clearTimeout(timer);
        }
      }),
    );
    const lines = [...(dead ? [`[-]alive: ${dead}`] : []), ...results.map((r) => r.line)];
    return { ok: !dead && results.every((r) => r.ok), lines };
  }
}

/** Temporal's frontend answers this role's connection (its TLS, its credentials). */
export const temporalReachable = (client: Client): ReadinessCheck => ({
  name: 'temporal',
  run: () => client.workflowService.getSystemInfo({}),
});

/** The apiserver answers this role's credentials (`/version`, readable by any authenticated user). */
export const apiserverReachable = (kube: KubeClient): ReadinessCheck => ({
  name: 'apiserver',
  run: () => kube.version.getCode(),
});

/**
 * A role that runs a Temporal worker: dead once the worker has ended (only a restart brings it
 * back), ready while Temporal and the apiserver answer and the worker polls.
 */
export function workerProbes(name: string, worker: Worker, temporal: Client, kube: KubeClient): ProbeOptions {
  const ended = () => ['FAILED', 'STOPPED'].includes(worker.getState());
  return {
    dead: () => (ended() ? `${name} ${worker.getState()}` : undefined),
    ready: [
      temporalReachable(temporal),
      apiserverReachable(kube),
      {
        name,
        run: async () => {
          if (worker.getState() !== 'RUNNING') throw new Error(worker.getState());
        },
      },
    ],
  };
}
