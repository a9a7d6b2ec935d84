/**
 * The orphan janitor: one long-lived workflow per task queue (`sandbox-janitor/<task queue>`)
 * that runs a pass every interval on a durable timer and continues-as-new when its history grows,
 * so the Web UI lists one Running janitor instead of a completed run every 10 s. Its current
 * details (the Web UI's "Current details") say what the last passes did; the `state` query
 * returns the same as data; the `runPass` update runs a pass now and returns its summary
 * (`temporal workflow update execute --name runPass`); the `configure` signal changes the
 * interval or the orphan timeout (every fast-path replica sends its settings on start).
 *
 * One pass: fresh agent reports against the Sandbox records (the seed's rules, with the agents'
 * own `createdAt`):
 *
 * - Fast: a sandbox an agent holds that no record covers, older than the orphan timeout, is
 *   deleted on its agent (re-checked against a fresh read of its record just before).
 * - Strong: a record Bound/Running on an agent that reports and no longer holds its sandbox is
 *   handed to the sandbox's workflow, which verifies and marks it Failed (AgentLostSandbox).
 * - A record Bound/Running on an agent that does not report at all (Pod gone, not Ready, stale)
 *   is handed to its workflow too — a backstop for the registry's hint, which a restarted fast
 *   path never sends for an agent it never saw: the workflow verifies and starts the recovery
 *   timeout, after which the failure policy applies.
 * - Containers of agents whose Pod is gone (killed without their shutdown, never restarted): one
 *   live agent per namespace and node removes them (review N4).
 */
import {
  allHandlersFinished,
  condition,
  continueAsNew,
  defineQuery,
  defineSignal,
  defineUpdate,
  patched,
  setCurrentDetails,
  setHandler,
  workflowInfo,
} from '@temporalio/workflow';
import { janitorSteps } from './activity-options.js';

const SPARED = {
  spared: 'a record covers it now',
  'spared-recording': 'its workflow still holds it (its record is late or just written, not refused)',
  'spared-unasked': 'Temporal could not say whether its workflow still holds it; next pass',
};

export interface JanitorSettings {
  orphanTimeoutSeconds: number;
  /** Time between passes (the fast path's `DO_FASTPATH_JANITOR_INTERVAL`). */
  intervalMs: number;
}

/** What the janitor has done, carried across continue-as-new. */
export interface JanitorState {
  passes: number;
  removed: number;
  lostReported: number;
  /** Containers of gone agents removed (absent in states from before the reaper). */
  containersReaped?: number;
  /** The last pass: when it ended and its summary. */
  last?: { at: string; summary: string };
  /** The most recent lines of passes that did something (removed, spared or reported), newest last. */
  recent: string[];
}

export interface SandboxJanitorInput extends JanitorSettings {
  state?: JanitorState;
}

export const janitorStateQuery = defineQuery<JanitorState>('state');
/** Runs a pass now (after the one in progress, if any) and returns its summary. */
export const runJanitorPassUpdate = defineUpdate<string>('runPass');
/** New settings from a fast-path replica: applied from the next wait on. */
export const configureJanitorSignal = defineSignal<[JanitorSettings]>('configure');

const RECENT_LINES = 50;
/** Patch: each pass reaps the containers agents that died left behind. */
const REAPS_DEAD_AGENTS = 'janitor-reaps-dead-agents';
/** Continue-as-new well before Temporal's suggestion too: a pass is about ten events. */
const MAX_HISTORY_EVENTS = 5_000;

export async function sandboxJanitorWorkflow(input: SandboxJanitorInput): Promise<void> {
  const state: JanitorState = input.state ?? { passes: 0, removed: 0, lostReported: 0, recent: [] };
  let settings: JanitorSettings = { orphanTimeoutSeconds: input.orphanTimeoutSeconds, intervalMs: input.intervalMs };
  let settingsChanged = false;
  /** The pass number an update waits for (a pass asked for runs at once). */
  let wanted = 0;
  let passing = false;

  setHandler(janitorStateQuery, () => state);
  setHandler(configureJanitorSignal, (next) => {
    settingsChanged =
      next.intervalMs !== settings.intervalMs || next.orphanTimeoutSeconds !== settings.orphanTimeoutSeconds;
    settings = next;
  });
  setHandler(runJanitorPassUpdate, async () => {
    // The pass that starts after this request answers it.
    const target = state.passes + 1 + (passing ? 1 : 0);
    wanted = Math.max(wanted, target);
    await condition(() => state.passes >= target);
    return state.last!.summary;
  });

  for (;;) {
    passing = true;
    const summary = await janitorPass(settings.orphanTimeoutSeconds, state);
    passing = false;
    state.passes++;
    state.last = { at: new Date().toISOString(), summary };
    setCurrentDetails(details(state, settings));
    if (workflowInfo().continueAsNewSuggested || workflowInfo().historyLength > MAX_HISTORY_EVENTS) {
      await condition(allHandlersFinished);
      return continueAsNew<typeof sandboxJanitorWorkflow>({ ...settings, state });
    }
    // Until the interval passes or a pass is asked for; new settings restart the wait.
    for (;;) {
      settingsChanged = false;
      const woken = await condition(() => wanted > state.passes || settingsChanged, settings.intervalMs);
      if (!woken || wanted > state.passes) break;
    }
  }
}

/** One pass; adds what it did to the state's counters and recent lines, returns its summary. */
async function janitorPass(orphanTimeoutSeconds: number, state: JanitorState): Promise<string> {
  const scan = await janitorSteps.scanSandboxAgents({ orphanTimeoutSeconds });
  const lines: string[] = [];
  for (const orphan of scan.orphans) {
    const r = await janitorSteps.removeOrphan(orphan);
    if (r === 'removed') state.removed++;
    lines.push(
      r === 'removed'
        ? `removed sandbox ${orphan.sandboxId} from agent ${orphan.namespace}/${orphan.agent}: ${orphan.why}`
        : `spared sandbox ${orphan.sandboxId} on agent ${orphan.namespace}/${orphan.agent}: ${SPARED[r]}`,
    );
  }
  for (const l of scan.lost) {
    await janitorSteps.reportLostSandbox(l);
    state.lostReported++;
    lines.push(
      l.why === 'missing'
        ? `Sandbox ${l.namespace}/${l.name}: agent ${l.agent} no longer has sandbox ${l.sandboxId}; its workflow marks it Failed`
        : `Sandbox ${l.namespace}/${l.name}: agent ${l.agent} does not report; its workflow applies the failure policy after the recovery timeout`,
    );
  }
  let reapHead = '';
  if (patched(REAPS_DEAD_AGENTS)) {
    const reaped = await janitorSteps.reapDeadAgentContainers();
    state.containersReaped = (state.containersReaped ?? 0) + reaped.removed.length;
    for (const c of reaped.removed)
      lines.push(
        `removed container ${c.containerId} (${c.sandboxId ? `sandbox ${c.sandboxId}` : 'warm'}) whose agent ` +
          `${c.namespace}/${c.agentName} is gone (no Pod with UID ${c.agentUid}), via agent ${c.reaper} on node ${c.node}`,
      );
    // Failures go in the pass's summary only: an agent that cannot reap would fill the recent lines.
    reapHead = `; ${reaped.removed.length} containers of gone agents removed (${reaped.asked} agents asked)`;
    if (reaped.failed.length) reapHead += `; could not reap on ${reaped.failed.join('; ')}`;
  }
  const at = new Date().toISOString();
  state.recent.push(...lines.map((line) => `${at} ${line}`));
  state.recent.splice(0, Math.max(0, state.recent.length - RECENT_LINES));
  const head = `${scan.agents} agents and ${scan.records} Sandboxes checked; ${scan.orphans.length} orphans, ${scan.lost.length} lost${reapHead}`;
  return [head, ...lines].join('\n');
}

/** The Web UI's current details: counters, the last pass, what recent passes did. */
function details(state: JanitorState, settings: JanitorSettings): string {
  return [
    `Pass ${state.passes}, every ${settings.intervalMs / 1000} s (orphan timeout ${settings.orphanTimeoutSeconds} s).`,
    `Since the first pass: ${state.removed} orphans removed, ${state.lostReported} lost sandboxes reported, ${state.containersReaped ?? 0} containers of gone agents removed.`,
    '',
    `Last pass (${state.last!.at}): ${state.last!.summary}`,
    '',
    state.recent.length ? `Recent actions:\n${state.recent.join('\n')}` : 'No action yet.',
  ].join('\n');
}
