/**
 * Every patch ID the workflow code has used, with the release it shipped in and its stage — the
 * lifecycle in docs/operations.md ("Patches"): `active` (`patched()`: runs from before take the
 * old branch) → `deprecated` one release after it shipped (`deprecatePatch()`: every run takes
 * the new branch; histories with the marker still replay) → `removed` the release after that
 * (no call; the fixture histories that carry it are re-recorded). A unit test
 * (test/unit/patches.test.ts) reads every `patched()`/`deprecatePatch()` call of the workflow
 * code and the interceptors and fails on one that is not here, or not at its stage.
 *
 * Not part of the workflow bundle: nothing imports it there.
 */
export type PatchStage = 'active' | 'deprecated' | 'removed';

export interface PatchRecord {
  /** The release whose workflow code first called it. */
  shipped: string;
  stage: PatchStage;
  /** Where it is called. */
  in: string;
}

const v020 = (stage: PatchStage, where: string): PatchRecord => ({ shipped: '0.2.0', stage, in: where });

export const PATCHES: Record<string, PatchRecord> = {
  // Sandbox fast path.
  'sandbox-create-one-round-trip': v020('active', 'sandbox/sandbox-run.ts'),
  'sandbox-unanswered-agent-answer': v020('active', 'sandbox/sandbox-run.ts'),
  'sandbox-agent-restarted': v020('active', 'sandbox/sandbox-run.ts'),
  'sandbox-id-from-run': v020('active', 'sandbox/sandbox-run.ts'),
  'sandbox-strong-waits-for-agent': v020('active', 'sandbox/sandbox-run.ts'),
  'sandbox-quota-release': v020('active', 'sandbox/sandbox-run.ts'),
  'sandbox-delete-before-record': v020('active', 'sandbox/sandbox.ts'),
  'sandbox-delete-after-record': v020('active', 'sandbox/sandbox.ts'),
  'sandbox-lean-life': v020('active', 'sandbox/sandbox-run.ts'),
  'sandbox-lean-life-2': v020('active', 'sandbox/sandbox-run.ts'),
  'sandbox-lean-life-3': v020('active', 'sandbox/sandbox-run.ts'),
  'sandbox-deletion-heard': v020('active', 'sandbox/sandbox.ts'),
  'janitor-reaps-dead-agents': v020('active', 'sandbox/janitor.ts'),
  'agent-tls-secret': v020('active', 'sandbox/pool.ts'),
  'pool-scale-from-zero': v020('active', 'sandbox/pool.ts'),
  'pool-write-refused-status': v020('active', 'sandbox/pool.ts'),
  // Entity workflows on the kit (entity.ts): continue-as-new at a quiet moment.
  'pool-continue-when-quiet': v020('active', 'sandbox/pool.ts'),
  'quota-continue-when-quiet': v020('active', 'sandbox/quota.ts'),
  'keeper-continue-when-quiet': v020('active', 'objectkeeper/keeper.ts'),
  'keeper-local-calls': v020('active', 'objectkeeper/keeper.ts'),
  'source-continue-when-quiet': v020('active', 'cloudflare/source.ts'),
  // Requests.
  'request-ends-when-terminal': v020('active', 'requests/lifecycle.ts'),
  'request-cancels-between-local-calls': v020('active', 'requests/lifecycle.ts'),
  'request-fewer-tasks': v020('active', 'requests/lifecycle.ts'),
  'request-local-failure-ends': v020('active', 'requests/lifecycle.ts'),
  'ttl-sweep-per-kind': v020('active', 'requests/ttl-sweep.ts'),
  // Cloudflare.
  'tunnel-connector': v020('active', 'cloudflare/source.ts'),
  'source-orphan-ends-tunnel-removal': v020('active', 'cloudflare/source.ts'),
  'source-quiet-reregistration-keeps-status': v020('active', 'cloudflare/source.ts'),
  'source-keeps-zone-on-silence': v020('active', 'cloudflare/source.ts'),
  'binding-default-priority-100': v020('active', 'cloudflare/source.ts'),
  'tunnel-dns-zone-per-hostname': v020('active', 'cloudflare/source.ts'),
  'source-orphan-ends-stuck-deletion': v020('active', 'cloudflare/source.ts'),
  'source-delete-waits-on-reports': v020('active', 'cloudflare/source.ts'),
  'sync-quiet-reregistration': v020('active', 'cloudflare/sync.ts'),
  'sync-tells-each-registrant': v020('active', 'cloudflare/sync.ts'),
  'sync-observe-queue': v020('active', 'cloudflare/sync.ts'),
  'sync-waits-for-kept-sources': v020('active', 'cloudflare/sync.ts'),
  'sync-change-cancels-observation': v020('active', 'cloudflare/sync.ts'),
  // Every workflow type (the tracing interceptor): deprecated at once, ahead of the rule — a
  // patch there marks every run of every type, and interceptors take no `patched()`.
  'tracing-only-when-traced': v020('deprecated', '../tracing/workflow-interceptors.ts'),
};
