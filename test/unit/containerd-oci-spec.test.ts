import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { chainId } from '../../src/agent/containerd/images.js';
import { cgroupParentOf, containerdRuntime, ephemeralStorageBytes } from '../../src/agent/containerd/setup.js';
import { DEFAULT_CAPABILITY_NAMES, ociCapability } from '../../src/domain/sandbox-capabilities.js';
import {
  CONTAINERD_DEFAULT_CAPABILITIES,
  DEFAULT_CAPABILITIES,
  SANDBOX_OOM_SCORE_ADJ,
  containerSpec,
  parseLimits,
  parseQuantity,
  resolveArgs,
  resolveEnv,
  resolveUser,
  type ContainerSpecInput,
} from '../../src/agent/containerd/oci-spec.js';

const image = { Entrypoint: ['/bin/sh', '-c'], Cmd: ['echo hi'], Env: ['PATH=/bin', 'A=image'], WorkingDir: '/app' };

describe('the process a sandbox runs (Kubernetes rules for command/args)', () => {
  it.each([
    [{}, ['/bin/sh', '-c', 'echo hi']],
    [{ args: ['echo other'] }, ['/bin/sh', '-c', 'echo other']],
    [{ command: ['/bin/sleep'] }, ['/bin/sleep']],
    [{ command: ['/bin/sleep'], args: ['5'] }, ['/bin/sleep', '5']],
  ])('%j → %j', (req, args) => {
    expect(resolveArgs(image, req)).toEqual(args);
  });

  it('env: the image, then the request (which wins), then the sandbox variables; PATH always set', () => {
    expect(resolveEnv(image, { env: { A: 'req', B: 'b' } }, { SANDBOX_ID: 'x' })).toEqual([
      'PATH=/bin',
      'A=req',
      'B=b',
      'SANDBOX_ID=x',
    ]);
    expect(resolveEnv({}, {}, {})).toEqual(['PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin']);
  });

  it.each([
    ['', { uid: 0, gid: 0 }],
    ['1000', { uid: 1000, gid: 1000 }],
    ['1000:50', { uid: 1000, gid: 50 }],
  ])('user %j → %j', (User, want) => {
    expect(resolveUser({ User })).toEqual(want);
  });

  it('a named user is refused with the reason, never run as root instead', () => {
    expect(resolveUser({ User: 'app' })).toEqual({ error: expect.stringContaining(`"app" is not numeric`) });
  });
});

describe('limits from the original cpu/memory strings', () => {
  it.each([
    ['500m', 0.5],
    ['2', 2],
    ['256Mi', 256 * 2 ** 20],
    ['1G', 1e9],
    ['1.5Gi', 1.5 * 2 ** 30],
    ['x', undefined],
    ['-1', undefined],
    ['1Gb', undefined],
  ])('quantity %s → %s', (q, n) => {
    expect(parseQuantity(q)).toBe(n);
  });

  it('parses and bounds each limit, naming what is wrong', () => {
    expect(parseLimits({ cpu: '250m', memory: '64Mi', pids: 100 })).toEqual({
      milliCpu: 250,
      memoryBytes: 64 * 2 ** 20,
      pids: 100,
    });
    expect(parseLimits({ cpu: 'lots' })).toEqual({
      error: expect.stringContaining('cpu "lots" is not a CPU quantity'),
    });
    expect(parseLimits({ memory: '1Ki' })).toEqual({ error: expect.stringContaining('below the smallest limit') });
    expect(parseLimits({ pids: 0 })).toEqual({ error: expect.stringContaining('pids 0') });
  });
});

describe('the container spec is isolated by default', () => {
  const input: ContainerSpecInput = {
    image,
    request: { env: { SECRET: 's' }, workingDir: '/work' },
    extraEnv: { SANDBOX_ID: 'sb1' },
    hostname: 'sb1',
    netnsPath: '/proc/1/ns/net',
    cgroupsPath: '/fast-sandbox/sb1',
    limits: { milliCpu: 500, memoryBytes: 64 * 2 ** 20, pids: 1024 },
    arch: 'x64',
  };
  const spec = containerSpec(input) as {
    process: Record<string, unknown> & { capabilities: Record<string, string[]> };
    linux: Record<string, unknown> & {
      namespaces: { type: string; path?: string }[];
      resources: Record<string, unknown>;
    };
    mounts: { destination: string; type: string; source: string }[];
  };

  it('own pid, ipc, uts and mount namespaces; the agent Pod network namespace joined', () => {
    expect(spec.linux.namespaces).toEqual([
      { type: 'pid' },
      { type: 'ipc' },
      { type: 'uts' },
      { type: 'mount' },
      { type: 'network', path: '/proc/1/ns/net' },
    ]);
  });

  it("containerd's default capabilities less NET_RAW, MKNOD, SETFCAP, SYS_CHROOT and AUDIT_WRITE; no_new_privs; the default seccomp profile", () => {
    // containerd's defaultUnixCaps (pkg/oci/spec.go, unchanged from 1.6 to 2.x) without those five.
    const containerd = [
      ...['CAP_CHOWN', 'CAP_DAC_OVERRIDE', 'CAP_FSETID', 'CAP_FOWNER', 'CAP_MKNOD', 'CAP_NET_RAW', 'CAP_SETGID'],
      ...['CAP_SETUID', 'CAP_SETFCAP', 'CAP_SETPCAP', 'CAP_NET_BIND_SERVICE', 'CAP_SYS_CHROOT', 'CAP_KILL'],
      'CAP_AUDIT_WRITE',
    ];
    const dropped = ['CAP_MKNOD', 'CAP_NET_RAW', 'CAP_SETFCAP', 'CAP_SYS_CHROOT', 'CAP_AUDIT_WRITE'];
    expect([...DEFAULT_CAPABILITIES].sort()).toEqual(containerd.filter((c) => !dropped.includes(c)).sort());
    // The same as the generated data says (oci-defaults.json), in containerd's order; none of the
    // project's names lost on the way.
    expect(CONTAINERD_DEFAULT_CAPABILITIES).toEqual(containerd);
    expect(DEFAULT_CAPABILITIES).toEqual(CONTAINERD_DEFAULT_CAPABILITIES.filter((c) => !dropped.includes(c)));
    expect(DEFAULT_CAPABILITIES).toEqual(DEFAULT_CAPABILITY_NAMES.map(ociCapability));
    for (const set of ['bounding', 'effective', 'permitted'] as const)
      expect(spec.process.capabilities[set]).toEqual(DEFAULT_CAPABILITIES);
    expect(spec.process.noNewPrivileges).toBe(true);
    expect(spec.linux.seccomp).toMatchObject({ defaultAction: 'SCMP_ACT_ERRNO' });
  });

  it("the pool's capabilities replace the default set, and the seccomp profile follows them", () => {
    const withCaps = (capabilities: string[]) =>
      containerSpec({ ...input, capabilities }) as unknown as typeof spec & {
        linux: { seccomp: { syscalls: { names: string[]; action: string; args?: unknown[] }[] } };
      };
    const allows = (s: ReturnType<typeof withCaps>, name: string) =>
      s.linux.seccomp.syscalls.some((r) => r.action === 'SCMP_ACT_ALLOW' && r.names.includes(name) && !r.args);
    const restricted = withCaps(['CAP_NET_BIND_SERVICE']);
    expect(restricted.process.capabilities).toEqual({
      bounding: ['CAP_NET_BIND_SERVICE'],
      effective: ['CAP_NET_BIND_SERVICE'],
      permitted: ['CAP_NET_BIND_SERVICE'],
    });
    const ptrace = withCaps([...DEFAULT_CAPABILITIES, 'CAP_SYS_PTRACE']);
    expect(ptrace.process.capabilities.bounding).toContain('CAP_SYS_PTRACE');
    expect(allows(ptrace, 'kcmp')).toBe(true);
    expect(allows(spec as never, 'kcmp')).toBe(false);
  });

  it('masks the /proc paths containerd 2.4 masks (/proc/interrupts too), /sys/firmware and /sys/devices/virtual/powercap (RAPL energy counters)', () => {
    expect(spec.linux.maskedPaths).toEqual([
      '/proc/acpi',
      '/proc/asound',
      '/proc/interrupts',
      '/proc/kcore',
      '/proc/keys',
      '/proc/latency_stats',
      '/proc/timer_list',
      '/proc/timer_stats',
      '/proc/sched_debug',
      '/sys/firmware',
      '/sys/devices/virtual/powercap',
      '/proc/scsi',
    ]);
    expect(spec.linux.readonlyPaths).toEqual([
      '/proc/bus',
      '/proc/fs',
      '/proc/irq',
      '/proc/sys',
      '/proc/sysrq-trigger',
    ]);
  });

  it('the OOM killer takes a sandbox first: the highest score, never a lower one than it inherits (review N3)', () => {
    expect(SANDBOX_OOM_SCORE_ADJ).toBe(1000);
    expect(spec.process.oomScoreAdj).toBe(1000);
  });

  it('nothing of the agent is mounted: only kernel filesystems', () => {
    expect(spec.mounts.filter((m) => m.type === 'bind')).toEqual([]);
  });

  it('limits: memory without swap, a CPU quota, pids', () => {
    expect(spec.linux.resources).toEqual({
      devices: [{ allow: false, access: 'rwm' }],
      memory: { limit: 64 * 2 ** 20, swap: 64 * 2 ** 20 },
      cpu: { quota: 50_000, period: 100_000 },
      pids: { limit: 1024 },
    });
  });

  it('the request working dir and env; the image user', () => {
    expect(spec.process.cwd).toBe('/work');
    expect(spec.process.env).toContain('SECRET=s');
    expect(spec.process.user).toEqual({ uid: 0, gid: 0 });
  });

  it('an image with nothing to run and no command is refused', () => {
    expect(() => containerSpec({ ...input, image: {} })).toThrow(/nothing to run/);
  });
});

describe('sandbox-init is PID 1', () => {
  const base: ContainerSpecInput = {
    image,
    request: { command: ['/bin/sleep'], args: ['5'] },
    extraEnv: {},
    hostname: 'sb1',
    cgroupsPath: '/fast-sandbox/sb1',
    limits: {},
    arch: 'x64',
  };
  const init = { source: '/run/fast-sandbox/agent-1/sandbox-init', path: '/.fast-sandbox/init' };
  const of = (input: ContainerSpecInput) =>
    containerSpec(input) as { process: { args: string[]; env: string[] }; mounts: Record<string, unknown>[] };
  const initMount = {
    destination: '/.fast-sandbox/init',
    type: 'bind',
    source: '/run/fast-sandbox/agent-1/sandbox-init',
    options: ['rbind', 'ro', 'nosuid', 'nodev'],
  };

  it("cold: sandbox-init runs the sandbox's args after `--`, with the container's env; mounted read-only, executable", () => {
    const spec = of({ ...base, init });
    expect(spec.process.args).toEqual(['/.fast-sandbox/init', '--', '/bin/sleep', '5']);
    expect(spec.process.env).toEqual(['PATH=/bin', 'A=image']);
    expect(spec.mounts.filter((m) => m.type === 'bind')).toEqual([initMount]);
  });

  it('warm: sandbox-init alone (the process comes on its stdin), even for an image with nothing to run yet', () => {
    expect(of({ ...base, init: { ...init, warm: true } }).process.args).toEqual(['/.fast-sandbox/init']);
    expect(of({ ...base, image: {}, request: {}, init: { ...init, warm: true } }).mounts).toContainEqual(initMount);
  });

  it('cold with nothing to run is refused before sandbox-init is given it', () => {
    expect(() => containerSpec({ ...base, image: {}, request: {}, init })).toThrow(/nothing to run/);
  });
});

it('chain IDs as the OCI image spec defines them', () => {
  const a = 'sha256:aaaa';
  const b = 'sha256:bbbb';
  expect(chainId([a])).toBe(a);
  // sha256("sha256:aaaa sha256:bbbb")
  expect(chainId([a, b])).toMatch(/^sha256:[0-9a-f]{64}$/);
  expect(chainId([a, b])).not.toBe(chainId([b, a]));
});

describe('--cgroup-parent (review N3)', () => {
  it('defaults to /fast-sandbox; takes an absolute cgroupfs path, normalised', () => {
    expect(cgroupParentOf(undefined)).toBe('/fast-sandbox');
    expect(cgroupParentOf('/sandboxes/node-a/')).toBe('/sandboxes/node-a');
    expect(cgroupParentOf('/a//b')).toBe('/a/b');
  });
  it.each(['relative', '/', '/a/../..', '../x'])('refuses %j', (p) => {
    expect(() => cgroupParentOf(p)).toThrow(/--cgroup-parent/);
  });
});

it('the containerd runtime does not start without sandbox-init, and says so', async () => {
  // Any existing file stands for the socket: sandbox-init is checked before anything is made.
  const flags = {
    socket: fileURLToPath(import.meta.url),
    namespace: 'k8s.io',
    runtimeType: 'container',
    subnet: '198.18.0.0/24',
    netdBinary: '/nonexistent/sandbox-netd',
    ioDir: '/nonexistent/io',
    agentName: 'agent-1',
  };
  await expect(containerdRuntime(flags)).rejects.toThrow(
    'the containerd runtime needs sandbox-init, the init of every sandbox (--init-binary or DO_SANDBOX_INIT is not set)',
  );
  await expect(containerdRuntime({ ...flags, initBinary: '/no/such/sandbox-init' })).rejects.toThrow(
    '/no/such/sandbox-init does not exist',
  );
});

describe('--default-ephemeral-storage (review N3)', () => {
  it('is a quantity of bytes, at least 1Mi; anything else is said', () => {
    expect(ephemeralStorageBytes('10Gi')).toBe(10 * 2 ** 30);
    expect(ephemeralStorageBytes('500M')).toBe(500e6);
    expect(ephemeralStorageBytes('lots')).toBe('"lots" is not a quantity of bytes (e.g. "10Gi")');
    expect(ephemeralStorageBytes('512Ki')).toBe('512Ki is below the smallest limit, 1Mi');
  });
});
