import { describe, it, expect } from 'vitest';
import { DEFAULT_CAPABILITIES } from '../../src/agent/containerd/oci-spec.js';
import { CAPABILITY_NAMES } from '../../src/domain/sandbox-capabilities.js';
import { readFileSync } from 'node:fs';
import os from 'node:os';
import { defaultSeccompProfile, hasSeccompProfile, type LinuxSeccomp } from '../../src/agent/containerd/seccomp.js';
import {
  OCI_DATA_FILE,
  SECCOMP_DATA_FILE,
  containerdDefaultProfile,
  generatedOciDefaults,
  generatedParts,
  renderOciData,
  renderSeccompData,
} from '../../src/agent/containerd/seccomp-gen/generate.js';

/** The sandboxes' default process capabilities, as the container spec gives them. */
const DEFAULT_CAPS = DEFAULT_CAPABILITIES;

/** Whether some rule allows the syscall whatever its arguments. */
function allowed(profile: LinuxSeccomp, name: string): boolean {
  return profile.syscalls.some(
    (rule) => rule.action === 'SCMP_ACT_ALLOW' && rule.names.includes(name) && (rule.args ?? []).length === 0,
  );
}

function rulesFor(profile: LinuxSeccomp, name: string) {
  return profile.syscalls.filter((rule) => rule.names.includes(name));
}

const OCI_NAMES = CAPABILITY_NAMES.map((n) => `CAP_${n}`);

// Runs containerd's Go package (src/agent/containerd/seccomp-gen) with the host's Go: the first
// run of a fresh machine downloads the module.
describe("the profile is containerd's own", { timeout: 300_000 }, () => {
  it('seccomp-default.json is what `npm run seccomp` writes from containerd here', async () => {
    expect(await renderSeccompData(await generatedParts())).toBe(readFileSync(SECCOMP_DATA_FILE, 'utf8'));
  });

  it("oci-defaults.json (the container spec's defaults) is what `npm run seccomp` writes from containerd's oci package", async () => {
    expect(renderOciData(await generatedOciDefaults())).toBe(readFileSync(OCI_DATA_FILE, 'utf8'));
  });

  it.each([
    ['the default set', DEFAULT_CAPS],
    ['none', []],
    ['the default set and CAP_SYS_ADMIN', [...DEFAULT_CAPS, 'CAP_SYS_ADMIN']],
    ['every capability', OCI_NAMES],
    ['every capability, reversed', [...OCI_NAMES].reverse()],
    ['a repeated one and an unknown one', ['CAP_SYS_TIME', 'CAP_NONSENSE', 'CAP_SYS_PTRACE', 'CAP_SYS_TIME']],
  ])('equals containerd DefaultProfile for %s, on this host', async (_, caps) => {
    expect(hasSeccompProfile()).toBe(true);
    expect(defaultSeccompProfile(caps, process.arch, os.release())).toEqual(await containerdDefaultProfile(caps));
  });
});

describe('defaultSeccompProfile', () => {
  const profile = defaultSeccompProfile(DEFAULT_CAPS, 'x64');

  it('denies by default with SCMP_ACT_ERRNO, which the runtime answers with EPERM (containerd sets no defaultErrnoRet)', () => {
    expect(profile.defaultAction).toBe('SCMP_ACT_ERRNO');
    expect(profile.defaultErrnoRet).toBeUndefined();
  });

  it.each(['read', 'write', 'execve', 'openat', 'exit_group', 'clock_gettime'])('allows %s', (name) => {
    expect(allowed(profile, name)).toBe(true);
  });

  it('refuses io_uring_setup, io_uring_enter and io_uring_register, whatever the capabilities (as containerd 2.0 and Docker 25)', () => {
    const everything = defaultSeccompProfile(
      CAPABILITY_NAMES.map((n) => `CAP_${n}`),
      'x64',
    );
    for (const p of [profile, everything])
      for (const name of ['io_uring_setup', 'io_uring_enter', 'io_uring_register'])
        expect(rulesFor(p, name), name).toEqual([]);
  });

  it.each([
    'mount',
    'umount2',
    'unshare',
    'setns',
    'bpf',
    'reboot',
    'init_module',
    'finit_module',
    'kexec_load',
    'open_by_handle_at',
    'settimeofday',
    'perf_event_open',
    'keyctl',
    'add_key',
  ])('does not allow %s with the default capabilities', (name) => {
    expect(rulesFor(profile, name).filter((rule) => rule.action === 'SCMP_ACT_ALLOW')).toEqual([]);
  });

  it('allows chroot only with CAP_SYS_CHROOT, which the default set no longer holds', () => {
    expect(allowed(profile, 'chroot')).toBe(false);
    expect(allowed(defaultSeccompProfile([...DEFAULT_CAPS, 'CAP_SYS_CHROOT'], 'x64'), 'chroot')).toBe(true);
  });

  it('gives each capability containerd knows its syscalls', () => {
    const cases: [string, string[]][] = [
      ['CAP_SYS_ADMIN', ['mount', 'umount2', 'setns', 'unshare', 'bpf', 'clone', 'clone3', 'sethostname']],
      ['CAP_DAC_READ_SEARCH', ['open_by_handle_at']],
      ['CAP_SYS_BOOT', ['reboot']],
      ['CAP_SYS_MODULE', ['init_module', 'finit_module', 'delete_module']],
      ['CAP_SYS_PACCT', ['acct']],
      ['CAP_SYS_PTRACE', ['process_madvise', 'kcmp', 'pidfd_getfd']],
      ['CAP_SYS_RAWIO', ['iopl', 'ioperm']],
      ['CAP_SYS_TIME', ['settimeofday', 'clock_settime']],
      ['CAP_SYS_TTY_CONFIG', ['vhangup']],
      ['CAP_SYS_NICE', ['mbind', 'set_mempolicy']],
      ['CAP_SYSLOG', ['syslog']],
      ['CAP_BPF', ['bpf']],
      ['CAP_PERFMON', ['perf_event_open']],
    ];
    for (const [capability, names] of cases) {
      const withCap = defaultSeccompProfile([...DEFAULT_CAPS, capability], 'x64');
      for (const name of names) {
        expect(allowed(profile, name), `${name} without ${capability}`).toBe(false);
        expect(allowed(withCap, name), `${name} with ${capability}`).toBe(true);
      }
    }
  });

  it('never allows kexec_load, whatever the capabilities', () => {
    const everything = defaultSeccompProfile(
      [...DEFAULT_CAPS, 'CAP_SYS_ADMIN', 'CAP_SYS_BOOT', 'CAP_SYS_MODULE'],
      'x64',
    );
    expect(rulesFor(everything, 'kexec_load')).toEqual([]);
  });

  it('allows clone only without namespace flags, and answers clone3 with ENOSYS, without CAP_SYS_ADMIN', () => {
    expect(rulesFor(profile, 'clone')).toEqual([
      { names: ['clone'], action: 'SCMP_ACT_ALLOW', args: [{ index: 0, value: 0x7e020000, op: 'SCMP_CMP_MASKED_EQ' }] },
    ]);
    expect(rulesFor(profile, 'clone3')).toEqual([{ names: ['clone3'], action: 'SCMP_ACT_ERRNO', errnoRet: 38 }]);
  });

  it('lets CAP_SYS_ADMIN clone and clone3 freely, with no clone restriction or clone3 errno rule', () => {
    const admin = defaultSeccompProfile([...DEFAULT_CAPS, 'CAP_SYS_ADMIN'], 'x64');
    expect(allowed(admin, 'mount')).toBe(true);
    expect(rulesFor(admin, 'clone').every((rule) => rule.action === 'SCMP_ACT_ALLOW' && !rule.args)).toBe(true);
    expect(rulesFor(admin, 'clone3').map((rule) => rule.action)).toEqual(['SCMP_ACT_ALLOW']);
  });

  it('allows personality only for the listed personas', () => {
    const values = rulesFor(profile, 'personality').map((rule) =>
      rule.args?.map((arg) => [arg.index, arg.value, arg.op]),
    );
    expect(values).toEqual([0x0, 0x8, 0x20000, 0x20008, 0xffffffff].map((value) => [[0, value, 'SCMP_CMP_EQ']]));
    expect(allowed(profile, 'personality')).toBe(false);
  });

  it('allows ptrace and process_vm_* to everyone on kernel 4.8 and later (as containerd does), and only with CAP_SYS_PTRACE before', () => {
    expect(allowed(profile, 'ptrace')).toBe(true);
    expect(allowed(profile, 'process_vm_readv')).toBe(true);
    expect(allowed(defaultSeccompProfile(DEFAULT_CAPS, 'x64', '4.4.0'), 'process_vm_readv')).toBe(false);
    expect(allowed(defaultSeccompProfile(DEFAULT_CAPS, 'x64', '6.8.0-45-generic'), 'ptrace')).toBe(true);
    expect(allowed(defaultSeccompProfile(DEFAULT_CAPS, 'x64', '4.8.0'), 'ptrace')).toBe(true);
    expect(allowed(defaultSeccompProfile(DEFAULT_CAPS, 'x64', '4.4.0-210-generic'), 'ptrace')).toBe(false);
    expect(allowed(defaultSeccompProfile(DEFAULT_CAPS, 'x64', 'unreadable'), 'ptrace')).toBe(false);
    expect(allowed(defaultSeccompProfile([...DEFAULT_CAPS, 'CAP_SYS_PTRACE'], 'x64', '4.4.0'), 'ptrace')).toBe(true);
  });

  it('lists the x86 architectures and their syscalls on x64', () => {
    expect(profile.architectures).toEqual(['SCMP_ARCH_X86_64', 'SCMP_ARCH_X86', 'SCMP_ARCH_X32']);
    expect(allowed(profile, 'arch_prctl')).toBe(true);
    expect(allowed(profile, 'modify_ldt')).toBe(true);
    expect(allowed(profile, 'arm_fadvise64_64')).toBe(false);
  });

  it('lists the ARM architectures and their syscalls on arm64 (generated under qemu-user)', () => {
    const arm = defaultSeccompProfile(DEFAULT_CAPS, 'arm64');
    expect(arm.architectures).toEqual(['SCMP_ARCH_ARM', 'SCMP_ARCH_AARCH64']);
    for (const name of [
      'arm_fadvise64_64',
      'arm_sync_file_range',
      'sync_file_range2',
      'breakpoint',
      'cacheflush',
      'set_tls',
    ])
      expect(allowed(arm, name), name).toBe(true);
    expect(allowed(arm, 'arch_prctl')).toBe(false);
    expect(allowed(arm, 'modify_ldt')).toBe(false);
  });

  it('refuses an architecture it has no generated profile for, naming how to make one', () => {
    expect(hasSeccompProfile('s390x')).toBe(false);
    expect(() => defaultSeccompProfile(DEFAULT_CAPS, 's390x')).toThrow(
      /no seccomp profile generated for s390x: run `npm run seccomp`/,
    );
  });

  it('allows socket(2) for the address families containerd lists, not AF_ALG (38) or AF_VSOCK (40)', () => {
    const domainAllowed = (domain: number) =>
      rulesFor(profile, 'socket').some((rule) =>
        rule.args!.every((a) => (a.op === 'SCMP_CMP_LT' ? domain < a.value : domain === a.value)),
      );
    for (const domain of [1, 2, 10, 16, 17, 44]) expect(domainAllowed(domain), String(domain)).toBe(true);
    for (const domain of [38, 40, 46]) expect(domainAllowed(domain), String(domain)).toBe(false);
  });

  it('ignores capabilities it does not know, even Object.prototype names', () => {
    expect(defaultSeccompProfile([...DEFAULT_CAPS, 'toString', 'constructor', 'CAP_NONSENSE'], 'x64')).toEqual(profile);
  });

  it('returns a fresh profile each time', () => {
    const a = defaultSeccompProfile(DEFAULT_CAPS, 'x64');
    a.syscalls[0]?.names.push('kexec_load');
    expect(allowed(defaultSeccompProfile(DEFAULT_CAPS, 'x64'), 'kexec_load')).toBe(false);
  });
});
