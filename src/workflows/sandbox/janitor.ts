/**
 * The orphan janitor, run by a Temporal Schedule (`sandbox-janitor/<task queue>`, overlap SKIP).
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
 *
 * Its result (and the Web UI's details) says what it removed and why.
 */
import { setCurrentDetails } from '@temporalio/workflow';
import { janitorSteps } from './activity-options.js';

const SPARED = {
  spared: 'a record covers it now',
  'spared-recording': 'its creation is still writing its record (late, not refused)',
  'spared-unasked': 'Temporal could not say whether its creation is still writing its record; next pass',
};

export interface SandboxJanitorInput {
  orphanTimeoutSeconds: number;
}

export async function sandboxJanitorWorkflow(input: SandboxJanitorInput): Promise<string> {
  const scan = await janitorSteps.scanSandboxAgents(input);
  const lines: string[] = [];
  for (const o of scan.orphans) {
    const r = await janitorSteps.removeOrphan(o);
    lines.push(
      r === 'removed'
        ? `removed sandbox ${o.sandboxId} from agent ${o.namespace}/${o.agent}: ${o.why}`
        : `spared sandbox ${o.sandboxId} on agent ${o.namespace}/${o.agent}: ${SPARED[r]}`,
    );
  }
  for (const l of scan.lost) {
    await janitorSteps.reportLostSandbox(l);
    lines.push(
      l.why === 'missing'
        ? `Sandbox ${l.namespace}/${l.name}: agent ${l.agent} no longer has sandbox ${l.sandboxId}; its workflow marks it Failed`
        : `Sandbox ${l.namespace}/${l.name}: agent ${l.agent} does not report; its workflow applies the failure policy after the recovery timeout`,
    );
  }
  const head = `${scan.agents} agents and ${scan.records} Sandboxes checked; ${scan.orphans.length} orphans, ${scan.lost.length} lost`;
  const summary = [head, ...lines].join('\n');
  setCurrentDetails(summary);
  return summary;
}
