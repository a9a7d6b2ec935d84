/**
 * The wire names of workflows, signals and queries are user-facing: runbooks and scripts use
 * them with `temporal workflow signal --name …`, the Web UI shows them, and running executions
 * are bound to them. Code refers to them through the typed contracts (a rename there fails the
 * typecheck); this test pins the names themselves, so a rename is a deliberate, visible change.
 */
import { describe, expect, it } from 'vitest';
import { REQUEST_KIND_NAMES } from '../../src/api/request-kinds.js';
import * as objectkeeper from '../../src/workflows/objectkeeper/contract.js';
import * as requests from '../../src/workflows/requests/contract.js';
import * as sandbox from '../../src/workflows/sandbox/contract.js';
import * as bundle from '../../src/workflows/index.js';

describe('workflow contracts', () => {
  it('keep the wire names of signals and queries', () => {
    expect(objectkeeper.followedObjectChangedSignal.name).toBe('followedObjectChanged');
    expect(objectkeeper.keeperDeletedSignal.name).toBe('keeperDeleted');
    expect(objectkeeper.keeperStateQuery.name).toBe('keeperState');
    expect(requests.requestDeletedSignal.name).toBe('requestDeleted');
    expect(requests.requestStateQuery.name).toBe('requestState');
    expect(sandbox.createSandboxUpdate.name).toBe('createSandbox');
    expect(sandbox.sandboxChangedSignal.name).toBe('sandboxChanged');
    expect(sandbox.agentReportedSignal.name).toBe('agentReported');
    expect(sandbox.sandboxStateQuery.name).toBe('sandboxState');
  });

  it('keep the workflow type names, and the bundle exports every workflow the contracts name', () => {
    const types = [
      objectkeeper.objectKeeperWorkflow,
      requests.requestTtlSweepWorkflow,
      ...Object.values(requests.requestWorkflows),
      sandbox.sandboxWorkflow,
      sandbox.sandboxJanitorWorkflow,
    ].map((w) => w.name);
    expect(types).toEqual([
      'objectKeeperWorkflow',
      'requestTtlSweepWorkflow',
      'manifestCaptureRequestWorkflow',
      'volumeCaptureRequestWorkflow',
      'volumeRestoreRequestWorkflow',
      'sandboxWorkflow',
      'sandboxJanitorWorkflow',
    ]);
    for (const name of types) expect(typeof (bundle as Record<string, unknown>)[name], name).toBe('function');
  });

  it('have one workflow per request kind', () => {
    expect(Object.keys(requests.requestWorkflows).sort()).toEqual([...REQUEST_KIND_NAMES].sort());
  });
});
