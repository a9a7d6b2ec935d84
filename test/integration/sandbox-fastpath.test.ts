/**
 * The sandbox fast path end to end: real Temporal, real apiserver, real tenant etcd, agents as
 * real processes (their Pods written as the kubelet would). Both faces (a standard gRPC client
 * from the repo's .proto, and HTTP/JSON), Fast and Strong, the hand-off, kubectl-created
 * sandboxes, deletion through the finalizer, idempotent creates by name, the same-name recreate
 * loop, and bad input with its specific status.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { request as httpsRequest } from 'node:https';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { connect as tlsConnect } from 'node:tls';
import * as grpc from '@grpc/grpc-js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  ALLOCATION_ANNOTATION,
  CREATE_TIMESTAMP_ANNOTATION,
  CREATED_BY_LABEL,
  SANDBOX_FINALIZER,
  SandboxKind,
} from '../../src/api/sandbox.js';
import { TENANT_LABEL, createFingerprint, sandboxWorkflowId } from '../../src/domain/sandbox.js';
import { K8sUID } from '../../src/temporal/search-attributes.js';
import { sandboxWorkflow, type AnsweredCreate, type CreateSandboxCall } from '../../src/workflows/sandbox/contract.js';
import { eventually, historyText, replayAndRecord, temporal, uniq } from '../support/env.js';
import { issueLeaf, newCa } from '../../src/admission/certs.js';
import { fastPathClient } from '../../src/fastpath/grpc-client.js';
import { apiKeyHash, newApiKey } from '../../src/tenancy/api-keys.js';
import { SandboxStack, TENANT_HEADER, grpcError, sandboxImage } from '../support/fastpath.js';

/** A sandbox spec whose process runs until it is deleted. */
const spec = (extra: Record<string, unknown> = {}) => ({
  image: sandboxImage(),
  poolRef: 'pool-a',
  command: ['sleep', '3600'],
  ...extra,
});

let stack: SandboxStack;

beforeAll(async () => {
  stack = await new SandboxStack({ agents: 2, capacity: 3 }).start();
}, 180_000);

afterAll(async () => {
  await stack?.stop();
});

type CreateResponse = { sandboxId: string; agentPod: string; endpoints: string[]; sandboxName: string };

async function create(req: Record<string, unknown>, tenant?: string) {
  return stack.grpc.call<CreateResponse>('CreateSandbox', { namespace: stack.namespace, ...req }, tenant);
}

/** The Sandbox once its workflow has handed it off and the agent runs it. */
async function running(name: string) {
  return eventually(`Sandbox ${name} Running`, async () => {
    const sb = await stack.sandbox(name);
    return sb?.status?.phase === 'Running' && !sb.metadata?.annotations?.[ALLOCATION_ANNOTATION] ? sb : undefined;
  });
}

/**
 * The work a sandbox life cost its workflow, from its history: the patch markers, the largest
 * number of the sandbox's own search-attribute upserts in one workflow task, and the local
 * activities in order.
 */
async function lifeWork(workflowId: string) {
  const history = await (await temporal()).workflow.getHandle(workflowId).fetchHistory();
  const patches: string[] = [];
  const localActivities: string[] = [];
  /** `signal:event-or-phase`: the hints that reached the run. */
  const signals: string[] = [];
  let workflowTasks = 0;
  let failedTasks = 0;
  let upserts = 0;
  let mostUpsertsInATask = 0;
  for (const e of history.events ?? []) {
    if (e.workflowTaskCompletedEventAttributes) upserts = 0;
    if (e.workflowTaskCompletedEventAttributes) workflowTasks++;
    if (e.workflowTaskFailedEventAttributes) failedTasks++;
    const signaled = e.workflowExecutionSignaledEventAttributes;
    if (signaled) {
      const payload = signaled.input?.payloads?.[0]?.data;
      const arg = payload ? (JSON.parse(Buffer.from(payload).toString()) as { event?: string; phase?: string }) : {};
      signals.push(`${signaled.signalName}:${arg.event ?? arg.phase ?? ''}`);
    }
    const fields = e.upsertWorkflowSearchAttributesEventAttributes?.searchAttributes?.indexedFields ?? {};
    if ('OperationPhase' in fields || 'K8sUID' in fields) mostUpsertsInATask = Math.max(mostUpsertsInATask, ++upserts);
    const marker = e.markerRecordedEventAttributes;
    const data = marker?.details?.[marker.markerName === 'core_patch' ? 'patch-data' : 'data']?.payloads?.[0]?.data;
    if (!data) continue;
    const detail = JSON.parse(Buffer.from(data).toString()) as { id?: string; activity_type?: string };
    if (marker?.markerName === 'core_patch') patches.push(detail.id!);
    else if (detail.activity_type) localActivities.push(detail.activity_type);
  }
  return { patches, mostUpsertsInATask, localActivities, signals, workflowTasks, failedTasks };
}

async function heldBy(sandboxId: string) {
  const reports = await stack.agentReports();
  return reports.filter((r) => r.sandboxes.some((s) => s.sandboxId === sandboxId)).map((r) => r.pod);
}

async function deleteAndWait(name: string) {
  await stack.grpc.call('DeleteSandbox', { sandboxName: name, namespace: stack.namespace });
  await eventually(`Sandbox ${name} gone`, async () => !(await stack.sandbox(name)));
}

describe('Fast mode (the default)', () => {
  it('answers with the placement, then records the Sandbox and hands the allocation off to status', async () => {
    const name = uniq('fast');
    const res = await create(spec({ name, exposedPorts: [18080] }));
    expect(res.sandboxName).toBe(name);
    expect(res.sandboxId).toMatch(/^[0-9a-f]{32}$/);
    expect(stack.fleet.agents.map((a) => a.podName)).toContain(res.agentPod);
    const agent = stack.fleet.agents.find((a) => a.podName === res.agentPod)!;
    expect(res.endpoints).toEqual([`${agent.ip}:18080`]);
    // The agent holds it the moment the caller has the answer.
    expect(await heldBy(res.sandboxId)).toEqual([res.agentPod]);

    const sb = await running(name);
    expect(sb.status).toMatchObject({
      phase: 'Running',
      assignedPod: res.agentPod,
      nodeName: 'local-node',
      sandboxID: res.sandboxId,
      endpoints: res.endpoints,
    });
    expect(sb.metadata?.finalizers).toContain(SANDBOX_FINALIZER);
    expect(sb.metadata?.labels).toMatchObject({
      [CREATED_BY_LABEL]: 'fastpath-fast',
      [TENANT_LABEL]: String(stack.tenantId),
    });
    expect(sb.metadata?.annotations?.[CREATE_TIMESTAMP_ANNOTATION]).toMatch(/^\d{19}$/);
    expect(sb.metadata?.annotations?.[ALLOCATION_ANNOTATION]).toBeUndefined();

    // Findable in the Web UI by namespace, name and tenant, saying what it is doing.
    const client = await temporal();
    const query = `K8sKind="Sandbox" AND K8sNamespace="${stack.namespace}" AND K8sName="${name}" AND Tenant="${stack.tenantId}" AND OperationPhase="live"`;
    const found = await eventually('the workflow by its search attributes', async () => {
      for await (const wf of client.workflow.list({ query })) return wf;
      return undefined;
    });
    expect(found.workflowId).toBe(sandboxWorkflowId(stack.namespace, name));
    expect(found.typedSearchAttributes.get(K8sUID)).toBe(sb.metadata!.uid);

    await deleteAndWait(name);
    expect(await heldBy(res.sandboxId)).toEqual([]);
    await replayAndRecord(sandboxWorkflowId(stack.namespace, name), 'sandbox-fast-deleted-lean-3');
    // The work per life (issue 35): one sandbox patch marker (each adds a search-attribute upsert),
    // one upsert of its phase and UID per task, and no read after a write that answered with the record.
    const work = await lifeWork(sandboxWorkflowId(stack.namespace, name));
    expect(work.patches.filter((p) => p.startsWith('sandbox-'))).toEqual(['sandbox-lean-life-3']);
    expect(work.mostUpsertsInATask).toBe(1);
    // The steps it only sequences share a local activity: the record with its hand-off, and the
    // deletion's Terminating, removal from the agent and finalizer (7 local activities, not 11).
    expect(work.localActivities.slice(0, 2)).toEqual(['placeOnAgent', 'recordAndHandOff']);
    expect(work.localActivities.slice(-3)).toEqual(['readSandbox', 'removeSandbox', 'releaseQuotaSlot']);
    expect(work.localActivities.length).toBeLessThanOrEqual(7);
    // No echo of its own doing wakes it: not the agent reporting the sandbox it placed, not the
    // record it created. The deletion is told once (by the watcher; DeleteSandbox waits for it to
    // arrive): a second copy racing into the task that ends the run would fail that task.
    expect(work.signals).toEqual(['sandboxChanged:Deleting']);
    expect(work.workflowTasks).toBe(3);
    expect(work.failedTasks).toBe(0);
  });

  it('makes a create idempotent by name: same spec → the same sandbox; another spec → ALREADY_EXISTS', async () => {
    const name = uniq('idem');
    const first = await create(spec({ name }));
    const again = await create(spec({ name }));
    expect(again).toEqual(first);
    const err = await grpcError(create(spec({ name, args: ['different'] })));
    expect(err.code).toBe(grpc.status.ALREADY_EXISTS);
    expect(err.details).toContain(name);
    await running(name);
    expect(await heldBy(first.sandboxId)).toHaveLength(1);
    await deleteAndWait(name);
  });

  it("another tenant creating the same name with the same spec is refused, never given the first tenant's sandbox", async () => {
    const name = uniq('theirs');
    const first = await create(spec({ name }));
    const other = String(stack.otherTenantId);
    for (const req of [spec({ name }), spec({ name, args: ['different'] })]) {
      const err = await grpcError(create(req, other));
      expect(err.code).toBe(grpc.status.ALREADY_EXISTS);
      // Nothing of the first tenant's sandbox in the refusal: no ID, agent, endpoint, or spec.
      expect(err.details).toBe(`a Sandbox named ${name} already exists in namespace ${stack.namespace}`);
      expect(err.details).not.toContain(first.sandboxId);
      expect(err.details).not.toContain(first.agentPod);
    }
    // The owner's own retry still gets its answer.
    expect(await create(spec({ name }))).toEqual(first);
    await running(name);
    await deleteAndWait(name);
  });
});

describe('idempotency by name survives the workflow continuing as new', () => {
  it('a continued run answers the same create with the same sandbox; another spec or tenant is still refused', async () => {
    const name = uniq('continued');
    const first = await create(spec({ name }));
    await running(name);
    const client = await temporal();
    const id = sandboxWorkflowId(stack.namespace, name);
    // The create as the run received it (env values sealed), from its history.
    const history = await client.workflow.getHandle(id).fetchHistory();
    const accepted = history.events!.find((e) => e.workflowExecutionUpdateAcceptedEventAttributes)!;
    const payload =
      accepted.workflowExecutionUpdateAcceptedEventAttributes!.acceptedRequest!.input!.args!.payloads![0]!;
    const call = JSON.parse(Buffer.from(payload.data!).toString()) as CreateSandboxCall;
    // What continue-as-new carries, handed to a run of the same name (the first one ended without
    // touching the sandbox, as a run that continued as new does).
    await client.workflow.getHandle(id).terminate('test: stands in for continue-as-new');
    const created: AnsweredCreate = {
      fingerprint: createFingerprint(call.spec),
      tenant: call.tenant,
      answer: { status: 'ok', ...first },
    };
    await client.workflow.start(sandboxWorkflow, {
      workflowId: id,
      taskQueue: stack.sandboxTaskQueue,
      args: [{ namespace: stack.namespace, name, created }],
    });
    expect(await create(spec({ name }))).toEqual(first);
    const other = await grpcError(create(spec({ name }), String(stack.otherTenantId)));
    expect(other.code).toBe(grpc.status.ALREADY_EXISTS);
    expect(other.details).toBe(`a Sandbox named ${name} already exists in namespace ${stack.namespace}`);
    const changed = await grpcError(create(spec({ name, args: ['different'] })));
    expect(changed.code).toBe(grpc.status.ALREADY_EXISTS);
    expect(changed.details).toContain('with another spec');
    expect(await heldBy(first.sandboxId)).toHaveLength(1);
    await deleteAndWait(name);
  });
});

describe('a delete right after a Fast create', () => {
  it('reaches the creation before its record exists: nothing is recorded and nothing is left on the agent', async () => {
    const name = uniq('quick');
    const created = await create(spec({ name }));
    // At once: a Fast answer comes before the record is written.
    expect(await stack.grpc.call('DeleteSandbox', { sandboxName: name, namespace: stack.namespace })).toMatchObject({
      success: true,
    });
    await eventually(`Sandbox ${name} gone from its agent`, async () => (await heldBy(created.sandboxId)).length === 0);
    await eventually(`no Sandbox ${name}`, async () => !(await stack.sandbox(name)));
    // And it stays gone: no record written late.
    await new Promise((r) => setTimeout(r, 1500));
    expect(await stack.sandbox(name)).toBeUndefined();
    expect(await heldBy(created.sandboxId)).toEqual([]);
  });
});

describe('status follows the agent', () => {
  it('a sandbox whose process exits becomes Failed with the exit', async () => {
    const name = uniq('exits');
    // Not waiting to see it Running first: on a loaded machine it can have exited before a look.
    await create({ ...spec({ name }), command: ['sh', '-c', 'sleep 1.5; exit 3'] });
    const sb = await eventually(`Sandbox ${name} Failed`, async () => {
      const s = await stack.sandbox(name);
      return s?.status?.phase === 'Failed' ? s : undefined;
    });
    expect(sb.status?.conditions?.[0]).toMatchObject({
      type: 'Ready',
      status: 'False',
      reason: 'ProcessFailed',
      message: 'exited with code 3',
    });
    await deleteAndWait(name);
  });
});

describe('Strong mode', () => {
  it('writes the record before the agent create: the Sandbox exists when the caller has the answer', async () => {
    const name = uniq('strong');
    const res = await create(spec({ name, consistencyMode: 'STRONG' }));
    const sb = await stack.sandbox(name);
    expect(sb).toBeDefined();
    // The sandbox ID is the record's UID, as in the original.
    expect(res.sandboxId).toBe(sb!.metadata!.uid);
    expect(sb!.metadata?.labels?.[CREATED_BY_LABEL]).toBe('fastpath-strong');
    const live = await running(name);
    expect(live.status?.sandboxID).toBe(res.sandboxId);
    await deleteAndWait(name);
    expect(await heldBy(res.sandboxId)).toEqual([]);
    await replayAndRecord(sandboxWorkflowId(stack.namespace, name), 'sandbox-strong-deleted-lean-3');
    const work = await lifeWork(sandboxWorkflowId(stack.namespace, name));
    expect(work.patches.filter((p) => p.startsWith('sandbox-'))).toEqual(['sandbox-lean-life-3']);
    // The hand-off's two writes in one local activity.
    expect(work.localActivities).toContain('handOffRecord');
    expect(work.localActivities).not.toContain('removeAllocationAnnotation');
    expect(work.mostUpsertsInATask).toBe(1);
    expect(work.signals).toEqual(['sandboxChanged:Deleting']);
    expect(work.failedTasks).toBe(0);
  });
});

describe('records created with kubectl', () => {
  it('are placed by their workflow, and a malformed allocation annotation is removed first', async () => {
    const names = [uniq('kubectl'), uniq('malformed')];
    for (const name of names)
      await stack.kube.create({
        apiVersion: SandboxKind.apiVersion,
        kind: SandboxKind.kind,
        metadata: {
          name,
          namespace: stack.namespace,
          ...(name.startsWith('malformed') ? { annotations: { [ALLOCATION_ANNOTATION]: '{not json' } } : {}),
        },
        spec: spec(),
      });
    for (const name of names) {
      const sb = await running(name);
      expect(sb.status?.sandboxID).toBe(sb.metadata?.uid);
      expect(await heldBy(sb.status!.sandboxID!)).toEqual([sb.status?.assignedPod]);
      expect(sb.metadata?.finalizers).toContain(SANDBOX_FINALIZER);
    }
    for (const name of names) {
      await stack.kube.delete({
        apiVersion: SandboxKind.apiVersion,
        kind: SandboxKind.kind,
        namespace: stack.namespace,
        name,
      });
      await eventually(`Sandbox ${name} gone`, async () => !(await stack.sandbox(name)));
    }
    await replayAndRecord(sandboxWorkflowId(stack.namespace, names[0]!), 'sandbox-kubectl-deleted');
    await replayAndRecord(sandboxWorkflowId(stack.namespace, names[1]!), 'sandbox-malformed-annotation-deleted');
  });
});

describe('the five RPCs and the HTTP face', () => {
  it('Get, List, Update and Delete over gRPC act on the caller’s tenant only', async () => {
    const name = uniq('rpc');
    const created = await create(spec({ name }));
    await running(name);
    const info = await stack.grpc.call<Record<string, unknown>>('GetSandbox', {
      sandboxName: name,
      namespace: stack.namespace,
    });
    expect(info).toMatchObject({
      sandboxId: created.sandboxId,
      phase: 'Running',
      agentPod: created.agentPod,
      image: sandboxImage(),
      poolRef: 'pool-a',
      sandboxName: name,
    });
    expect(info.createdAt).toBeGreaterThan(1_700_000_000);
    const list = await stack.grpc.call<{ items: { sandboxName: string }[] }>('ListSandboxes', {
      namespace: stack.namespace,
    });
    expect(list.items.map((i) => i.sandboxName)).toContain(name);

    // Another tenant sees nothing of it.
    const other = String(stack.otherTenantId);
    expect(
      (await grpcError(stack.grpc.call('GetSandbox', { sandboxName: name, namespace: stack.namespace }, other))).code,
    ).toBe(grpc.status.NOT_FOUND);
    const otherList = await stack.grpc.call<{ items: unknown[] }>(
      'ListSandboxes',
      { namespace: stack.namespace },
      other,
    );
    expect(otherList.items).toEqual([]);
    expect(
      (await grpcError(stack.grpc.call('DeleteSandbox', { sandboxName: name, namespace: stack.namespace }, other)))
        .code,
    ).toBe(grpc.status.NOT_FOUND);

    const upd = await stack.grpc.call<{ success: boolean; message: string }>('UpdateSandbox', {
      sandboxName: name,
      namespace: stack.namespace,
      failurePolicy: 'AUTO_RECREATE',
      labels: { team: 'a' },
    });
    expect(upd.success).toBe(true);
    const sb = await stack.sandbox(name);
    expect(sb?.spec.failurePolicy).toBe('AutoRecreate');
    expect(sb?.metadata?.labels?.team).toBe('a');
    const bad = await stack.grpc.call<{ success: boolean; message: string }>('UpdateSandbox', {
      sandboxName: name,
      namespace: stack.namespace,
      resetRevision: 'yesterday',
    });
    expect(bad).toMatchObject({ success: false, message: expect.stringContaining('RFC 3339') });
    // A time no RFC 3339 timestamp can hold is refused the same way, not an INTERNAL error.
    const far = await stack.grpc.call<{ success: boolean; message: string }>('UpdateSandbox', {
      sandboxName: name,
      namespace: stack.namespace,
      expireTimeSeconds: String(2 ** 62),
    });
    expect(far).toMatchObject({ success: false, message: expect.stringContaining('up to 9999-12-31') });
    // An unknown name, and another tenant's sandbox, answer as the original does: OK, success=false.
    for (const [sandboxName, tenant] of [
      ['no-such-sandbox', undefined],
      [name, other],
    ] as const) {
      const missing = await stack.grpc.call<{ success: boolean; message: string }>(
        'UpdateSandbox',
        { sandboxName, namespace: stack.namespace, failurePolicy: 'MANUAL' },
        tenant,
      );
      expect(missing).toMatchObject({
        success: false,
        message: `Sandbox ${sandboxName} not found in namespace ${stack.namespace}`,
      });
    }
    expect((await stack.sandbox(name))?.spec.failurePolicy).toBe('AutoRecreate');

    const del = await stack.grpc.call<{ success: boolean }>('DeleteSandbox', {
      sandboxName: name,
      namespace: stack.namespace,
    });
    expect(del.success).toBe(true);
    await eventually(`Sandbox ${name} gone`, async () => !(await stack.sandbox(name)));
    expect(await heldBy(created.sandboxId)).toEqual([]);
  });

  it('serves the same operations as HTTP/JSON', async () => {
    const name = uniq('http');
    const res = await stack.http('POST', '/api/v1/sandboxes', {
      namespace: stack.namespace,
      name,
      ...spec(),
      envs: { A: '1' },
    });
    expect(res.status).toBe(201);
    const created = (await res.json()) as CreateResponse;
    expect(created.sandboxName).toBe(name);
    await running(name);
    const get = await stack.http('GET', `/api/v1/namespaces/${stack.namespace}/sandboxes/${name}`);
    expect(get.status).toBe(200);
    expect(await get.json()).toMatchObject({ sandboxId: created.sandboxId, phase: 'Running' });
    const list = await stack.http('GET', `/api/v1/namespaces/${stack.namespace}/sandboxes`);
    expect(((await list.json()) as { items: { sandboxName: string }[] }).items.map((i) => i.sandboxName)).toContain(
      name,
    );
    const patch = await stack.http('PATCH', `/api/v1/namespaces/${stack.namespace}/sandboxes/${name}`, {
      expireTimeSeconds: 4_102_444_800,
    });
    expect(await patch.json()).toMatchObject({ success: true });
    expect((await stack.sandbox(name))?.spec.expireTime).toBe('2100-01-01T00:00:00Z');
    const del = await stack.http('DELETE', `/api/v1/namespaces/${stack.namespace}/sandboxes/${name}`);
    expect(await del.json()).toEqual({ success: true });
    await eventually(`Sandbox ${name} gone`, async () => !(await stack.sandbox(name)));
  });
});

describe('env values (secrets, often) never reach workflow history', () => {
  it('Fast, Strong and kubectl-created: the sandbox and its record have the values, no history does', async () => {
    const secret = (what: string) => `${what}-${uniq('s3cr3t')}`;
    const cases = [
      { name: uniq('env-fast'), value: secret('fast'), mode: 'FAST' },
      { name: uniq('env-strong'), value: secret('strong'), mode: 'STRONG' },
      { name: uniq('env-kubectl'), value: secret('kubectl'), mode: undefined },
    ];
    const command = ['sh', '-c', 'echo "token=$API_TOKEN"; sleep 3600'];
    for (const c of cases)
      if (c.mode) await create(spec({ name: c.name, command, envs: { API_TOKEN: c.value }, consistencyMode: c.mode }));
      else
        await stack.kube.create({
          apiVersion: SandboxKind.apiVersion,
          kind: SandboxKind.kind,
          // The tenant label: so the test's tenant may read its logs.
          metadata: { name: c.name, namespace: stack.namespace, labels: { [TENANT_LABEL]: String(stack.tenantId) } },
          spec: { ...spec({ command }), envs: [{ name: 'API_TOKEN', value: c.value }] },
        } as never);
    for (const c of cases) {
      const sb = await running(c.name);
      // The record keeps the value (as the original's), and the sandbox's process got it.
      expect(sb.spec.envs).toEqual([{ name: 'API_TOKEN', value: c.value }]);
      await eventually(`${c.name} printed its env`, async () => {
        const res = await stack.http('GET', `/api/v1/namespaces/${stack.namespace}/sandboxes/${c.name}/logs`);
        return (await res.text()).includes(`token=${c.value}`);
      });
    }
    for (const c of cases) await deleteAndWait(c.name);
    for (const c of cases) {
      const history = await historyText(sandboxWorkflowId(stack.namespace, c.name));
      expect(history).toContain('API_TOKEN'); // the scan sees the env, sealed
      expect(history, `history of ${c.name}`).not.toContain(c.value);
    }
  });
});

describe('bad input gets its specific status, and nothing is half-created', () => {
  it('over gRPC', async () => {
    const cases: [Record<string, unknown>, grpc.status, string][] = [
      [{ ...spec(), image: '' }, grpc.status.INVALID_ARGUMENT, 'image is required'],
      [spec({ exposedPorts: [70000] }), grpc.status.INVALID_ARGUMENT, '70000 is not a port'],
      [spec({ exposedPorts: [8080, 8080] }), grpc.status.INVALID_ARGUMENT, 'port 8080 is listed twice'],
      [spec({ poolRef: 'no-such-pool' }), grpc.status.NOT_FOUND, 'SandboxPool no-such-pool not found'],
      [spec({ name: 'Not_A_Name' }), grpc.status.INVALID_ARGUMENT, 'is not a valid object name'],
    ];
    for (const [req, code, message] of cases) {
      const err = await grpcError(create({ name: uniq('bad'), ...req }));
      expect({ code: err.code, details: err.details }).toEqual({ code, details: expect.stringContaining(message) });
    }
    const unknown = await grpcError(create(spec(), '999999999'));
    expect(unknown.code).toBe(grpc.status.UNAUTHENTICATED);
    expect(unknown.details).toMatch(/999999999/);
    const none = await grpcError(create(spec(), ''));
    expect(none.code).toBe(grpc.status.UNAUTHENTICATED);
    const disabled = await grpcError(create(spec(), String(stack.disabledTenantId)));
    expect(disabled.code).toBe(grpc.status.PERMISSION_DENIED);
    // Nothing was created anywhere.
    const reports = await stack.agentReports();
    expect(reports.flatMap((r) => r.sandboxes).filter((s) => s.claimName.startsWith('bad-'))).toEqual([]);
  });

  it('over HTTP', async () => {
    const bad = await stack.http('POST', '/api/v1/sandboxes', { ...spec(), exposedPorts: 'eighty' });
    expect(bad.status).toBe(400);
    expect(await bad.json()).toMatchObject({ error: 'InvalidArgument', message: 'exposed_ports: must be an array' });
    const unknownField = await stack.http('POST', '/api/v1/sandboxes', { ...spec(), gpu: 1 });
    expect(await unknownField.json()).toMatchObject({ message: 'unknown field "gpu" in CreateRequest' });
    const noTenant = await stack.http('POST', '/api/v1/sandboxes', spec(), '');
    expect(noTenant.status).toBe(401);
    const missing = await stack.http('GET', `/api/v1/namespaces/${stack.namespace}/sandboxes/nope`);
    expect(missing.status).toBe(404);
    const escape = await stack.http('GET', `/api/v1/namespaces/${stack.namespace}/sandboxes/%zz`);
    expect(escape.status).toBe(400);
    expect(await escape.json()).toMatchObject({ error: 'InvalidArgument', message: expect.stringContaining('%zz') });
    // A name as long as Kubernetes allows is routed (not cut at a router's parameter limit).
    const longName = await stack.http('GET', `/api/v1/namespaces/${stack.namespace}/sandboxes/${'n'.repeat(253)}`);
    expect([longName.status, ((await longName.json()) as { error: string }).error]).toEqual([404, 'NotFound']);
    const noRoute = await stack.http('GET', '/api/v1/sandboxes?x=1');
    expect([noRoute.status, await noRoute.json()]).toEqual([
      404,
      { error: 'NotFound', message: 'no route GET /api/v1/sandboxes' },
    ]);
    const otherMethod = await stack.http('PUT', `/api/v1/namespaces/${stack.namespace}/sandboxes/nope`, {});
    expect([otherMethod.status, await otherMethod.json()]).toEqual([
      400,
      { error: 'InvalidArgument', message: 'PUT is not allowed here' },
    ]);
    const raw = (body: string) =>
      fetch(`${stack.httpBase}/api/v1/sandboxes`, {
        method: 'POST',
        headers: { [TENANT_HEADER]: String(stack.tenantId) },
        body,
      });
    expect(await (await raw('{"name":')).json()).toMatchObject({
      error: 'InvalidArgument',
      message: expect.stringMatching(/^body is not JSON: /),
    });
    const big = await raw(JSON.stringify({ name: 'x'.repeat(1024 * 1024) }));
    expect([big.status, await big.json()]).toEqual([
      400,
      { error: 'InvalidArgument', message: 'body over 1048576 bytes' },
    ]);
    // Two members of one oneof: refused, not the last one silently kept.
    const both = await stack.http('PATCH', `/api/v1/namespaces/${stack.namespace}/sandboxes/nope`, {
      expireTimeSeconds: 0,
      failurePolicy: 'MANUAL',
    });
    expect(both.status).toBe(400);
    expect(await both.json()).toMatchObject({
      message: 'failure_policy and expire_time_seconds are alternatives (update): set only one',
    });
  });
});

describe('metrics', () => {
  it('count creates by mode and outcome, rejections by reason, and the pool’s agents and slots', async () => {
    const res = await fetch(`http://127.0.0.1:${stack.fastpath!.metricsPort}/metrics`);
    const text = await res.text();
    const value = (line: RegExp) =>
      Number(
        text
          .split('\n')
          .find((l) => line.test(l))
          ?.split(' ')
          .pop() ?? NaN,
      );
    expect(text).toMatch(
      /^durable_operators_build_info\{version="\d+\.\d+\.\d+",role="fastpath",node_version="v[\d.]+"\} 1$/m,
    );
    // The tests above made Fast and Strong sandboxes and were refused for bad input.
    expect(value(/^fastpath_create_sandbox_duration_seconds_count\{mode="fast",success="true"\}/)).toBeGreaterThan(0);
    expect(value(/^fastpath_create_sandbox_duration_seconds_count\{mode="strong",success="true"\}/)).toBeGreaterThan(0);
    expect(
      value(/^durable_operators_fastpath_create_rejections_total\{mode="fast",code="InvalidArgument"\}/),
    ).toBeGreaterThanOrEqual(3);
    expect(
      value(/^durable_operators_fastpath_create_rejections_total\{mode="fast",code="NotFound"\}/),
    ).toBeGreaterThanOrEqual(1);
    expect(
      value(new RegExp(`^durable_operators_fastpath_agents\\{pool_namespace="${stack.namespace}",pool="pool-a"\\}`)),
    ).toBe(2);
    expect(
      value(
        new RegExp(
          `^durable_operators_fastpath_sandbox_slots\\{pool_namespace="${stack.namespace}",pool="pool-a",kind="capacity"\\}`,
        ),
      ),
    ).toBe(6);
  });
});

describe('a fast path holding the wrong agent token', () => {
  it("creates nothing and says why: its key's CA does not vouch for the agents (nor would they take its token)", async () => {
    const tokenFile = path.join(stack.stateDir, 'wrong-token');
    await writeFile(tokenFile, 'not-the-agents-token', { mode: 0o600 });
    // Its own task queue, so its creates run only in it (a replica of the good one would share the work).
    const wrong = await stack.startSecondReplica({ agentTokenFile: tokenFile }, uniq('wrong-token'));
    try {
      const before = (await stack.agentReports()).reduce((n, r) => n + r.allocated, 0);
      const err = await grpcError(wrong.grpc.call('CreateSandbox', { namespace: stack.namespace, ...spec() }));
      expect(err.code).toBe(grpc.status.UNAVAILABLE);
      // Another key, another agent CA: the agents' certificates are refused before any token is sent.
      expect(err.details).toMatch(/unreachable: .*certificate/);
      expect((await stack.agentReports()).reduce((n, r) => n + r.allocated, 0)).toBe(before);
    } finally {
      wrong.grpc.close();
    }
  });
});

describe('delete then recreate with the same name', () => {
  it('works in a loop: each incarnation is a new sandbox, none is left behind', async () => {
    const name = uniq('loop');
    const ids: string[] = [];
    for (let i = 0; i < 4; i++) {
      const res = await create(spec({ name, consistencyMode: i % 2 ? 'STRONG' : 'FAST' }));
      ids.push(res.sandboxId);
      await running(name);
      // Delete, and create again right away: the create waits for the old incarnation to finish.
      await stack.grpc.call('DeleteSandbox', { sandboxName: name, namespace: stack.namespace });
    }
    await eventually(`Sandbox ${name} gone`, async () => !(await stack.sandbox(name)));
    expect(new Set(ids).size).toBe(4);
    const reports = await stack.agentReports();
    expect(reports.flatMap((r) => r.sandboxes).filter((s) => ids.includes(s.sandboxId))).toEqual([]);
  });
});

describe('API keys: a tenant with keys is never served without one', () => {
  it('gRPC and HTTP: no key or a wrong one is UNAUTHENTICATED, its keys work, rotation without downtime', async () => {
    const other = String(stack.otherTenantId);
    const [k1, k2] = [newApiKey(), newApiKey()];
    const withKey = (key?: string) => fastPathClient(stack.grpcAddress, other, key);
    const list = (key?: string) => {
      const c = withKey(key);
      return c.call('ListSandboxes', { namespace: stack.namespace }).finally(() => c.close());
    };
    try {
      await stack.setOtherTenantSandbox({ apiKeys: [{ id: 'k1', sha256: apiKeyHash(k1) }] });
      await eventually(
        'the tenant’s key required',
        async () => (await grpcError(list()).catch(() => undefined))?.code === grpc.status.UNAUTHENTICATED,
      );
      const none = await grpcError(list());
      expect(none.details).toBe(`tenant ${other} requires an API key: Authorization: Bearer <key>`);
      const wrong = await grpcError(list(k2));
      expect({ code: wrong.code, details: wrong.details }).toEqual({
        code: grpc.status.UNAUTHENTICATED,
        details: `the API key is not one of tenant ${other}'s`,
      });
      await expect(list(k1)).resolves.toMatchObject({ items: [] });
      const route = `/api/v1/namespaces/${stack.namespace}/sandboxes`;
      expect((await stack.http('GET', route, undefined, other)).status).toBe(401);
      expect((await stack.http('GET', route, undefined, other, { authorization: `Bearer ${k1}` })).status).toBe(200);
      // The test tenant has no keys: served by its identifier alone, as before.
      expect((await stack.http('GET', route)).status).toBe(200);

      // Rotation: the new key added, both work; the old one removed, only the new one works.
      await stack.setOtherTenantSandbox({
        apiKeys: [
          { id: 'k1', sha256: apiKeyHash(k1) },
          { id: 'k2', sha256: apiKeyHash(k2) },
        ],
      });
      await eventually('the second key accepted', async () => !!(await list(k2).catch(() => undefined)));
      await expect(list(k1)).resolves.toBeDefined();
      await stack.setOtherTenantSandbox({ apiKeys: [{ id: 'k2', sha256: apiKeyHash(k2) }] });
      await eventually(
        'the first key refused',
        async () => (await grpcError(list(k1)).catch(() => undefined))?.code === grpc.status.UNAUTHENTICATED,
      );
      await expect(list(k2)).resolves.toBeDefined();
    } finally {
      await stack.setOtherTenantSandbox(undefined);
    }
  });
});

describe('TLS on both ports, client certificates as credentials, certificates reloaded', () => {
  it('serves only TLS; a certificate the tenant names authenticates it; a renewed certificate is served without a restart', async () => {
    const dir = await mkdtemp(path.join(tmpdir(), 'fastpath-tls-'));
    const ca = await newCa('fastpath-test-ca');
    const foreignCa = await newCa('someone-elses-ca');
    const files = {
      certFile: path.join(dir, 'tls.crt'),
      keyFile: path.join(dir, 'tls.key'),
      clientCaFile: path.join(dir, 'ca.crt'),
    };
    const serve = async (leaf: { certPem: string; keyPem: string }) => {
      await writeFile(files.keyFile, leaf.keyPem);
      await writeFile(files.certFile, leaf.certPem);
    };
    const first = await issueLeaf(ca, { subject: 'CN=fastpath', usage: 'server', hosts: ['127.0.0.1', 'localhost'] });
    await serve(first);
    await writeFile(files.clientCaFile, ca.certPem);
    const { fastpath } = await stack.startSecondReplica({
      tls: { ...files, requireClientCert: false, reloadIntervalMs: 200 },
    });
    const grpcAddress = `127.0.0.1:${fastpath.grpcPort}`;
    const client = (opts: { tenant?: string; key?: string; cert?: { certPem: string; keyPem: string } }) =>
      fastPathClient(grpcAddress, opts.tenant ?? String(stack.tenantId), opts.key, {
        ca: Buffer.from(ca.certPem),
        ...(opts.cert && { cert: Buffer.from(opts.cert.certPem), key: Buffer.from(opts.cert.keyPem) }),
      });
    const list = (c: ReturnType<typeof client>) =>
      c.call('ListSandboxes', { namespace: stack.namespace }).finally(() => c.close());
    const other = String(stack.otherTenantId);
    const teamB = await issueLeaf(ca, { subject: 'CN=team-b.clients', usage: 'client' });
    const spiffe = await issueLeaf(ca, { subject: 'CN=ci', usage: 'client', uris: ['spiffe://cluster/ns/b/sa/ci'] });
    const stranger = await issueLeaf(ca, { subject: 'CN=team-x.clients', usage: 'client' });
    const forged = await issueLeaf(foreignCa, { subject: 'CN=team-b.clients', usage: 'client' });
    const key = newApiKey();
    try {
      // Plain text is not served on either port.
      const plain = fastPathClient(grpcAddress, String(stack.tenantId));
      expect((await grpcError(plain.call('ListSandboxes', { namespace: stack.namespace }))).code).toBe(
        grpc.status.UNAVAILABLE,
      );
      plain.close();
      await expect(fetch(`http://127.0.0.1:${fastpath.httpPort}/healthz`)).rejects.toThrow();

      // A whole create over TLS, for a tenant without credentials (served by its identifier, as before).
      const c = client({});
      const name = uniq('tls');
      const created = await c.call<CreateResponse>('CreateSandbox', { namespace: stack.namespace, ...spec({ name }) });
      expect(created.sandboxName).toBe(name);
      c.close();
      await running(name);
      await deleteAndWait(name);

      await stack.setOtherTenantSandbox({
        apiKeys: [{ id: 'k1', sha256: apiKeyHash(key) }],
        clientCertificateNames: ['team-b.clients', 'spiffe://cluster/ns/b/sa/ci'],
      });
      await eventually(
        'the tenant’s credentials required',
        async () =>
          (await grpcError(list(client({ tenant: other }))).catch(() => undefined))?.code ===
          grpc.status.UNAUTHENTICATED,
      );
      expect((await grpcError(list(client({ tenant: other })))).details).toBe(
        `tenant ${other} requires an API key: Authorization: Bearer <key> or a client certificate it names`,
      );
      // Its certificates (by CN, by URI name) and its key authenticate it.
      await expect(list(client({ tenant: other, cert: teamB }))).resolves.toMatchObject({ items: [] });
      await expect(list(client({ tenant: other, cert: spiffe }))).resolves.toMatchObject({ items: [] });
      await expect(list(client({ tenant: other, key }))).resolves.toMatchObject({ items: [] });
      // Another name from the same CA is not the tenant's; the same name from another CA is no certificate at all.
      const wrong = await grpcError(list(client({ tenant: other, cert: stranger })));
      expect({ code: wrong.code, details: wrong.details }).toEqual({
        code: grpc.status.UNAUTHENTICATED,
        details: `the client certificate (team-x.clients) is not one of tenant ${other}'s`,
      });
      expect((await grpcError(list(client({ tenant: other, cert: forged })))).code).toBe(grpc.status.UNAUTHENTICATED);

      // HTTPS: the same rules.
      const route = `/api/v1/namespaces/${stack.namespace}/sandboxes`;
      const https = (cert?: { certPem: string; keyPem: string }) =>
        httpsGet(fastpath.httpPort, route, { 'x-tenant-id': other }, ca.certPem, cert);
      expect(await https()).toBe(401);
      expect(await https(teamB)).toBe(200);
      expect(await https(stranger)).toBe(401);
      expect(await https(forged)).toBe(401);

      // A renewed certificate is served by new connections, no restart; a half-written one is not.
      expect(await servedSerial(fastpath.grpcPort, ca.certPem)).toBe(serial(first.serialNumber));
      const second = await issueLeaf(ca, {
        subject: 'CN=fastpath',
        usage: 'server',
        hosts: ['127.0.0.1', 'localhost'],
      });
      await serve(second);
      await eventually(
        'the renewed certificate served on both ports',
        async () =>
          (await servedSerial(fastpath.grpcPort, ca.certPem)) === serial(second.serialNumber) &&
          (await servedSerial(fastpath.httpPort, ca.certPem)) === serial(second.serialNumber),
      );
      const third = await issueLeaf(ca, { subject: 'CN=fastpath', usage: 'server', hosts: ['127.0.0.1', 'localhost'] });
      await writeFile(files.certFile, third.certPem); // its key not written yet: a set that would not serve
      await new Promise((r) => setTimeout(r, 600));
      expect(await servedSerial(fastpath.httpPort, ca.certPem)).toBe(serial(second.serialNumber));
      await expect(list(client({ tenant: other, cert: teamB }))).resolves.toMatchObject({ items: [] });
    } finally {
      await stack.setOtherTenantSandbox(undefined);
      await rm(dir, { recursive: true, force: true });
    }
  });
});

/** A serial number as one string whatever the writer's case or leading zeros. */
const serial = (hex: string) => hex.toLowerCase().replace(/^0+/, '');

/** The serial number of the certificate a TLS port serves to a new connection. */
function servedSerial(port: number, caPem: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = tlsConnect(
      { host: '127.0.0.1', servername: 'localhost', port, ca: caPem, ALPNProtocols: ['h2', 'http/1.1'] },
      () => {
        resolve(serial(socket.getPeerCertificate().serialNumber));
        socket.end();
      },
    );
    socket.once('error', reject);
  });
}

/** The status of an HTTPS GET with the fast path's CA and, when given, a client certificate. */
function httpsGet(
  port: number,
  route: string,
  headers: Record<string, string>,
  caPem: string,
  cert?: { certPem: string; keyPem: string },
): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = httpsRequest(
      {
        host: '127.0.0.1',
        port,
        path: route,
        headers,
        ca: caPem,
        agent: false,
        ...(cert && { cert: cert.certPem, key: cert.keyPem }),
      },
      (res) => {
        res.resume();
        resolve(res.statusCode ?? 0);
      },
    );
    req.once('error', reject);
    req.end();
  });
}
