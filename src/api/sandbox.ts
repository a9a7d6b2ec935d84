/**
 * Sandbox and SandboxPool (`sandbox.fast.io/v1alpha1`, namespaced): the record of the sandbox
 * fast path. Same group, version, fields, defaults and phases as the original fast-sandbox
 * (fengcone/fast-sandbox, v1alpha1), so its manifests apply unchanged; unlike the original, bad
 * specs (no image, a port outside 1–65535, a port twice, an unknown failurePolicy) are refused by
 * the apiserver itself.
 */
import { Type, type Static } from '@sinclair/typebox';
import type { KubernetesObject } from '@kubernetes/client-node';
import { EGRESS_POLICIES } from '../domain/sandbox-network.js';
import { Conditions, ObjectName, StringEnum, Timestamp, withCel } from './schema.js';
import { defineKind } from './kind.js';
import { ALL, CAPABILITY_NAMES } from './capabilities.js';

export const SANDBOX_GROUP = 'sandbox.fast.io';

/** Set on every Sandbox; removed once the agent no longer runs it and the allocation is released. */
export const SANDBOX_FINALIZER = 'sandbox.fast.io/cleanup';
/** JSON {@link SandboxAllocation}: where the fast path placed the sandbox, until it moves to status. */
export const ALLOCATION_ANNOTATION = 'sandbox.fast.io/allocation';
/** When the fast path created the sandbox (Unix nanoseconds, as the original writes it). */
export const CREATE_TIMESTAMP_ANNOTATION = 'sandbox.fast.io/createTimestamp';
/** Who created the sandbox, e.g. `fastpath-fast`. */
export const CREATED_BY_LABEL = 'sandbox.fast.io/created-by';
/** Agent Pods carry `app=sandbox-agent` and `fast-sandbox.io/pool=<pool>`. */
export const AGENT_APP_LABEL = 'app';
export const AGENT_APP_VALUE = 'sandbox-agent';
export const AGENT_POOL_LABEL = 'fast-sandbox.io/pool';

/** The value of the allocation annotation (JSON). `allocatedAt` is RFC 3339 (nanoseconds allowed). */
export interface SandboxAllocation {
  assignedPod: string;
  assignedNode: string;
  allocatedAt: string;
}

/** The annotation value for an allocation, with the keys in the original's order. */
export function formatAllocation(a: SandboxAllocation): string {
  return JSON.stringify({ assignedPod: a.assignedPod, assignedNode: a.assignedNode, allocatedAt: a.allocatedAt });
}

/**
 * The allocation an object's annotations carry: undefined when there is none, an Error when the
 * annotation is there but malformed (not JSON, not an object, assignedPod missing or not a string).
 */
export function parseAllocation(
  annotations: Record<string, string> | undefined,
): SandboxAllocation | undefined | Error {
  const raw = annotations?.[ALLOCATION_ANNOTATION];
  if (raw === undefined || raw === '') return undefined;
  let value: unknown;
  try {
    value = JSON.parse(raw);
  } catch {
    return new Error(`${ALLOCATION_ANNOTATION} is not JSON: ${raw.slice(0, 200)}`);
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value))
    return new Error(`${ALLOCATION_ANNOTATION} is not a JSON object: ${raw.slice(0, 200)}`);
  const v = value as Record<string, unknown>;
  for (const key of ['assignedPod', 'assignedNode', 'allocatedAt'] as const)
    if (v[key] !== undefined && typeof v[key] !== 'string')
      return new Error(`${ALLOCATION_ANNOTATION}: ${key} is not a string`);
  if (!v.assignedPod) return new Error(`${ALLOCATION_ANNOTATION}: assignedPod is missing`);
  return {
    assignedPod: v.assignedPod as string,
    assignedNode: (v.assignedNode as string | undefined) ?? '',
    allocatedAt: (v.allocatedAt as string | undefined) ?? '',
  };
}

export const FAILURE_POLICIES = ['Manual', 'AutoRecreate'] as const;
export type FailurePolicy = (typeof FAILURE_POLICIES)[number];

/**
 * Pending: placed on an agent (or waiting for one), not created there yet. Bound: the agent was
 * asked to create it. Running: the agent runs it. Terminating: being deleted on the agent.
 * Expired: past spec.expireTime, runtime removed, record kept. Failed: creation or the process
 * failed. Lost: the agent went away under failurePolicy Manual.
 */
export const SANDBOX_PHASES = ['Pending', 'Bound', 'Running', 'Terminating', 'Expired', 'Failed', 'Lost'] as const;
export type SandboxPhase = (typeof SANDBOX_PHASES)[number];

export const RUNTIME_TYPES = ['container', 'gvisor'] as const;

/** An IPv4 address or CIDR, checked by the apiserver's CEL IP library. */
const Ipv4Cidr = (opts: { description: string }) =>
  withCel(Type.String({ maxLength: 18, ...opts }), [
    {
      rule: 'isCIDR(self) ? cidr(self).ip().family() == 4 : (isIP(self) && ip(self).family() == 4)',
      message: 'must be an IPv4 address or CIDR',
    },
  ]);
export type RuntimeType = (typeof RUNTIME_TYPES)[number];

const int32 = { format: 'int32' } as const;

/** A key of a Secret or ConfigMap in the Sandbox's namespace (corev1.SecretKeySelector / ConfigMapKeySelector). */
const KeySelector = (kind: 'Secret' | 'ConfigMap') =>
  Type.Object({
    name: ObjectName({ description: `Name of the ${kind}, in the Sandbox's namespace.` }),
    key: Type.String({
      minLength: 1,
      maxLength: 253,
      description: `The key of the ${kind} whose value the variable gets.`,
    }),
    optional: Type.Optional(
      Type.Boolean({
        description: `true: leave the variable out when the ${kind} or its key does not exist (as for a Pod); otherwise the sandbox is not created (Ready=False CreateContainerConfigError) until it does.`,
      }),
    ),
  });

const Unsupported = (why: string) =>
  Type.Optional(
    Type.Object({}, { 'x-kubernetes-preserve-unknown-fields': true, description: `Not supported (refused): ${why}.` }),
  );

/**
 * corev1.EnvVar. `valueFrom.secretKeyRef` and `configMapKeyRef` are read when the sandbox is
 * created on its agent — by the fast path, in the Sandbox's namespace; the value goes to the agent
 * only, never into workflow history or the Sandbox's status. The admission webhook admits a
 * Sandbox naming one only if its creator may `get` it. The other sources of a Pod's env are
 * refused with their reason (the original accepted `valueFrom` and silently dropped it).
 */
export const EnvVar = withCel(
  Type.Object({
    name: Type.String({ minLength: 1, description: 'Name of the environment variable.' }),
    value: Type.Optional(Type.String()),
    valueFrom: Type.Optional(
      withCel(
        Type.Object(
          {
            secretKeyRef: Type.Optional(KeySelector('Secret')),
            configMapKeyRef: Type.Optional(KeySelector('ConfigMap')),
            fieldRef: Unsupported('a sandbox is not a Pod, it has no Pod fields'),
            resourceFieldRef: Unsupported('a sandbox has no container resources of its own to refer to'),
            fileKeyRef: Unsupported('a sandbox has no volumes'),
          },
          { description: 'corev1.EnvVarSource: secretKeyRef or configMapKeyRef.' },
        ),
        [
          {
            rule: '!has(self.fieldRef) && !has(self.resourceFieldRef) && !has(self.fileKeyRef)',
            message:
              'valueFrom: only secretKeyRef and configMapKeyRef are supported (a sandbox is not a Pod: no Pod fields, container resources or volumes to refer to)',
          },
          {
            rule: 'has(self.secretKeyRef) != has(self.configMapKeyRef)',
            message: 'valueFrom must set exactly one of secretKeyRef or configMapKeyRef',
          },
        ],
      ),
    ),
  }),
  [
    {
      rule: '!has(self.valueFrom) || !has(self.value) || size(self.value) == 0',
      message: 'valueFrom may not be specified when value is not empty',
    },
  ],
);

export const Port = Type.Integer({
  ...int32,
  minimum: 1,
  maximum: 65535,
  description: 'A TCP port the sandbox listens on (1–65535).',
});

export const SandboxSpec = Type.Object({
  image: Type.String({ minLength: 1, description: 'Image the sandbox runs. Required.' }),
  poolRef: ObjectName({ description: 'Name of the SandboxPool (same namespace) the sandbox is placed in. Required.' }),
  command: Type.Optional(Type.Array(Type.String())),
  args: Type.Optional(Type.Array(Type.String())),
  envs: Type.Optional(Type.Array(EnvVar)),
  workingDir: Type.Optional(Type.String()),
  expireTime: Type.Optional(
    Timestamp({ description: 'When the sandbox expires: its runtime is removed and the object kept, phase Expired.' }),
  ),
  exposedPorts: Type.Optional(
    Type.Array(Port, {
      'x-kubernetes-list-type': 'set',
      maxItems: 64,
      description: 'Ports the sandbox listens on, each at most once; never two sandboxes with one port on one agent.',
    }),
  ),
  failurePolicy: Type.Optional(
    StringEnum(FAILURE_POLICIES, {
      default: 'Manual',
      description: 'When the agent is lost: Manual → phase Lost; AutoRecreate → rescheduled.',
    }),
  ),
  recoveryTimeoutSeconds: Type.Optional(
    Type.Integer({
      ...int32,
      minimum: 1,
      default: 60,
      description: 'How long to wait after losing the agent before acting.',
    }),
  ),
  resetRevision: Type.Optional(
    Timestamp({ description: 'Raise it above status.acceptedResetRevision to restart the sandbox on a fresh slot.' }),
  ),
});

export const SandboxStatus = Type.Object({
  phase: Type.Optional(StringEnum(SANDBOX_PHASES)),
  assignedPod: Type.Optional(Type.String({ description: 'The agent Pod the sandbox is placed on.' })),
  nodeName: Type.Optional(Type.String()),
  sandboxID: Type.Optional(Type.String({ description: 'The sandbox’s ID on the agent.' })),
  runtime: Type.Optional(
    Type.String({
      description:
        'Extension: what runs the sandbox on its agent — containerd/runc, containerd/gvisor, or process (not isolated).',
    }),
  ),
  endpoints: Type.Optional(Type.Array(Type.String(), { description: 'IP:port for each exposed port.' })),
  conditions: Type.Optional(Conditions),
  acceptedResetRevision: Type.Optional(Timestamp({ description: 'The last spec.resetRevision acted upon.' })),
});

export type EnvVar = Static<typeof EnvVar>;
export type SandboxSpec = Static<typeof SandboxSpec>;
export type SandboxStatus = Static<typeof SandboxStatus>;

export interface Sandbox extends KubernetesObject {
  apiVersion: 'sandbox.fast.io/v1alpha1';
  kind: 'Sandbox';
  spec: SandboxSpec;
  status?: SandboxStatus;
}

export const SandboxKind = defineKind({
  group: SANDBOX_GROUP,
  version: 'v1alpha1',
  kind: 'Sandbox',
  plural: 'sandboxes',
  singular: 'sandbox',
  shortNames: ['sb'],
  scope: 'Namespaced',
  description:
    'A sandbox placed directly on a warm agent Pod of a SandboxPool by the fast path (or by its workflow ' +
    'when created with kubectl). The object is the record of the sandbox; deleting it removes it from the agent.',
  spec: SandboxSpec,
  status: SandboxStatus,
  printerColumns: [
    { name: 'Phase', type: 'string', jsonPath: '.status.phase' },
    { name: 'Pool', type: 'string', jsonPath: '.spec.poolRef' },
    { name: 'Image', type: 'string', jsonPath: '.spec.image' },
    { name: 'Agent', type: 'string', jsonPath: '.status.assignedPod' },
    { name: 'Node', type: 'string', jsonPath: '.status.nodeName', priority: 1 },
    { name: 'Runtime', type: 'string', jsonPath: '.status.runtime', priority: 1 },
    { name: 'Endpoints', type: 'string', jsonPath: '.status.endpoints', priority: 1 },
    { name: 'Expires', type: 'date', jsonPath: '.spec.expireTime', priority: 1 },
  ],
});

export const PoolCapacity = withCel(
  Type.Object({
    poolMin: Type.Integer({ ...int32, minimum: 0, description: 'Fewest agent Pods.' }),
    poolMax: Type.Integer({ ...int32, minimum: 0, description: 'Most agent Pods.' }),
    bufferMin: Type.Integer({ ...int32, minimum: 0, description: 'Free sandbox slots to keep ready.' }),
    bufferMax: Type.Integer({ ...int32, minimum: 0, description: 'Most free sandbox slots to keep.' }),
    scaleToZeroAfterSeconds: Type.Optional(
      Type.Integer({
        ...int32,
        minimum: 0,
        description:
          'Scale from zero (extension): a pool whose load needs no agent (poolMin 0, bufferMin 0) keeps one this long after its last demand (a sandbox, a pending Sandbox, a create that found no ready agent), then scales to zero. Default 300.',
      }),
    ),
  }),
  [
    { rule: 'self.poolMin <= self.poolMax', message: 'poolMin must not exceed poolMax' },
    { rule: 'self.bufferMin <= self.bufferMax', message: 'bufferMin must not exceed bufferMax' },
  ],
);

export const SandboxPoolSpec = Type.Object({
  capacity: PoolCapacity,
  maxSandboxesPerPod: Type.Optional(
    Type.Integer({ ...int32, minimum: 1, default: 5, description: 'Sandboxes one agent Pod holds at most.' }),
  ),
  runtimeType: Type.Optional(
    StringEnum(RUNTIME_TYPES, {
      description: 'How sandboxes are isolated: container (runc) or gvisor (runsc). Default container.',
    }),
  ),
  sandboxResources: Type.Optional(
    Type.Object(
      {
        cpu: Type.Optional(Type.String({ maxLength: 32, description: 'CPU limit, a quantity (500m, 2).' })),
        memory: Type.Optional(Type.String({ maxLength: 32, description: 'Memory limit, a quantity (256Mi).' })),
        pids: Type.Optional(Type.Integer({ ...int32, minimum: 1, description: 'Most processes at once.' })),
        ephemeralStorage: Type.Optional(
          Type.String({
            maxLength: 32,
            pattern: '^[0-9]+(\\.[0-9]+)?(Ki|Mi|Gi|Ti|Pi|k|M|G|T|P)?$',
            description:
              "Most a sandbox's writable layer may take, a quantity (10Gi); past it the agent kills the sandbox (EphemeralStorageExceeded).",
          }),
        ),
      },
      {
        description:
          "Extension: the limits of sandboxes that set none (default: cpu 1, memory 512Mi, pids 1024), and of every sandbox's writable layer (default ephemeralStorage 10Gi).",
      },
    ),
  ),
  sandboxSecurityContext: Type.Optional(
    Type.Object(
      {
        capabilities: Type.Optional(
          Type.Object(
            {
              add: Type.Optional(
                Type.Array(StringEnum(CAPABILITY_NAMES), {
                  'x-kubernetes-list-type': 'set',
                  maxItems: CAPABILITY_NAMES.length,
                  description:
                    'Capabilities added to the default set (names without CAP_). One beyond the default set is admitted only in namespaces the operator allowed it for.',
                }),
              ),
              drop: Type.Optional(
                Type.Array(StringEnum([ALL, ...CAPABILITY_NAMES]), {
                  'x-kubernetes-list-type': 'set',
                  maxItems: CAPABILITY_NAMES.length + 1,
                  description: `Capabilities removed from the default set; ${ALL} removes every one before the adds.`,
                }),
              ),
            },
            {
              description:
                "The sandboxes' Linux capabilities, as a container's securityContext.capabilities: drop (ALL: every one), then add. Default: CHOWN, DAC_OVERRIDE, FSETID, FOWNER, SETGID, SETUID, SETPCAP, NET_BIND_SERVICE, KILL. Kubernetes' restricted profile: drop [ALL], add at most [NET_BIND_SERVICE].",
            },
          ),
        ),
      },
      { description: "Extension: the security settings of the pool's sandboxes (containerd runtime)." },
    ),
  ),
  imagePullSecrets: Type.Optional(
    Type.Array(Type.Object({ name: Type.String({ minLength: 1, maxLength: 253 }) }), {
      maxItems: 16,
      description:
        "Extension: Secrets (kubernetes.io/dockerconfigjson) in the pool's namespace with the registry credentials sandbox images are pulled with; mounted into the agent Pods.",
    }),
  ),
  warmImages: Type.Optional(
    Type.Array(
      Type.Object({
        image: Type.String({ minLength: 1, maxLength: 512 }),
        count: Type.Integer({ ...int32, minimum: 0, maximum: 64, description: 'Warm containers per agent.' }),
      }),
      {
        maxItems: 16,
        description:
          'Extension: images each agent keeps warm containers of, so a create of them pays no container start.',
      },
    ),
  ),
  egress: Type.Optional(
    Type.Object(
      {
        policy: Type.Optional(
          StringEnum(EGRESS_POLICIES, {
            default: 'internet',
            description:
              'internet: public addresses only (never link-local such as the metadata endpoint, private, loopback, ' +
              "the cluster's ranges or the node); none: nothing but the allow-list and dnsServers.",
          }),
        ),
        allow: Type.Optional(
          Type.Array(
            Type.Object({
              cidr: Ipv4Cidr({ description: 'An IPv4 address or CIDR the sandboxes may reach, whatever the policy.' }),
              ports: Type.Optional(
                Type.Array(Type.Integer({ minimum: 1, maximum: 65535 }), {
                  maxItems: 32,
                  description: 'TCP/UDP ports; none means every port.',
                }),
              ),
            }),
            { maxItems: 64 },
          ),
        ),
        dnsServers: Type.Optional(
          Type.Array(Ipv4Cidr({ description: 'An IPv4 address.' }), {
            maxItems: 3,
            description: "The sandboxes' resolvers, reachable on port 53 (default under internet: the agent's own).",
          }),
        ),
      },
      {
        default: { policy: 'internet' },
        description:
          "Extension: what the pool's sandboxes may reach. Each sandbox has a network namespace of its own; its agent, " +
          'other sandboxes and the node are never reachable. Applies to agent Pods created after a change.',
      },
    ),
  ),
  agentTemplate: Type.Object(
    {
      metadata: Type.Optional(Type.Object({}, { 'x-kubernetes-preserve-unknown-fields': true })),
      spec: Type.Optional(Type.Object({}, { 'x-kubernetes-preserve-unknown-fields': true })),
    },
    { description: 'corev1.PodTemplateSpec of the agent Pods.' },
  ),
});

export const SandboxPoolStatus = Type.Object({
  observedGeneration: Type.Optional(Type.Integer({ minimum: 0 })),
  currentPods: Type.Optional(Type.Integer({ ...int32, minimum: 0 })),
  readyPods: Type.Optional(Type.Integer({ ...int32, minimum: 0 })),
  totalAgents: Type.Optional(Type.Integer({ ...int32, minimum: 0 })),
  idleAgents: Type.Optional(Type.Integer({ ...int32, minimum: 0 })),
  busyAgents: Type.Optional(Type.Integer({ ...int32, minimum: 0 })),
  conditions: Type.Optional(Conditions),
});

export type PoolCapacity = Static<typeof PoolCapacity>;
export type SandboxPoolSpec = Static<typeof SandboxPoolSpec>;
export type SandboxPoolStatus = Static<typeof SandboxPoolStatus>;

export interface SandboxPool extends KubernetesObject {
  apiVersion: 'sandbox.fast.io/v1alpha1';
  kind: 'SandboxPool';
  spec: SandboxPoolSpec;
  status?: SandboxPoolStatus;
}

export const SandboxPoolKind = defineKind({
  group: SANDBOX_GROUP,
  version: 'v1alpha1',
  kind: 'SandboxPool',
  plural: 'sandboxpools',
  singular: 'sandboxpool',
  shortNames: ['sbpool'],
  scope: 'Namespaced',
  description:
    'A pool of warm agent Pods (app=sandbox-agent, fast-sandbox.io/pool=<name>) that sandboxes are placed on.',
  spec: SandboxPoolSpec,
  status: SandboxPoolStatus,
  printerColumns: [
    { name: 'Min', type: 'integer', jsonPath: '.spec.capacity.poolMin' },
    { name: 'Max', type: 'integer', jsonPath: '.spec.capacity.poolMax' },
    { name: 'Per-Pod', type: 'integer', jsonPath: '.spec.maxSandboxesPerPod' },
    { name: 'Pods', type: 'integer', jsonPath: '.status.currentPods' },
    { name: 'Agents', type: 'integer', jsonPath: '.status.totalAgents' },
    { name: 'Runtime', type: 'string', jsonPath: '.spec.runtimeType', priority: 1 },
    { name: 'Egress', type: 'string', jsonPath: '.spec.egress.policy', priority: 1 },
  ],
});
