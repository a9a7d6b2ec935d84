import { Value } from '@sinclair/typebox/value';
import { describe, expect, it } from 'vitest';
import { sandboxPoolCapabilitiesRefusal, type AdmissionRequest } from '../../src/admission/review.js';
import { SandboxPoolSpec } from '../../src/api/sandbox.js';
import {
  CAPABILITY_NAMES,
  DEFAULT_CAPABILITY_NAMES,
  addedBeyondDefault,
  capabilitiesRefusal,
  parseAllowedCapabilities,
  parseCapabilityList,
  sandboxCapabilities,
} from '../../src/domain/sandbox-capabilities.js';
import { agentPod } from '../../src/domain/sandbox-pool.js';
import { ProcessRuntime } from '../../src/agent/process-runtime.js';
import '../support/typebox.js';

const DEFAULT = [
  'CHOWN',
  'DAC_OVERRIDE',
  'FOWNER',
  'FSETID',
  'KILL',
  'SETGID',
  'SETUID',
  'SETPCAP',
  'NET_BIND_SERVICE',
];

describe("a pool's sandbox capabilities", () => {
  it("default: containerd's set less NET_RAW, MKNOD, SETFCAP, SYS_CHROOT and AUDIT_WRITE, in kernel order", () => {
    expect([...DEFAULT_CAPABILITY_NAMES].sort()).toEqual([...DEFAULT].sort());
    expect(sandboxCapabilities(undefined)).toEqual(CAPABILITY_NAMES.filter((n) => DEFAULT.includes(n)));
    expect(sandboxCapabilities({})).toEqual(sandboxCapabilities(undefined));
  });

  it("restricted (Kubernetes' restricted Pod Security Standard): drop ALL, add at most NET_BIND_SERVICE", () => {
    expect(sandboxCapabilities({ drop: ['ALL'] })).toEqual([]);
    expect(sandboxCapabilities({ drop: ['ALL'], add: ['NET_BIND_SERVICE'] })).toEqual(['NET_BIND_SERVICE']);
  });

  it('add opts back in; drop removes; a name in both is dropped (as containerd applies a securityContext)', () => {
    expect(sandboxCapabilities({ add: ['NET_RAW', 'SYS_PTRACE'] })).toEqual(
      CAPABILITY_NAMES.filter((n) => [...DEFAULT, 'NET_RAW', 'SYS_PTRACE'].includes(n)),
    );
    expect(sandboxCapabilities({ drop: ['KILL', 'SETUID'] })).not.toEqual(expect.arrayContaining(['KILL']));
    expect(sandboxCapabilities({ add: ['NET_RAW'], drop: ['NET_RAW'] })).not.toContain('NET_RAW');
    expect(addedBeyondDefault({ add: ['NET_RAW', 'CHOWN'], drop: ['ALL'] })).toEqual(['NET_RAW']);
    expect(addedBeyondDefault({ drop: ['ALL'], add: ['NET_BIND_SERVICE'] })).toEqual([]);
  });

  it('refuses unknown names, CAP_-prefixed ones, and ALL in add, naming each', () => {
    const r = sandboxCapabilities({ add: ['NET_RAWR', 'CAP_NET_RAW', 'ALL'], drop: ['ALL', 'KIL'] });
    expect(r).toEqual({
      error: expect.stringContaining('add: "NET_RAWR", add: "CAP_NET_RAW", add: "ALL", drop: "KIL"'),
    });
    expect(parseCapabilityList(' NET_RAW, ,SYS_PTRACE ')).toEqual(['NET_RAW', 'SYS_PTRACE']);
    expect(parseCapabilityList(undefined)).toEqual([]);
  });

  it('the CRD schema admits known names only, and ALL only in drop', () => {
    const spec = (capabilities: unknown) => ({
      capacity: { poolMin: 0, poolMax: 1, bufferMin: 0, bufferMax: 0 },
      agentTemplate: {},
      sandboxSecurityContext: { capabilities },
    });
    expect(Value.Check(SandboxPoolSpec, spec({ drop: ['ALL'], add: ['NET_BIND_SERVICE'] }))).toBe(true);
    expect(Value.Check(SandboxPoolSpec, spec({ add: ['NET_RAWR'] }))).toBe(false);
    expect(Value.Check(SandboxPoolSpec, spec({ add: ['ALL'] }))).toBe(false);
    expect(Value.Check(SandboxPoolSpec, spec({ add: ['CAP_NET_RAW'] }))).toBe(false);
  });
});

describe('the operator allows capabilities beyond the default set per namespace', () => {
  const allowed = parseAllowedCapabilities('{"NET_RAW": ["net-tools"], "SYS_PTRACE": ["*"]}');

  it('admits what is allowed for the namespace (or "*"), and anything within the default set', () => {
    expect(capabilitiesRefusal('net-tools', { add: ['NET_RAW', 'SYS_PTRACE'] }, allowed)).toBeUndefined();
    expect(capabilitiesRefusal('anyone', { add: ['SYS_PTRACE'] }, allowed)).toBeUndefined();
    expect(capabilitiesRefusal('anyone', { drop: ['ALL'], add: ['NET_BIND_SERVICE', 'KILL'] }, {})).toBeUndefined();
    expect(capabilitiesRefusal('anyone', undefined, {})).toBeUndefined();
  });

  it('refuses the rest, naming the capabilities, the namespace and the setting that would allow them', () => {
    expect(capabilitiesRefusal('team-a', { add: ['NET_RAW', 'SYS_ADMIN', 'SYS_PTRACE'] }, allowed)).toBe(
      "spec.sandboxSecurityContext.capabilities adds NET_RAW, SYS_ADMIN, beyond the sandboxes' default set " +
        '(CHOWN, DAC_OVERRIDE, FSETID, FOWNER, SETGID, SETUID, SETPCAP, NET_BIND_SERVICE, KILL), and the operator has not ' +
        'allowed them in namespace "team-a": an administrator lists the namespace under NET_RAW, SYS_ADMIN in the ' +
        'setting admission.sandboxCapabilities (DO_ADMISSION_SANDBOX_CAPABILITIES) of the admission webhook',
    );
    expect(capabilitiesRefusal('team-a', { add: ['NET_RAWR'] }, allowed)).toContain('unknown capabilities');
  });

  it('reviews SandboxPools only', () => {
    const request = (kind: string, namespace: string): AdmissionRequest => ({
      uid: 'u',
      kind: { group: 'sandbox.fast.io', version: 'v1alpha1', kind },
      namespace,
      operation: 'CREATE',
      userInfo: {},
      object: { spec: { sandboxSecurityContext: { capabilities: { add: ['NET_RAW'] } } } },
    });
    expect(sandboxPoolCapabilitiesRefusal(request('SandboxPool', 'team-a'), allowed)).toContain('NET_RAW');
    expect(sandboxPoolCapabilitiesRefusal(request('SandboxPool', 'net-tools'), allowed)).toBeUndefined();
    expect(sandboxPoolCapabilitiesRefusal(request('Sandbox', 'team-a'), allowed)).toBeUndefined();
  });

  it('checks the setting: JSON, known capabilities, namespace names or "*"', () => {
    expect(parseAllowedCapabilities(undefined)).toEqual({});
    expect(parseAllowedCapabilities('')).toEqual({});
    expect(() => parseAllowedCapabilities('NET_RAW=a')).toThrow(/not JSON/);
    expect(() => parseAllowedCapabilities('["NET_RAW"]')).toThrow(/must be an object/);
    expect(() => parseAllowedCapabilities('{"CAP_NET_RAW": ["a"]}')).toThrow(/"CAP_NET_RAW" is not a capability/);
    expect(() => parseAllowedCapabilities('{"NET_RAW": "a"}')).toThrow(/NET_RAW must list namespace names/);
    expect(() => parseAllowedCapabilities('{"NET_RAW": ["Team_A"]}')).toThrow(/NET_RAW must list namespace names/);
  });
});

describe('agent Pods carry the pool’s capabilities', () => {
  const envOf = (
    capabilities?: { add?: string[]; drop?: string[] },
    templateEnv: { name: string; value: string }[] = [],
  ) => {
    const pod = agentPod({
      namespace: 'ns',
      pool: 'p',
      poolUid: 'uid',
      name: 'p-agent-0',
      perPod: 4,
      template: { spec: { containers: [{ name: 'agent', image: 'a', env: templateEnv }] } },
      ...(capabilities ? { runtime: { sandboxSecurityContext: { capabilities } } } : {}),
    }) as { spec: { containers: { env: { name: string; value?: string }[] }[] } };
    return pod.spec.containers[0]!.env.filter((e) => e.name.startsWith('SANDBOX_CAPABILITIES_'));
  };

  it('as SANDBOX_CAPABILITIES_ADD and _DROP, which the agent reads (--capabilities-add/--capabilities-drop)', () => {
    expect(envOf({ add: ['NET_RAW', 'SYS_PTRACE'], drop: ['ALL'] })).toEqual([
      { name: 'SANDBOX_CAPABILITIES_ADD', value: 'NET_RAW,SYS_PTRACE' },
      { name: 'SANDBOX_CAPABILITIES_DROP', value: 'ALL' },
    ]);
  });

  it('always set, empty when the pool says nothing: the template cannot add capabilities admission never saw', () => {
    expect(envOf(undefined, [{ name: 'SANDBOX_CAPABILITIES_ADD', value: 'SYS_ADMIN' }])).toEqual([
      { name: 'SANDBOX_CAPABILITIES_ADD', value: '' },
      { name: 'SANDBOX_CAPABILITIES_DROP', value: '' },
    ]);
  });
});

describe('the process runtime', () => {
  it('sets no capabilities, so it refuses the creates of a pool that asks for some (never silently ignored)', () => {
    expect(new ProcessRuntime({ capabilities: { add: [], drop: [] } }).unsupported).toBeUndefined();
    expect(new ProcessRuntime({ capabilities: { add: ['NET_RAW'], drop: [] } }).unsupported).toContain(
      "the pool's sandboxSecurityContext.capabilities need the containerd runtime",
    );
    expect(new ProcessRuntime({ capabilities: { drop: ['ALL'] } }).unsupported).toBeDefined();
  });
});
