/**
 * Makes docs/images/web-ui-decoded-payload.png: the Temporal Web UI of a running `npm run dev`
 * showing a sandbox workflow's input, decoded by the codec server (docs/encryption.md).
 *
 *   npm run dev &                          # wait for its banner
 *   npx tsx scripts/screenshot-web-ui.ts [--state-dir .state/dev] [--out docs/images/web-ui-decoded-payload.png]
 *
 * It creates a Sandbox in namespace `default` as `kubectl apply` would, deletes it once its
 * workflow runs, checks that the workflow's input is encrypted in the raw history, and has
 * headless Chromium (`apt-get install -y chromium`) render the completed workflow's page.
 */
import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { Client, Connection } from '@temporalio/client';
import { SandboxKind } from '../src/api/sandbox.js';
import { DEV_POOL } from '../src/cli/dev.js';
import { sandboxWorkflowId } from '../src/domain/sandbox.js';
import { readStackInfo } from '../src/infra/stack.js';
import { KubeClient } from '../src/kube/client.js';
import { ENCRYPTED_ENCODING } from '../src/temporal/payload-encryption.js';

const { values: flags } = parseArgs({
  options: {
    'state-dir': { type: 'string', default: '.state/dev' },
    out: { type: 'string', default: 'docs/images/web-ui-decoded-payload.png' },
    chromium: { type: 'string', default: 'chromium' },
  },
});
const stateDir = flags['state-dir'];
const info = await readStackInfo(stateDir);
if (!info?.temporal.uiUrl)
  throw new Error(`no running dev stack with a Web UI in ${stateDir}: start npm run dev first`);

const kube = KubeClient.fromKubeconfig(info.kubeconfig);
const name = `codec-demo-${randomBytes(3).toString('hex')}`;
await kube.create({
  apiVersion: SandboxKind.apiVersion,
  kind: SandboxKind.kind,
  metadata: { name, namespace: 'default' },
  spec: {
    image: info.registry?.images.busybox ?? 'demo',
    poolRef: DEV_POOL,
    command: ['/bin/sleep', '3600'],
    envs: [{ name: 'GREETING', value: 'hello from an encrypted payload' }],
  },
} as never);

// A client without the codec: what Temporal stores.
const raw = new Client({
  connection: await Connection.connect({ address: info.temporal.address }),
  namespace: info.temporal.namespace,
});
const workflowId = sandboxWorkflowId('default', name);
let runId: string | undefined;
for (let i = 0; i < 60 && !runId; i++) {
  runId = await raw.workflow
    .getHandle(workflowId)
    .describe()
    .then((d) => d.runId)
    .catch(() => undefined);
  if (!runId) await new Promise((r) => setTimeout(r, 500));
}
if (!runId) throw new Error(`workflow ${workflowId} did not start: is the watcher running?`);
// Deleted again: the page of a completed workflow shows its input and result, and stops polling
// (the page of a running one never lets Chromium's virtual time run out).
await new Promise((r) => setTimeout(r, 3000));
await kube.delete({ apiVersion: SandboxKind.apiVersion, kind: SandboxKind.kind, namespace: 'default', name });
for (let i = 0; i < 120; i++) {
  if ((await raw.workflow.getHandle(workflowId, runId).describe()).status.name !== 'RUNNING') break;
  await new Promise((r) => setTimeout(r, 500));
}
const started = (await raw.workflow.getHandle(workflowId, runId).fetchHistory()).events?.[0];
const encoding = started?.workflowExecutionStartedEventAttributes?.input?.payloads?.[0]?.metadata?.encoding;
if (Buffer.from(encoding ?? []).toString() !== ENCRYPTED_ENCODING)
  throw new Error('the workflow input is not encrypted: is dev running with payload keys (DO_PAYLOAD_KEYS_DIR)?');
await raw.connection.close();

const url = `${info.temporal.uiUrl}/namespaces/${info.temporal.namespace}/workflows/${encodeURIComponent(workflowId)}/${runId}/history`;
const out = path.resolve(flags.out);
await mkdir(path.dirname(out), { recursive: true });
const shot = spawnSync(
  flags.chromium,
  [
    '--headless=new',
    '--no-sandbox',
    '--disable-gpu',
    '--hide-scrollbars',
    '--window-size=1440,1100',
    // The UI is a single-page app that fetches the history, then /decode: give it time.
    '--virtual-time-budget=20000',
    `--screenshot=${out}`,
    url,
  ],
  { encoding: 'utf8', timeout: 120_000 },
);
if (shot.status !== 0 || !existsSync(out))
  throw new Error(`chromium failed (${shot.status ?? shot.signal}): ${shot.stderr}`);
console.log(`${url}\n→ ${path.relative(process.cwd(), out)}`);
