import { describe, expect, it } from 'vitest';
import { containerSpec, type ContainerSpecInput } from '../../src/agent/containerd/oci-spec.js';
import { defaultSeccompProfile } from '../../src/agent/containerd/seccomp.js';

/**
 * What a sandbox's container is made with, whole, for representative inputs: a sandbox's spec
 * never changes unnoticed (where the defaults come from may change; the spec may not, silently).
 * The seccomp profile has its own test (containerd-seccomp); here it is checked to be the one
 * for the spec's capabilities and written as a marker. gVisor (runsc) takes the same spec: the
 * runtime binary is the shim's option, not the spec's. The root filesystem is never read-only.
 */
const image = { Entrypoint: ['/bin/sh', '-c'], Cmd: ['echo hi'], Env: ['A=image'], WorkingDir: '/app', User: '1000' };

/** As the agent (src/agent/containerd/runtime.ts specFor) gives it. */
const agentInput: ContainerSpecInput = {
  image,
  request: { env: { B: 'req' } },
  extraEnv: { SANDBOX_ID: 'sb1', SANDBOX_PORTS: '8080', SANDBOX_HOST: '0.0.0.0' },
  init: { source: '/cache/sandbox-init', path: '/.fast-sandbox/init' },
  hostname: 'sb1',
  netnsPath: '/var/run/netns/sb1',
  cgroupsPath: '/fast-sandbox/sb1',
  limits: { milliCpu: 500, memoryBytes: 256 * 2 ** 20, pids: 1024 },
  binds: [{ source: '/run/agent/resolv.conf', destination: '/etc/resolv.conf' }],
  arch: 'x64',
  kernelRelease: '6.8.0-45-generic',
  annotations: { 'io.containerd.runc.v2.group': 'fast-sandbox/ns/agent/uid' },
};

const cases: [string, ContainerSpecInput][] = [
  ['default-pool', agentInput],
  [
    'warm-arm64',
    {
      ...agentInput,
      request: {},
      extraEnv: {},
      init: { ...agentInput.init!, warm: true },
      hostname: 'warm-1',
      limits: { pids: 1024 },
      arch: 'arm64',
      kernelRelease: '4.4.0',
    },
  ],
  [
    'with-capabilities',
    { ...agentInput, capabilities: ['CAP_DAC_OVERRIDE', 'CAP_NET_RAW', 'CAP_SYS_ADMIN', 'CAP_SYS_PTRACE'] },
  ],
  [
    'bare-no-capabilities',
    {
      image: { Cmd: ['/app'] },
      request: {},
      extraEnv: {},
      hostname: 'bare',
      cgroupsPath: '/fast-sandbox/bare',
      limits: {},
      capabilities: [],
      arch: 'x64',
    },
  ],
];

describe('the container spec, whole', () => {
  it.each(cases)('%s', async (name, input) => {
    const spec = containerSpec(input) as Record<string, unknown> & {
      process: { capabilities: { bounding: string[] } };
      linux: Record<string, unknown>;
    };
    expect(spec.linux.seccomp).toEqual(
      defaultSeccompProfile(spec.process.capabilities.bounding, input.arch, input.kernelRelease),
    );
    const shown = {
      ...spec,
      linux: { ...spec.linux, seccomp: 'defaultSeccompProfile(bounding, arch, kernelRelease)' },
    };
    await expect(`${JSON.stringify(shown, null, 2)}\n`).toMatchFileSnapshot(
      `__snapshots__/containerd-oci-spec/${name}.json`,
    );
  });
});
