import { describe, expect, it } from 'vitest';
import { chainId } from '../../src/agent/containerd/images.js';
import {
  DEFAULT_CAPABILITIES,
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

  it("containerd's default capabilities, no_new_privs and the default seccomp profile", () => {
    expect(spec.process.capabilities.bounding).toEqual(DEFAULT_CAPABILITIES);
    expect(spec.process.capabilities.effective).not.toContain('CAP_SYS_ADMIN');
    expect(spec.process.noNewPrivileges).toBe(true);
    expect(spec.linux.seccomp).toMatchObject({ defaultAction: 'SCMP_ACT_ERRNO' });
    expect(spec.linux.maskedPaths).toContain('/proc/kcore');
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

it('chain IDs as the OCI image spec defines them', () => {
  const a = 'sha256:aaaa';
  const b = 'sha256:bbbb';
  expect(chainId([a])).toBe(a);
  // sha256("sha256:aaaa sha256:bbbb")
  expect(chainId([a, b])).toMatch(/^sha256:[0-9a-f]{64}$/);
  expect(chainId([a, b])).not.toBe(chainId([b, a]));
});
