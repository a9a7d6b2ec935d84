/**
 * Sandbox and SandboxPool (`sandbox.fast.io/v1alpha1`) against the real apiserver: valid objects
 * are accepted with the original's defaults applied; bad specs (no image, a port outside 1–65535,
 * a port twice, an unknown failurePolicy, …) are refused with a clear message; the printer columns
 * and short names are served.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  SandboxKind,
  SandboxPoolKind,
  type Sandbox,
  type SandboxPool,
  type SandboxSpec,
  type SandboxPoolSpec,
} from '../../src/api/sandbox.js';
import { kube, uniq, refusal } from '../support/env.js';

const k = kube();
const ns = uniq('sandbox-validation');
const GV = 'sandbox.fast.io/v1alpha1';

const validSandbox: SandboxSpec = { image: 'python:3.12', poolRef: 'default-pool' };
const validPool: SandboxPoolSpec = {
  capacity: { poolMin: 1, poolMax: 3, bufferMin: 1, bufferMax: 2 },
  agentTemplate: { spec: { containers: [{ name: 'agent', image: 'fast-sandbox/agent:dev' }] } },
};

beforeAll(async () => {
  await k.create({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: ns } });
});

afterAll(async () => {
  await k.delete({ apiVersion: 'v1', kind: 'Namespace', name: ns });
});

const sandbox = (spec: unknown, name = uniq('sb')) =>
  ({ apiVersion: GV, kind: 'Sandbox', metadata: { name, namespace: ns }, spec }) as never;
const pool = (spec: unknown, name = uniq('pool')) =>
  ({ apiVersion: GV, kind: 'SandboxPool', metadata: { name, namespace: ns }, spec }) as never;

describe('Sandbox validation', () => {
  it('accepts a valid Sandbox and applies the defaults (failurePolicy Manual, recoveryTimeoutSeconds 60)', async () => {
    const created = await k.create<Sandbox>(
      sandbox({
        ...validSandbox,
        command: ['python', '-m', 'http.server'],
        args: ['8080'],
        envs: [{ name: 'A', value: '1' }],
        workingDir: '/srv',
        exposedPorts: [8080, 1, 65535],
        expireTime: '2030-01-01T00:00:00Z',
      }),
    );
    expect(created.spec).toMatchObject({ failurePolicy: 'Manual', recoveryTimeoutSeconds: 60 });
    expect(created.spec.exposedPorts).toEqual([8080, 1, 65535]);
    const explicit = await k.create<Sandbox>(
      sandbox({ ...validSandbox, failurePolicy: 'AutoRecreate', recoveryTimeoutSeconds: 5 }),
    );
    expect(explicit.spec).toMatchObject({ failurePolicy: 'AutoRecreate', recoveryTimeoutSeconds: 5 });
  });

  it('has a status subresource: a status write through it is kept, phase from the original set', async () => {
    const created = await k.create<Sandbox>(sandbox(validSandbox));
    const ref = { apiVersion: GV, kind: 'Sandbox', plural: 'sandboxes', namespace: ns, name: created.metadata!.name! };
    const status = {
      phase: 'Bound',
      assignedPod: 'agent-0',
      nodeName: 'node-1',
      sandboxID: 'x',
      endpoints: ['1.2.3.4:80'],
    };
    const updated = (await k.patchCustomStatus(ref, status)) as Sandbox;
    expect(updated.status).toEqual(status);
    expect(updated.spec).toEqual(created.spec);
    const r = await refusal(() => k.patchCustomStatus(ref, { phase: 'Sleeping' }), 'an unknown phase');
    expect(r.code).toBe(422);
    expect(r.message).toContain('Unsupported value: "Sleeping"');
  });

  it.each([
    [{ poolRef: 'p' }, 'spec.image: Required value'],
    [{ image: '', poolRef: 'p' }, 'spec.image'],
    [{ image: 'i' }, 'spec.poolRef: Required value'],
    [{ ...validSandbox, exposedPorts: [0] }, 'should be greater than or equal to 1'],
    [{ ...validSandbox, exposedPorts: [65536] }, 'should be less than or equal to 65535'],
    [{ ...validSandbox, exposedPorts: [-80] }, 'spec.exposedPorts[0]'],
    [{ ...validSandbox, exposedPorts: [8080, 9090, 8080] }, 'spec.exposedPorts[2]: Duplicate value: 8080'],
    [{ ...validSandbox, failurePolicy: 'Retry' }, 'spec.failurePolicy: Unsupported value: "Retry"'],
    [{ ...validSandbox, recoveryTimeoutSeconds: 0 }, 'spec.recoveryTimeoutSeconds'],
    [{ ...validSandbox, expireTime: 'tomorrow' }, 'spec.expireTime'],
    [{ ...validSandbox, envs: [{ value: 'x' }] }, 'spec.envs[0].name: Required value'],
    // valueFrom: a Secret's or ConfigMap's key; what a sandbox cannot have is refused, never dropped.
    [
      { ...validSandbox, envs: [{ name: 'A', valueFrom: { fieldRef: { fieldPath: 'metadata.name' } } }] },
      'valueFrom: only secretKeyRef and configMapKeyRef are supported',
    ],
    [
      { ...validSandbox, envs: [{ name: 'A', valueFrom: { resourceFieldRef: { resource: 'limits.cpu' } } }] },
      'valueFrom: only secretKeyRef and configMapKeyRef are supported',
    ],
    [
      { ...validSandbox, envs: [{ name: 'A', valueFrom: {} }] },
      'valueFrom must set exactly one of secretKeyRef or configMapKeyRef',
    ],
    [
      {
        ...validSandbox,
        envs: [
          {
            name: 'A',
            valueFrom: { secretKeyRef: { name: 's', key: 'k' }, configMapKeyRef: { name: 'c', key: 'k' } },
          },
        ],
      },
      'valueFrom must set exactly one of secretKeyRef or configMapKeyRef',
    ],
    [
      { ...validSandbox, envs: [{ name: 'A', value: 'x', valueFrom: { secretKeyRef: { name: 's', key: 'k' } } }] },
      'valueFrom may not be specified when value is not empty',
    ],
    [
      { ...validSandbox, envs: [{ name: 'A', valueFrom: { secretKeyRef: { name: 's' } } }] },
      'secretKeyRef.key: Required value',
    ],
  ])('%j is refused: %s', async (spec, expected) => {
    const r = await refusal(() => k.create(sandbox(spec)), JSON.stringify(spec));
    expect(r.code).toBe(422);
    expect(r.message).toContain(expected);
  });
});

describe('SandboxPool validation', () => {
  it('accepts a valid SandboxPool and applies the default maxSandboxesPerPod', async () => {
    const created = await k.create<SandboxPool>(pool({ ...validPool, runtimeType: 'container' }));
    expect(created.spec.maxSandboxesPerPod).toBe(5);
    expect(created.spec.agentTemplate).toEqual(validPool.agentTemplate);
  });

  it.each([
    [{ agentTemplate: {} }, 'spec.capacity: Required value'],
    [{ capacity: validPool.capacity }, 'spec.agentTemplate: Required value'],
    [{ ...validPool, capacity: { ...validPool.capacity, poolMin: 4 } }, 'poolMin must not exceed poolMax'],
    [{ ...validPool, capacity: { ...validPool.capacity, bufferMin: 3 } }, 'bufferMin must not exceed bufferMax'],
    [{ ...validPool, maxSandboxesPerPod: 0 }, 'spec.maxSandboxesPerPod'],
    [{ ...validPool, runtimeType: 'kvm' }, 'spec.runtimeType: Unsupported value: "kvm"'],
  ])('%j is refused: %s', async (spec, expected) => {
    const r = await refusal(() => k.create(pool(spec)), JSON.stringify(spec));
    expect(r.code).toBe(422);
    expect(r.message).toContain(expected);
  });
});

describe('served CRDs', () => {
  it.each([
    [SandboxKind, ['Phase', 'Pool', 'Image', 'Agent', 'Node', 'Runtime', 'Endpoints', 'Expires', 'Age'], ['sb']],
    [SandboxPoolKind, ['Min', 'Max', 'Per-Pod', 'Pods', 'Agents', 'Runtime', 'Egress', 'Age'], ['sbpool']],
  ])('$kind has its printer columns, short names and status subresource', async (kind, columns, shortNames) => {
    const crd = await k.apiextensions.readCustomResourceDefinition({ name: `${kind.plural}.${kind.group}` });
    const version = crd.spec.versions.find((v) => v.name === 'v1alpha1')!;
    expect(version.additionalPrinterColumns?.map((c) => c.name)).toEqual(columns);
    expect(version.subresources?.status).toEqual({});
    expect(crd.spec.names.shortNames).toEqual(shortNames);
  });
});
