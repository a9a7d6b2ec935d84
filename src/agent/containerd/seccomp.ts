/**
 * containerd's default seccomp profile (the one containerd, and its CRI plugin's
 * `runtime/default`, gives a container), for a sandbox's capabilities. The rules are data:
 * ./seccomp-default.json, generated from containerd's own Go package (contrib/seccomp
 * DefaultProfile; the module and version are in the file) by `npm run seccomp`
 * (./seccomp-gen). This file only puts its pieces together as DefaultProfile does for a spec:
 * the rules every container gets, then each capability's in the order given, then the
 * clone/clone3 limits unless CAP_SYS_ADMIN is among them. Pure: no I/O.
 *
 * The result has the OCI runtime spec's `linux.seccomp` JSON shape, as containerd's `json.Marshal`
 * writes it. Where containerd looks at its build (`runtime.GOARCH`) the file has one entry per
 * GOARCH; where it looks at the host (`uname`, kernel 4.8 or later) this takes the release.
 */
import generated from './seccomp-default.json' with { type: 'json' };

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

/** One GOARCH's entry of seccomp-default.json (written by seccomp-gen/main.go). */
interface ProfileParts {
  containerd: string;
  defaultAction: string;
  architectures: string[] | null;
  common: SeccompSyscall[];
  /** Indexes into `common` of the rules containerd adds only on kernel 4.8 or later. */
  needsKernel4_8: number[];
  byCapability: Record<string, SeccompSyscall[]>;
  withoutSysAdmin: SeccompSyscall[];
}

const BY_GOARCH: Readonly<Record<string, ProfileParts>> = generated as Record<string, ProfileParts>;

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

/** Whether this Node architecture has a generated profile (the containerd runtime needs one). */
export function hasSeccompProfile(arch: NodeJS.Architecture = process.arch): boolean {
  return own(BY_GOARCH, own(GOARCH_OF, arch) ?? arch) !== undefined;
}

/**
 * containerd's DefaultProfile for a process with these bounding capabilities.
 *
 * @param capabilities OCI names (`CAP_SYS_ADMIN`); each one containerd knows adds its rules, in
 *   this order (a repeated capability repeats them).
 * @param arch the Node architecture of the host (containerd uses the one it was built for).
 * @param kernelRelease the host's `uname -r` (`os.release()`). Before 4.8 seccomp could be
 *   bypassed with ptrace, so containerd then leaves it to CAP_SYS_PTRACE; left out, the kernel is
 *   taken to be 4.8 or later, as on every host containerd 2 supports.
 */
export function defaultSeccompProfile(
  capabilities: readonly string[],
  arch: NodeJS.Architecture = process.arch,
  kernelRelease?: string,
): LinuxSeccomp {
  const goarch = own(GOARCH_OF, arch) ?? arch;
  const parts = own(BY_GOARCH, goarch);
  if (!parts)
    throw new Error(
      `no seccomp profile generated for ${goarch}: run \`npm run seccomp\` on a ${goarch} machine (src/agent/containerd/seccomp-gen)`,
    );
  const oldKernel = kernelRelease !== undefined && !kernelAtLeast4_8(kernelRelease);
  const syscalls = parts.common.filter((_, i) => !(oldKernel && parts.needsKernel4_8.includes(i)));
  let admin = false;
  for (const capability of capabilities) {
    const rules = own(parts.byCapability, capability);
    if (!rules) continue;
    if (capability === 'CAP_SYS_ADMIN') admin = true;
    syscalls.push(...rules);
  }
  if (!admin) syscalls.push(...parts.withoutSysAdmin);
  // A copy: the spec is serialised and may be changed; the generated data must stay as it is.
  return structuredClone({
    defaultAction: parts.defaultAction,
    ...(parts.architectures?.length ? { architectures: parts.architectures } : {}),
    syscalls,
  });
}
