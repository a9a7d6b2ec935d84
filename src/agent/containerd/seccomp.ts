/**
 * containerd's default seccomp profile: a TypeScript translation of `DefaultProfile` in
 * containerd v1.6.20 `contrib/seccomp/seccomp_default.go` (tag v1.6.20, commit
 * 2806fc1057397dbaeefbea0e4e17bddfbd388f38), the profile containerd (and its CRI plugin's
 * `runtime/default`) gives a container, less `io_uring_setup`, `io_uring_enter` and
 * `io_uring_register`: containerd 2.0 (commit a48ddf4a2) and Docker 25 refuse them, a frequent
 * path to kernel privilege escalations. Pure: no I/O.
 *
 * The result has the OCI runtime spec's `linux.seccomp` JSON shape, and the same rules in the same
 * order as containerd's `json.Marshal` of its `specs.LinuxSeccomp`: empty `args`, a zero
 * `valueTwo` and an empty `architectures` are left out (their Go fields are `omitempty`).
 * Like containerd, it sets no `defaultErrnoRet`: the runtime's default for `SCMP_ACT_ERRNO`
 * is EPERM.
 *
 * Where containerd looks at the build (`runtime.GOARCH`) or the host (`uname` for the kernel
 * version), this takes arguments: the Node architecture (mapped to its GOARCH) and, optionally,
 * the kernel release.
 */

export interface SeccompArg {
  index: number;
  value: number;
  valueTwo?: number;
  op: string;
}

export interface SeccompSyscall {
  names: string[];
  action: string;
  errnoRet?: number;
  args?: SeccompArg[];
}

export interface LinuxSeccomp {
  defaultAction: string;
  defaultErrnoRet?: number;
  architectures?: string[];
  syscalls: SeccompSyscall[];
}

const ACT_ALLOW = 'SCMP_ACT_ALLOW';
const ACT_ERRNO = 'SCMP_ACT_ERRNO';
const OP_EQUAL_TO = 'SCMP_CMP_EQ';
const OP_MASKED_EQUAL = 'SCMP_CMP_MASKED_EQ';

/** Allowed for every container, whatever its capabilities (containerd's first rule). */
const ALWAYS_ALLOWED: readonly string[] = [
  'accept',
  'accept4',
  'access',
  'adjtimex',
  'alarm',
  'bind',
  'brk',
  'capget',
  'capset',
  'chdir',
  'chmod',
  'chown',
  'chown32',
  'clock_adjtime',
  'clock_adjtime64',
  'clock_getres',
  'clock_getres_time64',
  'clock_gettime',
  'clock_gettime64',
  'clock_nanosleep',
  'clock_nanosleep_time64',
  'close',
  'close_range',
  'connect',
  'copy_file_range',
  'creat',
  'dup',
  'dup2',
  'dup3',
  'epoll_create',
  'epoll_create1',
  'epoll_ctl',
  'epoll_ctl_old',
  'epoll_pwait',
  'epoll_pwait2',
  'epoll_wait',
  'epoll_wait_old',
  'eventfd',
  'eventfd2',
  'execve',
  'execveat',
  'exit',
  'exit_group',
  'faccessat',
  'faccessat2',
  'fadvise64',
  'fadvise64_64',
  'fallocate',
  'fanotify_mark',
  'fchdir',
  'fchmod',
  'fchmodat',
  'fchown',
  'fchown32',
  'fchownat',
  'fcntl',
  'fcntl64',
  'fdatasync',
  'fgetxattr',
  'flistxattr',
  'flock',
  'fork',
  'fremovexattr',
  'fsetxattr',
  'fstat',
  'fstat64',
  'fstatat64',
  'fstatfs',
  'fstatfs64',
  'fsync',
  'ftruncate',
  'ftruncate64',
  'futex',
  'futex_time64',
  'futex_waitv',
  'futimesat',
  'getcpu',
  'getcwd',
  'getdents',
  'getdents64',
  'getegid',
  'getegid32',
  'geteuid',
  'geteuid32',
  'getgid',
  'getgid32',
  'getgroups',
  'getgroups32',
  'getitimer',
  'getpeername',
  'getpgid',
  'getpgrp',
  'getpid',
  'getppid',
  'getpriority',
  'getrandom',
  'getresgid',
  'getresgid32',
  'getresuid',
  'getresuid32',
  'getrlimit',
  'get_robust_list',
  'getrusage',
  'getsid',
  'getsockname',
  'getsockopt',
  'get_thread_area',
  'gettid',
  'gettimeofday',
  'getuid',
  'getuid32',
  'getxattr',
  'inotify_add_watch',
  'inotify_init',
  'inotify_init1',
  'inotify_rm_watch',
  'io_cancel',
  'ioctl',
  'io_destroy',
  'io_getevents',
  'io_pgetevents',
  'io_pgetevents_time64',
  'ioprio_get',
  'ioprio_set',
  'io_setup',
  'io_submit',
  'ipc',
  'kill',
  'landlock_add_rule',
  'landlock_create_ruleset',
  'landlock_restrict_self',
  'lchown',
  'lchown32',
  'lgetxattr',
  'link',
  'linkat',
  'listen',
  'listxattr',
  'llistxattr',
  '_llseek',
  'lremovexattr',
  'lseek',
  'lsetxattr',
  'lstat',
  'lstat64',
  'madvise',
  'membarrier',
  'memfd_create',
  'memfd_secret',
  'mincore',
  'mkdir',
  'mkdirat',
  'mknod',
  'mknodat',
  'mlock',
  'mlock2',
  'mlockall',
  'mmap',
  'mmap2',
  'mprotect',
  'mq_getsetattr',
  'mq_notify',
  'mq_open',
  'mq_timedreceive',
  'mq_timedreceive_time64',
  'mq_timedsend',
  'mq_timedsend_time64',
  'mq_unlink',
  'mremap',
  'msgctl',
  'msgget',
  'msgrcv',
  'msgsnd',
  'msync',
  'munlock',
  'munlockall',
  'munmap',
  'nanosleep',
  'newfstatat',
  '_newselect',
  'open',
  'openat',
  'openat2',
  'pause',
  'pidfd_open',
  'pidfd_send_signal',
  'pipe',
  'pipe2',
  'pkey_alloc',
  'pkey_free',
  'pkey_mprotect',
  'poll',
  'ppoll',
  'ppoll_time64',
  'prctl',
  'pread64',
  'preadv',
  'preadv2',
  'prlimit64',
  'process_mrelease',
  'pselect6',
  'pselect6_time64',
  'pwrite64',
  'pwritev',
  'pwritev2',
  'read',
  'readahead',
  'readlink',
  'readlinkat',
  'readv',
  'recv',
  'recvfrom',
  'recvmmsg',
  'recvmmsg_time64',
  'recvmsg',
  'remap_file_pages',
  'removexattr',
  'rename',
  'renameat',
  'renameat2',
  'restart_syscall',
  'rmdir',
  'rseq',
  'rt_sigaction',
  'rt_sigpending',
  'rt_sigprocmask',
  'rt_sigqueueinfo',
  'rt_sigreturn',
  'rt_sigsuspend',
  'rt_sigtimedwait',
  'rt_sigtimedwait_time64',
  'rt_tgsigqueueinfo',
  'sched_getaffinity',
  'sched_getattr',
  'sched_getparam',
  'sched_get_priority_max',
  'sched_get_priority_min',
  'sched_getscheduler',
  'sched_rr_get_interval',
  'sched_rr_get_interval_time64',
  'sched_setaffinity',
  'sched_setattr',
  'sched_setparam',
  'sched_setscheduler',
  'sched_yield',
  'seccomp',
  'select',
  'semctl',
  'semget',
  'semop',
  'semtimedop',
  'semtimedop_time64',
  'send',
  'sendfile',
  'sendfile64',
  'sendmmsg',
  'sendmsg',
  'sendto',
  'setfsgid',
  'setfsgid32',
  'setfsuid',
  'setfsuid32',
  'setgid',
  'setgid32',
  'setgroups',
  'setgroups32',
  'setitimer',
  'setpgid',
  'setpriority',
  'setregid',
  'setregid32',
  'setresgid',
  'setresgid32',
  'setresuid',
  'setresuid32',
  'setreuid',
  'setreuid32',
  'setrlimit',
  'set_robust_list',
  'setsid',
  'setsockopt',
  'set_thread_area',
  'set_tid_address',
  'setuid',
  'setuid32',
  'setxattr',
  'shmat',
  'shmctl',
  'shmdt',
  'shmget',
  'shutdown',
  'sigaltstack',
  'signalfd',
  'signalfd4',
  'sigprocmask',
  'sigreturn',
  'socket',
  'socketcall',
  'socketpair',
  'splice',
  'stat',
  'stat64',
  'statfs',
  'statfs64',
  'statx',
  'symlink',
  'symlinkat',
  'sync',
  'sync_file_range',
  'syncfs',
  'sysinfo',
  'tee',
  'tgkill',
  'time',
  'timer_create',
  'timer_delete',
  'timer_getoverrun',
  'timer_gettime',
  'timer_gettime64',
  'timer_settime',
  'timer_settime64',
  'timerfd_create',
  'timerfd_gettime',
  'timerfd_gettime64',
  'timerfd_settime',
  'timerfd_settime64',
  'times',
  'tkill',
  'truncate',
  'truncate64',
  'ugetrlimit',
  'umask',
  'uname',
  'unlink',
  'unlinkat',
  'utime',
  'utimensat',
  'utimensat_time64',
  'utimes',
  'vfork',
  'vmsplice',
  'wait4',
  'waitid',
  'waitpid',
  'write',
  'writev',
];

/** `personality(2)` is allowed for exactly these personas (one rule each, as in containerd). */
const PERSONALITY_VALUES: readonly number[] = [0x0, 0x0008, 0x20000, 0x20008, 0xffffffff];

/** `arches()`: the extra seccomp architectures, by GOARCH (containerd's names, some not real GOARCHes). */
const ARCHITECTURES: Readonly<Record<string, readonly string[]>> = {
  amd64: ['SCMP_ARCH_X86_64', 'SCMP_ARCH_X86', 'SCMP_ARCH_X32'],
  arm64: ['SCMP_ARCH_ARM', 'SCMP_ARCH_AARCH64'],
  mips64: ['SCMP_ARCH_MIPS', 'SCMP_ARCH_MIPS64', 'SCMP_ARCH_MIPS64N32'],
  mips64n32: ['SCMP_ARCH_MIPS', 'SCMP_ARCH_MIPS64', 'SCMP_ARCH_MIPS64N32'],
  mipsel64: ['SCMP_ARCH_MIPSEL', 'SCMP_ARCH_MIPSEL64', 'SCMP_ARCH_MIPSEL64N32'],
  mipsel64n32: ['SCMP_ARCH_MIPSEL', 'SCMP_ARCH_MIPSEL64', 'SCMP_ARCH_MIPSEL64N32'],
  s390x: ['SCMP_ARCH_S390', 'SCMP_ARCH_S390X'],
  // SCMP_ARCH_RISCV32 does not exist.
  riscv64: ['SCMP_ARCH_RISCV64'],
};

/** The "include by arch" rule, by GOARCH. */
const ARCH_ALLOWED: Readonly<Record<string, readonly string[]>> = {
  ppc64le: ['sync_file_range2', 'swapcontext'],
  arm: ['arm_fadvise64_64', 'arm_sync_file_range', 'sync_file_range2', 'breakpoint', 'cacheflush', 'set_tls'],
  arm64: ['arm_fadvise64_64', 'arm_sync_file_range', 'sync_file_range2', 'breakpoint', 'cacheflush', 'set_tls'],
  amd64: ['arch_prctl', 'modify_ldt'],
  '386': ['modify_ldt'],
  s390: ['s390_pci_mmio_read', 's390_pci_mmio_write', 's390_runtime_instr'],
  s390x: ['s390_pci_mmio_read', 's390_pci_mmio_write', 's390_runtime_instr'],
  riscv64: ['riscv_flush_icache'],
};

/** One allow rule per capability the process holds, in the order the capabilities are given. */
const CAPABILITY_ALLOWED: Readonly<Record<string, readonly string[]>> = {
  CAP_DAC_READ_SEARCH: ['open_by_handle_at'],
  CAP_SYS_ADMIN: [
    'bpf',
    'clone',
    'clone3',
    'fanotify_init',
    'fsconfig',
    'fsmount',
    'fsopen',
    'fspick',
    'lookup_dcookie',
    'mount',
    'mount_setattr',
    'move_mount',
    'name_to_handle_at',
    'open_tree',
    'perf_event_open',
    'quotactl',
    'quotactl_fd',
    'setdomainname',
    'sethostname',
    'setns',
    'syslog',
    'umount',
    'umount2',
    'unshare',
  ],
  CAP_SYS_BOOT: ['reboot'],
  CAP_SYS_CHROOT: ['chroot'],
  CAP_SYS_MODULE: ['delete_module', 'init_module', 'finit_module'],
  CAP_SYS_PACCT: ['acct'],
  CAP_SYS_PTRACE: ['kcmp', 'pidfd_getfd', 'process_madvise', 'process_vm_readv', 'process_vm_writev', 'ptrace'],
  CAP_SYS_RAWIO: ['iopl', 'ioperm'],
  CAP_SYS_TIME: ['settimeofday', 'stime', 'clock_settime', 'clock_settime64'],
  CAP_SYS_TTY_CONFIG: ['vhangup'],
  CAP_SYS_NICE: ['get_mempolicy', 'mbind', 'set_mempolicy'],
  CAP_SYSLOG: ['syslog'],
  CAP_BPF: ['bpf'],
  CAP_PERFMON: ['perf_event_open'],
};

/** CLONE_NEWNS | CLONE_NEWUTS | CLONE_NEWIPC | CLONE_NEWUSER | CLONE_NEWPID | CLONE_NEWNET | CLONE_NEWCGROUP. */
const CLONE_NAMESPACE_FLAGS = 0x20000 | 0x4000000 | 0x8000000 | 0x10000000 | 0x20000000 | 0x40000000 | 0x2000000;

/** The GOARCH a Go binary built for this Node architecture would have. */
const GOARCH_OF: Readonly<Record<string, string>> = {
  x64: 'amd64',
  ia32: '386',
  arm: 'arm',
  arm64: 'arm64',
  loong64: 'loong64',
  mips: 'mips',
  mipsel: 'mipsle',
  mips64el: 'mips64le',
  ppc: 'ppc',
  // Linux's only ppc64 Node is little-endian, and reports itself as ppc64.
  ppc64: 'ppc64le',
  riscv64: 'riscv64',
  s390: 's390',
  s390x: 's390x',
};

/** `unix.ENOSYS` for the GOARCH: 89 on MIPS, 38 everywhere else. */
function enosys(goarch: string): number {
  return goarch.startsWith('mips') ? 89 : 38;
}

/**
 * containerd's `kernelversion.GreaterEqualThan(4.8)`, on a `uname -r` release: it reads the
 * first two numbers (`fmt.Sscanf(release, "%d.%d")`); a release it cannot read counts as no.
 */
function kernelAtLeast4_8(release: string): boolean {
  const match = /^\s*(\d+)\.(\d+)/.exec(release);
  if (!match) return false;
  const kernel = Number(match[1]);
  const major = Number(match[2]);
  return kernel > 4 || (kernel === 4 && major >= 8);
}

/** `table[key]`, not what `Object.prototype` has under that name (`toString`, …). */
function own<T>(table: Readonly<Record<string, T>>, key: string): T | undefined {
  return Object.hasOwn(table, key) ? table[key] : undefined;
}

function allow(names: readonly string[]): SeccompSyscall {
  return { names: [...names], action: ACT_ALLOW };
}

/**
 * containerd 1.6's default seccomp profile (contrib/seccomp DefaultProfile) without io_uring, for
 * the given process capabilities and architecture.
 *
 * @param capabilities the process's bounding capabilities, OCI names (`CAP_SYS_ADMIN`); each
 *   one containerd knows adds its rule, in this order (a repeated capability repeats its rule).
 * @param arch the Node architecture of the host (containerd uses the one it was built for).
 * @param kernelRelease the host's `uname -r` (`os.release()`). containerd allows `ptrace` to
 *   everyone on kernel 4.8 or later (before 4.8 seccomp could be bypassed with it); when this is
 *   left out the kernel is taken to be 4.8 or later, as on every host containerd 1.6 supports.
 */
export function defaultSeccompProfile(
  capabilities: readonly string[],
  arch: NodeJS.Architecture = process.arch,
  kernelRelease?: string,
): LinuxSeccomp {
  const goarch = own(GOARCH_OF, arch) ?? arch;

  const syscalls: SeccompSyscall[] = [
    allow(ALWAYS_ALLOWED),
    ...PERSONALITY_VALUES.map((value) => ({
      names: ['personality'],
      action: ACT_ALLOW,
      args: [{ index: 0, value, op: OP_EQUAL_TO }],
    })),
  ];

  // Include by kernel version.
  if (kernelRelease === undefined || kernelAtLeast4_8(kernelRelease)) syscalls.push(allow(['ptrace']));

  // Include by arch.
  const archAllowed = own(ARCH_ALLOWED, goarch);
  if (archAllowed) syscalls.push(allow(archAllowed));

  // Include by capability.
  let admin = false;
  for (const capability of capabilities) {
    const names = own(CAPABILITY_ALLOWED, capability);
    if (!names) continue;
    if (capability === 'CAP_SYS_ADMIN') admin = true;
    syscalls.push(allow(names));
  }

  if (!admin) {
    // clone only without a new namespace: flags & mask == valueTwo, here 0 (so left out, as Go's
    // omitempty does). The flags are the second argument on s390.
    syscalls.push({
      names: ['clone'],
      action: ACT_ALLOW,
      args: [
        { index: goarch === 's390' || goarch === 's390x' ? 1 : 0, value: CLONE_NAMESPACE_FLAGS, op: OP_MASKED_EQUAL },
      ],
    });
    // clone3's flags are behind a pointer seccomp cannot read: ENOSYS makes libc fall back to clone
    // (moby/moby#42681).
    syscalls.push({ names: ['clone3'], action: ACT_ERRNO, errnoRet: enosys(goarch) });
  }

  const architectures = own(ARCHITECTURES, goarch) ?? [];
  return {
    defaultAction: ACT_ERRNO,
    ...(architectures.length > 0 ? { architectures: [...architectures] } : {}),
    syscalls,
  };
}
