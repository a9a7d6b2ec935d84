/**
 * Activities on the agents and the placement table: place a sandbox, create and delete it on
 * its agent, read what the agent says about it. They run in the fast-path process (the sandbox
 * task queue), so the table is the in-process one every create consults.
 *
 * Idempotency: an agent create is idempotent by sandbox ID, and placement first asks which agent
 * already holds the ID, so a create replayed after a crash lands on the same agent — never on a
 * second one. When the replay may come from another replica (the run started more than
 * FRESH_RUN_MS ago, so this is not the first attempt), the table is refreshed from the agents
 * before that question is asked.
 */
import { ApplicationFailure } from '@temporalio/common';
import { MAX_DELETE_WAIT_MS, type AgentSandboxSpec } from '../../agent/api.js';
import type { Placement } from '../../domain/allocation.js';
import { failedWith, ok, type Outcome } from '../../domain/results.js';
import { NO_READY_AGENT, POOL_MAX_ZERO, refusal, type Refusal } from '../../domain/sandbox.js';
import { poolMaxZero } from '../../domain/sandbox-pool.js';
import type { AgentClient } from '../../fastpath/agent-client.js';
import { AgentCallError } from '../../fastpath/agent-client.js';
import type { FastPathMetrics } from '../../fastpath/metrics.js';
import type { SandboxRegistry } from '../../fastpath/registry.js';
import { heartbeat, pause } from '../kubernetes/calls.js';
import type { SandboxEnvResolver } from './env.js';

/** A create's first attempt reaches placement within this of its run's start; later ones are replays. */
export const FRESH_RUN_MS = 2_000;

/** Agent refusals another agent may not share: the workflow tries elsewhere. */
const RETRY_ELSEWHERE = new Set(['CapacityExceeded', 'PortInUse', 'ShuttingDown', 'Draining']);

export interface AgentRef {
  namespace: string;
  pod: string;
}

export interface PlaceRequest {
  /** The reservation's key: the sandbox ID, or a placeholder until the record's UID is known. */
  sandboxId: string;
  namespace: string;
  pool: string;
  image: string;
  ports: number[];
  exclude: string[];
  /** workflowInfo().runStartTime, to tell a replay from a first attempt. */
  runStartMs: number;
}

export type AgentCreateRefusal = Refusal & { retryElsewhere: boolean };

export type AgentView =
  | { state: 'held'; phase: string; message: string; reason?: string; runtime?: string }
  /** `bootId`: the agent's now, to tell a restart that took the sandbox from a sandbox lost alone. */
  | { state: 'missing'; bootId?: string }
  /** The agent is not among the registry's live agents (Pod gone, not Ready, or not answering for the stale window). */
  | { state: 'agent-gone' };

export function createSandboxAgentActivities(
  registry: SandboxRegistry,
  agents: AgentClient,
  envs: SandboxEnvResolver,
  metrics?: Pick<FastPathMetrics, 'agentRefusals'>,
) {
  /**
   * A live agent's URL: its Pod is Ready and it answered within the registry's stale window (it
   * is in the placement table). Any other agent is gone for a sandbox's purposes — asking it
   * would only retry until it returns, which is what the recovery timeout waits for instead.
   */
  const liveAgent = (ref: AgentRef) => {
    const a = registry.agent(ref.namespace, ref.pod);
    return a && registry.table.has(a.key) ? a : undefined;
  };
  const urlOf = (ref: AgentRef) => liveAgent(ref)?.url;
  /** Polls the agent's status until it no longer reports the sandbox (true) or `until` passes (false). */
  const forgetsBy = async (url: string, req: AgentRef & { sandboxId: string }, until: number): Promise<boolean> => {
    for (;;) {
      const report = await agents.status(url).catch(() => undefined);
      if (report && !report.sandboxStatuses.some((x) => x.sandboxId === req.sandboxId)) return true;
      if (!report && !liveAgent(req)) return true;
      if (Date.now() + 100 > until) return false;
      await pause(100);
    }
  };
  /**
   * Asks the agent to delete (and, with `waitMs`, to answer once it is gone: AgentClient.delete);
   * the run waits for this removal itself, so the registry does not hint it (src/fastpath/run-hints.ts).
   */
  const startRemoval = (url: string, sandboxId: string, waitMs?: number) => {
    registry.removalStarted(sandboxId);
    return agents.delete(url, sandboxId, waitMs).catch((err: unknown) => {
      throw agentFailure(err);
    });
  };

  return {
    /** Picks the agent for a sandbox (or finds the one that already holds it) and reserves its slot. */
    async allocateSandbox(req: PlaceRequest): Promise<Outcome<{ placement: Placement }, Refusal>> {
      if (Date.now() - req.runStartMs > FRESH_RUN_MS) await registry.pollNow();
      const held = registry.holderOf(req.sandboxId);
      if (held) return ok({ placement: held });
      if (!registry.knowsPool(req.namespace, req.pool))
        return failedWith(refusal('NotFound', `SandboxPool ${req.pool} not found in namespace ${req.namespace}`));
      const place = () => registry.table.allocate({ ...req, exclude: new Set(req.exclude) }, Date.now());
      let verdict = place();
      // "Full" is confirmed by the agents themselves: a slot freed since the last poll counts now.
      if (verdict.status === 'exhausted') {
        await registry.refreshPool(req.namespace, req.pool);
        verdict = place();
      }
      switch (verdict.status) {
        case 'placed':
          return ok({ placement: verdict.placement });
        case 'no-agents': {
          if (registry.poolMax(req.namespace, req.pool) === 0)
            return failedWith({
              ...refusal('FailedPrecondition', poolMaxZero(req.namespace, req.pool)),
              reason: POOL_MAX_ZERO,
            });
          const why = registry.unusableAgents(req.namespace, req.pool);
          // Agents there but unusable (not answering, our token refused) are said as such.
          const message = why.length
            ? `${verdict.message} (${why.join('; ')})`
            : `${verdict.message}; the pool's workflow starts one`;
          // The reason tells the workflow and the fast path that the pool is to scale up (from zero).
          return failedWith({ ...refusal('Unavailable', message), reason: NO_READY_AGENT });
        }
        case 'exhausted':
          return failedWith(refusal('ResourceExhausted', verdict.message));
      }
    },

    /**
     * Creates the sandbox on its agent. The agent's refusal (full, port taken) marks the agent in
     * the table and asks the workflow to try elsewhere; an unreachable agent is retried.
     */
    async createOnAgent(req: {
      placement: Placement;
      reservation: string;
      spec: AgentSandboxSpec;
    }): Promise<Outcome<{ createdAt: number }, AgentCreateRefusal>> {
      const { placement, spec } = req;
      // The agent gets the env values themselves (references read now); the workflow (history)
      // only sealed ones. An env that cannot be made stops the create here: nothing on an agent.
      const env = await envs.resolve(spec.env ?? {});
      if (!('env' in env)) {
        registry.table.release(placement.agentId, req.reservation);
        return failedWith({ ...refusal('FailedPrecondition', env.message), reason: env.reason, retryElsewhere: false });
      }
      // Its `creating` and `running` are the run's own news from here (src/fastpath/run-hints.ts).
      registry.placementStarted(spec.sandboxId);
      const result = await agents.create(placement.url, { ...spec, env: env.env }).catch((err: unknown) => {
        registry.placementFailed(spec.sandboxId);
        throw agentFailure(err);
      });
      if (result.status !== 'ok') registry.placementFailed(spec.sandboxId);
      if (result.status === 'ok') {
        if (req.reservation !== spec.sandboxId)
          registry.table.rekey(placement.agentId, req.reservation, spec.sandboxId);
        return ok({ createdAt: result.createdAt });
      }
      registry.table.release(placement.agentId, req.reservation);
      metrics?.agentRefusals.inc({ reason: result.reason });
      if (result.reason === 'CapacityExceeded') registry.table.markFull(placement.agentId);
      const retryElsewhere = RETRY_ELSEWHERE.has(result.reason);
      const code = retryElsewhere
        ? 'ResourceExhausted'
        : result.reason === 'RuntimeUnsupported'
          ? 'FailedPrecondition'
          : result.httpStatus === 400
            ? 'InvalidArgument'
            : 'Internal';
      return failedWith({ ...refusal(code, `agent ${placement.pod}: ${result.message}`), retryElsewhere });
    },

    /** Gives a reservation back (the create failed, or the sandbox is gone from its agent). */
    async releaseSandbox(req: { agentId: string; sandboxId: string }): Promise<void> {
      registry.table.release(req.agentId, req.sandboxId);
    },

    /**
     * Deletes the sandbox on its agent. An agent that is gone holds nothing we can reach: success
     * (should it return with the sandbox, no record covers it and the janitor removes it).
     */
    async deleteOnAgent(req: AgentRef & { sandboxId: string }): Promise<void> {
      const url = urlOf(req);
      if (url) await startRemoval(url, req.sandboxId);
    },

    /**
     * deleteOnAgent, then a short wait for the agent to forget the sandbox and the slot's release,
     * in one local activity: a warm runtime removes a sandbox in well under `withinMs`. `pending`
     * when the agent still reports it then (the workflow's waitUntilAgentForgets takes over).
     */
    async removeFromAgent(
      req: AgentRef & { sandboxId: string; agentId: string; withinMs: number },
    ): Promise<'removed' | 'pending'> {
      const until = Date.now() + req.withinMs;
      const url = urlOf(req);
      if (url) {
        // One call that answers when the sandbox is gone; an agent without the wait answers at
        // once (undefined) and is polled as before.
        const gone = await startRemoval(url, req.sandboxId, Math.min(req.withinMs, MAX_DELETE_WAIT_MS));
        if (gone === false || (gone === undefined && !(await forgetsBy(url, req, until)))) return 'pending';
      }
      registry.table.release(req.agentId, req.sandboxId);
      return 'removed';
    },

    /** What the agent says about the sandbox now (a fresh status call, not the registry's last poll). */
    async agentSandbox(req: AgentRef & { sandboxId: string }): Promise<AgentView> {
      const url = urlOf(req);
      if (!url) return { state: 'agent-gone' };
      const report = await agents.status(url).catch((err: unknown) => {
        throw agentFailure(err);
      });
      const s = report.sandboxStatuses.find((x) => x.sandboxId === req.sandboxId);
      return s
        ? {
            state: 'held',
            phase: s.phase,
            message: s.message,
            ...(s.reason ? { reason: s.reason } : {}),
            ...(report.runtime ? { runtime: report.runtime } : {}),
          }
        : { state: 'missing', ...(report.bootId && { bootId: report.bootId }) };
    },

    /**
     * Where a sandbox this run did not place itself is (a run after continue-as-new, or a record
     * written by another run): by its ID on the named agent, else by its Sandbox name there.
     */
    async locateSandbox(
      req: AgentRef & { sandboxId: string; claimName: string },
    ): Promise<{ sandboxId: string; placement: Placement } | undefined> {
      const a = liveAgent(req);
      if (!a) return undefined;
      const report = await agents.status(a.url).catch((err: unknown) => {
        throw agentFailure(err);
      });
      const s =
        report.sandboxStatuses.find((x) => x.sandboxId === req.sandboxId) ??
        report.sandboxStatuses.find((x) => x.claimName === req.claimName && x.phase !== 'terminating');
      if (!s) return undefined;
      return { sandboxId: s.sandboxId, placement: { agentId: a.key, pod: a.pod, node: a.node, url: a.url, ip: a.ip } };
    },

    /**
     * Waits until an agent of the pool is usable (Ready and answering, in the placement table) or
     * `untilMs` (Unix ms) passes: a Strong create while its pool scales up from zero.
     */
    async waitForPoolAgent(req: { namespace: string; pool: string; untilMs: number }): Promise<'ready' | 'timeout'> {
      for (;;) {
        heartbeat();
        if (registry.hasUsableAgent(req.namespace, req.pool)) return 'ready';
        if (Date.now() >= req.untilMs) return 'timeout';
        await pause(Math.min(250, Math.max(1, req.untilMs - Date.now())));
      }
    },

    /**
     * Waits until the agent no longer holds the sandbox (its processes are gone) or is gone itself,
     * with waiting deletes: one call per MAX_DELETE_WAIT_MS instead of a status poll every 250 ms,
     * each asking again, which retries a delete the agent gave up on (its runtime refused). An
     * agent from before the wait answers at once: polled as before, asked again every ~5 s.
     */
    async waitUntilAgentForgets(req: AgentRef & { sandboxId: string }): Promise<void> {
      let waits = true;
      for (let round = 0; ; round++) {
        heartbeat();
        const url = urlOf(req);
        if (!url) return;
        const started = Date.now();
        try {
          if (waits || round % 20 === 0) {
            const gone = await agents.delete(url, req.sandboxId, MAX_DELETE_WAIT_MS);
            if (gone === true) return;
            waits = gone === false;
          }
          // An agent from before the wait: one look at its status.
          if (!waits && (await forgetsBy(url, req, 0))) return;
        } catch (err) {
          if (!liveAgent(req)) return;
          if (!(err instanceof AgentCallError)) throw err;
        }
        // One waiting delete per MAX_DELETE_WAIT_MS at most: a delete the agent's runtime refuses
        // is answered at once, and is not sent again at once.
        await pause(waits ? Math.max(250, MAX_DELETE_WAIT_MS - (Date.now() - started)) : 250);
      }
    },
  };
}

export type SandboxAgentActivities = ReturnType<typeof createSandboxAgentActivities>;

/** Agent calls: a wrong token is a configuration error (non-retryable); the rest is retried. */
function agentFailure(err: unknown): Error {
  if (err instanceof AgentCallError && err.status === 401)
    return ApplicationFailure.nonRetryable(err.message, 'AgentUnauthorized');
  return ApplicationFailure.retryable((err as Error).message, 'AgentUnavailable');
}
