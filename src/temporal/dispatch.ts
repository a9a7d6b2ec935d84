/**
 * Starts and signals workflows on behalf of the processes that turn outside events into
 * operations (the watcher today; the sandbox API server and the CLI next). Typed by each
 * system's workflow contract (src/workflows/<system>/contract.ts): a start takes the workflow
 * function and its arguments, a signal its definition, so a renamed workflow or signal, or
 * arguments of the wrong shape, fail `npm run typecheck` instead of failing at run time.
 *
 * A start uses a deterministic workflow ID with
 * conflict policy FAIL and reuse policy ALLOW_DUPLICATE_FAILED_ONLY: a replayed event, a re-list
 * or a second watcher replica gets "already started" and counts as deduplicated — never a second
 * execution — while an execution that failed or was terminated can be started again.
 * Temporal being unavailable is retried with backoff and jitter, so events are never dropped.
 * A refusal that an operator can fix while the process runs — a search attribute not registered
 * in the namespace, credentials refused (`PERMISSION_DENIED`, `UNAUTHENTICATED`: an expired API
 * key, a rotated certificate) — is retried too, and named by `blockedBy()` for `/readyz` until it
 * clears; only a call Temporal can never accept (any other `INVALID_ARGUMENT`) is dropped, and
 * counted by its code.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import {
  WorkflowExecutionAlreadyStartedError,
  WorkflowNotFoundError,
  isGrpcServiceError,
  type Client,
} from '@temporalio/client';
import type { SearchAttributePair, SignalDefinition, Workflow } from '@temporalio/common';
import { Counter, Gauge, Histogram, type Registry } from 'prom-client';
import { Backoff } from '../backoff.js';
import type { ReadinessCheck } from '../health/probes.js';
import type { Logger } from '../log.js';
import { METRIC_PREFIX } from '../build-info.js';
import { signalOnce } from './signal-once.js';

export interface StartRequest<W extends Workflow> {
  workflow: W;
  workflowId: string;
  args: Parameters<W>;
  searchAttributes: SearchAttributePair[];
  summary: string;
  details?: string;
  /** Kind label for metrics. */
  kind: string;
  receivedAt: number;
}

/**
 * The dispatcher's metrics, named after the process that dispatches (`durable_operators_watcher_…`
 * for the watcher), registered on that process's registry.
 */
export function createDispatchMetrics(registry: Registry, component: string) {
  const name = (suffix: string) => `${METRIC_PREFIX}${component}_${suffix}`;
  return {
    workflowsStarted: new Counter({
      name: name('workflows_started_total'),
      help: `Workflow executions this ${component} started.`,
      labelNames: ['workflow'] as const,
      registers: [registry],
    }),
    workflowsDeduplicated: new Counter({
      name: name('workflows_deduplicated_total'),
      help: "Starts that found the execution already there (replayed event, another replica); where=ensured: an echo of a workflow's own create, started only if none ran.",
      labelNames: ['workflow', 'where'] as const,
      registers: [registry],
    }),
    signalsSent: new Counter({
      name: name('signals_total'),
      help: 'Signals sent to running workflows.',
      labelNames: ['signal', 'result'] as const,
      registers: [registry],
    }),
    dispatchLag: new Histogram({
      name: name('dispatch_lag_seconds'),
      help: 'From receiving an event to the workflow start/signal being acknowledged by Temporal.',
      labelNames: ['kind'] as const,
      buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
      registers: [registry],
    }),
    dispatchRetries: new Counter({
      name: name('dispatch_retries_total'),
      help: 'Temporal calls retried because Temporal was unavailable or refused them for a cause an operator can fix.',
      registers: [registry],
    }),
    dispatchDropped: new Counter({
      name: name('dispatch_dropped_total'),
      help: 'Starts and signals Temporal refused for good (the gRPC code): the event they carried is lost until the next resync.',
      labelNames: ['code'] as const,
      registers: [registry],
    }),
    dispatchBlocked: new Gauge({
      name: name('dispatch_blocked_calls'),
      help: 'Starts and signals waiting on a refusal an operator must fix (cause: search_attribute, PERMISSION_DENIED, UNAUTHENTICATED).',
      labelNames: ['cause'] as const,
      registers: [registry],
    }),
  };
}
export type DispatchMetrics = ReturnType<typeof createDispatchMetrics>;

/** What to do with a failed start or signal. */
export type DispatchFailure =
  | { action: 'retry' }
  /** Retried, but an operator must act: `cause` labels the metric, `reason` is what /readyz says. */
  | { action: 'wait'; cause: string; reason: string }
  | { action: 'drop'; code: string; details: string };

const GRPC_CODE_NAMES: Record<number, string> = {
  3: 'INVALID_ARGUMENT',
  7: 'PERMISSION_DENIED',
  16: 'UNAUTHENTICATED',
};

/**
 * Classifies a failed call. The client wraps the gRPC error in a `ServiceError` (its `cause`);
 * the code and Temporal's message decide. Temporal names an unregistered search attribute as
 * "Namespace <ns> has no mapping defined for search attribute <name>".
 */
export function classifyDispatchFailure(err: unknown): DispatchFailure {
  const grpc = isGrpcServiceError(err)
    ? err
    : isGrpcServiceError((err as { cause?: unknown } | undefined)?.cause)
      ? ((err as { cause: unknown }).cause as { code: number; details: string })
      : undefined;
  if (!grpc) return { action: 'retry' };
  const code = GRPC_CODE_NAMES[grpc.code];
  if (code === 'PERMISSION_DENIED' || code === 'UNAUTHENTICATED')
    return {
      action: 'wait',
      cause: code,
      reason: `Temporal refuses this process's credentials (${code}): ${grpc.details}`,
    };
  if (code === 'INVALID_ARGUMENT') {
    const attribute = /search attribute (\S+)/i.exec(grpc.details)?.[1];
    if (attribute)
      return {
        action: 'wait',
        cause: 'search_attribute',
        reason: `search attribute ${attribute} is not registered in the Temporal namespace (docs/operations.md, "Search attributes"): ${grpc.details}`,
      };
    return { action: 'drop', code, details: grpc.details };
  }
  return { action: 'retry' };
}

/**
 * Remembers recently started workflow IDs so MODIFIED storms do not each cost an RPC. Entries
 * expire, so the periodic resync asks Temporal again and a workflow that was terminated or
 * failed since (reuse policy ALLOW_DUPLICATE_FAILED_ONLY) is started anew: self-healing.
 */
const KNOWN_STARTED_MAX = 200_000;

export class Dispatcher {
  private readonly knownStarted = new Map<string, number>();
  private stopped = false;

  constructor(
    private readonly client: Client,
    private readonly taskQueue: string,
    private readonly metrics: DispatchMetrics,
    private readonly log: Logger,
    /** How long a start is remembered locally (half the resync period, so resyncs ask Temporal). */
    private readonly knownStartedTtlMs = 7.5 * 60_000,
  ) {}

  stop(): void {
    this.stopped = true;
  }

  /** Forget a workflow ID (its object was deleted), so memory stays bounded by live objects. */
  forget(workflowId: string): void {
    this.knownStarted.delete(workflowId);
  }

  async start<W extends Workflow>(req: StartRequest<W>): Promise<'started' | 'deduplicated' | 'dropped'> {
    const workflowType = req.workflow.name;
    const known = this.knownStarted.get(req.workflowId);
    if (known !== undefined && Date.now() - known < this.knownStartedTtlMs) {
      this.metrics.workflowsDeduplicated.inc({ workflow: workflowType, where: 'local' });
      return 'deduplicated';
    }
    const result = await this.withRetry(`start ${req.workflowId}`, async () => {
      try {
        // The cast: the SDK types `args` as optional only for workflows without parameters.
        await this.client.workflow.start<Workflow>(req.workflow, {
          workflowId: req.workflowId,
          taskQueue: this.taskQueue,
          args: req.args as unknown[],
          workflowIdConflictPolicy: 'FAIL',
          workflowIdReusePolicy: 'ALLOW_DUPLICATE_FAILED_ONLY',
          typedSearchAttributes: req.searchAttributes,
          staticSummary: req.summary,
          staticDetails: req.details,
        });
        return 'started' as const;
      } catch (err) {
        if (err instanceof WorkflowExecutionAlreadyStartedError) return 'deduplicated' as const;
        throw err;
      }
    });
    if (result === 'dropped') return result;
    this.remember(req.workflowId);
    this.metrics.dispatchLag.observe({ kind: req.kind }, (performance.now() - req.receivedAt) / 1000);
    if (result === 'started') this.metrics.workflowsStarted.inc({ workflow: workflowType });
    else this.metrics.workflowsDeduplicated.inc({ workflow: workflowType, where: 'server' });
    return result;
  }

  /**
   * Makes sure the entity's workflow runs, without waking a running one: a start that finds it
   * running returns it (no history event there); one found closed is started anew. For an event
   * a running workflow caused itself (its own create echoed back), where a signal would only cost
   * it a workflow task, yet no workflow at all would leave the object unattended.
   */
  async ensureRunning<W extends Workflow>(
    req: StartRequest<W> & { taskQueue?: string },
  ): Promise<'ensured' | 'dropped'> {
    const result = await this.withRetry(`ensure ${req.workflowId} runs`, async () => {
      await this.client.workflow.start<Workflow>(req.workflow, {
        workflowId: req.workflowId,
        taskQueue: req.taskQueue ?? this.taskQueue,
        args: req.args as unknown[],
        workflowIdConflictPolicy: 'USE_EXISTING',
        workflowIdReusePolicy: 'ALLOW_DUPLICATE',
        typedSearchAttributes: req.searchAttributes,
        staticSummary: req.summary,
        staticDetails: req.details,
      });
      return 'ensured' as const;
    });
    if (result === 'ensured') {
      this.metrics.workflowsDeduplicated.inc({ workflow: req.workflow.name, where: 'ensured' });
      this.metrics.dispatchLag.observe({ kind: req.kind }, (performance.now() - req.receivedAt) / 1000);
    }
    return result;
  }

  /**
   * Signals the workflow, starting it first when none runs (signal-with-start): for entity
   * workflows whose hints must always land, e.g. a sandbox's. `taskQueue` overrides the
   * dispatcher's for systems with their own queue.
   */
  async signalWithStart<W extends Workflow, Args extends unknown[]>(
    req: StartRequest<W> & { signal: SignalDefinition<Args>; signalArgs: Args; taskQueue?: string },
  ): Promise<'sent' | 'dropped'> {
    const result = await this.withRetry(`signalWithStart ${req.signal.name} → ${req.workflowId}`, async () => {
      // The cast: the SDK's option type branches on whether the signal takes arguments.
      await this.client.workflow.signalWithStart<Workflow, unknown[]>(req.workflow, {
        workflowId: req.workflowId,
        taskQueue: req.taskQueue ?? this.taskQueue,
        args: req.args as unknown[],
        signal: req.signal as SignalDefinition<unknown[]>,
        signalArgs: req.signalArgs as unknown[],
        typedSearchAttributes: req.searchAttributes,
        staticSummary: req.summary,
        staticDetails: req.details,
      });
      return 'sent' as const;
    });
    this.metrics.signalsSent.inc({ signal: req.signal.name, result });
    if (result === 'sent')
      this.metrics.dispatchLag.observe({ kind: req.kind }, (performance.now() - req.receivedAt) / 1000);
    return result;
  }

  /** Signals a running workflow; a workflow that is not running is not an error (it finished). */
  async signal<Args extends unknown[]>(
    workflowId: string,
    signal: SignalDefinition<Args>,
    ...args: Args
  ): Promise<'sent' | 'not-running' | 'dropped'> {
    return this.deliver(workflowId, signal.name, () =>
      this.client.workflow.getHandle(workflowId).signal(signal, ...args),
    );
  }

  /**
   * Signals a running workflow once per run for `requestId`: Temporal drops a second signal under
   * the same ID (another process that saw the same fact sent it first). See ./signal-once.ts.
   */
  async signalOnce<Args extends unknown[]>(
    workflowId: string,
    signal: SignalDefinition<Args>,
    requestId: string,
    ...args: Args
  ): Promise<'sent' | 'not-running' | 'dropped'> {
    return this.deliver(workflowId, signal.name, () => signalOnce(this.client, workflowId, signal, requestId, ...args));
  }

  /** One signal sent with the dispatcher's retries and counted; a workflow not running is no error. */
  private async deliver(
    workflowId: string,
    signalName: string,
    send: () => Promise<void>,
  ): Promise<'sent' | 'not-running' | 'dropped'> {
    const result = await this.withRetry(`signal ${signalName} → ${workflowId}`, async () => {
      try {
        await send();
        return 'sent' as const;
      } catch (err) {
        if (err instanceof WorkflowNotFoundError) return 'not-running' as const;
        throw err;
      }
    });
    this.metrics.signalsSent.inc({ signal: signalName, result });
    return result;
  }

  /**
   * A hint that only says "look again" (the workflow reads fresh state whatever it carries):
   * while one is on its way to the workflow, later ones collapse into one more sent after it
   * with the latest arguments. A burst of a hundred changes in a pool then costs two signals,
   * not a hundred history events racing for the workflow's lock (Temporal refuses those past a
   * point as RESOURCE_EXHAUSTED, "workflow is busy").
   */
  async hint<Args extends unknown[]>(
    workflowId: string,
    signal: SignalDefinition<Args>,
    ...args: Args
  ): Promise<'sent' | 'not-running' | 'dropped' | 'coalesced'> {
    const key = `${signal.name}\u0000${workflowId}`;
    const inFlight = this.hintsInFlight.get(key);
    if (inFlight) {
      inFlight.next = args;
      return 'coalesced';
    }
    const entry: { next?: unknown[] } = {};
    this.hintsInFlight.set(key, entry);
    try {
      let result = await this.signal(workflowId, signal, ...args);
      while (entry.next && result !== 'dropped') {
        const next = entry.next as Args;
        entry.next = undefined;
        result = await this.signal(workflowId, signal, ...next);
      }
      return result;
    } finally {
      this.hintsInFlight.delete(key);
    }
  }

  private readonly hintsInFlight = new Map<string, { next?: unknown[] }>();

  private remember(id: string): void {
    this.knownStarted.delete(id); // re-insert at the end: the map's order is its age
    this.knownStarted.set(id, Date.now());
    if (this.knownStarted.size > KNOWN_STARTED_MAX) {
      const oldest = this.knownStarted.keys().next().value;
      if (oldest !== undefined) this.knownStarted.delete(oldest);
    }
  }

  /** What calls are waiting on now (reason → calls), for `/readyz`; empty when nothing is. */
  blockedBy(): Map<string, number> {
    return new Map(this.blocked);
  }

  private readonly blocked = new Map<string, number>();

  private async withRetry<T>(what: string, fn: () => Promise<T>): Promise<T | 'dropped'> {
    const backoff = new Backoff({ initialMs: 250, maxMs: 10_000 });
    let waitingOn: Extract<DispatchFailure, { action: 'wait' }> | undefined;
    const setWaiting = (next: typeof waitingOn) => {
      if (waitingOn?.reason === next?.reason) return;
      if (waitingOn) {
        const left = (this.blocked.get(waitingOn.reason) ?? 1) - 1;
        if (left > 0) this.blocked.set(waitingOn.reason, left);
        else this.blocked.delete(waitingOn.reason);
        this.metrics.dispatchBlocked.dec({ cause: waitingOn.cause });
      }
      if (next) {
        this.blocked.set(next.reason, (this.blocked.get(next.reason) ?? 0) + 1);
        this.metrics.dispatchBlocked.inc({ cause: next.cause });
      }
      waitingOn = next;
    };
    try {
      for (;;) {
        try {
          return await fn();
        } catch (err) {
          const failure = classifyDispatchFailure(err);
          if (failure.action === 'drop') {
            this.metrics.dispatchDropped.inc({ code: failure.code });
            this.log.error(
              { what, code: failure.code, err: failure.details },
              'Temporal refused the call for good; dropping it',
            );
            return 'dropped';
          }
          if (this.stopped) return 'dropped';
          setWaiting(failure.action === 'wait' ? failure : undefined);
          this.metrics.dispatchRetries.inc();
          const delay = backoff.next();
          if (failure.action === 'wait')
            this.log.error(
              { what, reason: failure.reason, retryInMs: delay },
              'Temporal refused the call; retrying until an operator fixes it',
            );
          else this.log.warn({ what, err: (err as Error).message, retryInMs: delay }, 'Temporal call failed; retrying');
          await sleep(delay);
        }
      }
    } finally {
      setWaiting(undefined);
    }
  }
}

/** The `/readyz` check: fails while starts or signals wait on a refusal an operator must fix, naming it. */
export function dispatchUnblocked(dispatcher: Dispatcher): ReadinessCheck {
  return {
    name: 'dispatch',
    run: async () => {
      const blocked = [...dispatcher.blockedBy()];
      if (blocked.length) throw new Error(blocked.map(([reason, calls]) => `${calls} waiting: ${reason}`).join('; '));
    },
  };
}
