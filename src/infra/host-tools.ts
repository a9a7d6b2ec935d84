/**
 * The host tools behind the stack's containerd side: containerd with its runc shim, runc, gVisor's
 * runsc (optional), docker-registry to serve images, umoci + skopeo + a static busybox to build
 * and push the demo images, and mmdebstrap for the project's image's Debian base
 * (project-image.ts). Unlike binaries.ts these are not built at a pinned version: containerd runs
 * as root against the host kernel, so the distribution's packages are the ones that fit. They are
 * looked up on PATH only, where containerd itself finds its shim and runc.
 */
import { spawn } from 'node:child_process';
import { closeSync, existsSync, openSync, readSync } from 'node:fs';
import path from 'node:path';
import type { ProgressLog } from './binaries.js';

/** Each tool and the Debian package that provides it. */
const REQUIRED = {
  containerd: 'containerd',
  'containerd-shim-runc-v2': 'containerd',
  runc: 'runc',
  umoci: 'umoci',
  skopeo: 'skopeo',
  'docker-registry': 'docker-registry',
  // The image's only binary: it must run without the host's libc.
  busybox: 'busybox-static',
  // The project's own image: its Debian base (project-image.ts).
  mmdebstrap: 'mmdebstrap',
  // A network namespace per sandbox: wired by the CNI plugins, held to its policy by nftables.
  ip: 'iproute2',
  nft: 'nftables',
  ptp: 'containernetworking-plugins',
} as const;
/** Where Debian's containernetworking-plugins puts the CNI plugins (not on PATH). */
export const CNI_PATH = '/usr/lib/cni';
/** Some apt sources lack runsc; without it sandboxes run under runc only. */
const OPTIONAL = { runsc: 'runsc' } as const;

type RequiredTool = keyof typeof REQUIRED;
export type HostTools = Record<RequiredTool, string> & { runsc?: string };

const PACKAGES = [...new Set([...Object.values(REQUIRED), ...Object.values(OPTIONAL)])];
export const INSTALL_HINT = `apt-get install ${PACKAGES.join(' ')}`;

export class MissingHostToolsError extends Error {
  constructor(missing: RequiredTool[]) {
    super(
      `containerd stack: missing ${missing.join(', ')}` +
        (missing.includes('busybox') ? ' (a statically linked one, from busybox-static)' : '') +
        `. On Debian/Ubuntu, as root: ${INSTALL_HINT} ` +
        '(or `npm run infra` as root installs them). DO_CONTAINERD=0 runs the stack without containerd.',
    );
    this.name = 'MissingHostToolsError';
  }
}

/**
 * Resolves every tool on PATH (and `extraDirs`); `missing` names the required ones that are
 * absent or unusable.
 */
export function findHostTools(extraDirs: readonly string[] = []): {
  tools: Partial<HostTools>;
  missing: RequiredTool[];
} {
  const tools: Partial<HostTools> = {};
  const missing: RequiredTool[] = [];
  for (const name of Object.keys(REQUIRED) as RequiredTool[]) {
    const found =
      name === 'ptp'
        ? existsSync(path.join(CNI_PATH, name))
          ? path.join(CNI_PATH, name)
          : undefined
        : onPath(name, extraDirs);
    if (!found || (name === 'busybox' && hasInterpreter(found))) missing.push(name);
    else tools[name] = found;
  }
  tools.runsc = onPath('runsc', extraDirs);
  return { tools, missing };
}

/** The tools, or one error naming what to install. */
export function requireHostTools(): HostTools {
  const { tools, missing } = findHostTools();
  if (missing.length) throw new MissingHostToolsError(missing);
  return tools as HostTools;
}

/**
 * `infra provision`: as root on a host with apt, installs the packages of missing tools (runsc
 * separately, allowed to fail). Returns the packages installed; elsewhere only says what is missing.
 */
export async function installMissingHostTools(log: ProgressLog): Promise<string[]> {
  const { tools, missing } = findHostTools();
  const required = [...new Set(missing.map((m) => REQUIRED[m]))];
  const optional = tools.runsc ? [] : [OPTIONAL.runsc];
  if (!required.length && !optional.length) return [];
  if (process.platform !== 'linux' || process.getuid?.() !== 0 || !onPath('apt-get')) {
    if (required.length) log(`containerd stack off until installed: ${missing.join(', ')} (${INSTALL_HINT})`);
    return [];
  }
  const installed: string[] = [];
  log(`installing ${[...required, ...optional].join(' ')} with apt-get`);
  if ((await apt(['update'])) !== 0) throw new Error('apt-get update failed (output above)');
  if (required.length) {
    if ((await apt(['install', '-y', '--no-install-recommends', ...required])) !== 0)
      throw new Error(`apt-get install ${required.join(' ')} failed (output above)`);
    installed.push(...required);
  }
  if (optional.length) {
    if ((await apt(['install', '-y', '--no-install-recommends', ...optional])) === 0) installed.push(...optional);
    else log('runsc is not available from these apt sources: sandboxes will run under runc only');
  }
  const still = findHostTools().missing;
  if (still.length) throw new MissingHostToolsError(still);
  return installed;
}

/** apt-get with its output on our stderr (stdout is the CLI's result table). */
function apt(args: string[]): Promise<number | null> {
  return new Promise((resolve, reject) => {
    const child = spawn('apt-get', args, {
      stdio: ['ignore', 2, 2],
      env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' },
    });
    child.once('error', reject);
    child.once('exit', resolve);
  });
}

function onPath(name: string, extraDirs: readonly string[] = []): string | undefined {
  for (const dir of [...(process.env.PATH ?? '').split(path.delimiter), ...extraDirs]) {
    if (dir && existsSync(path.join(dir, name))) return path.join(dir, name);
  }
  return undefined;
}

/** True when the ELF file asks for a dynamic loader (a PT_INTERP program header). */
function hasInterpreter(file: string): boolean {
  const fd = openSync(file, 'r');
  try {
    const buf = Buffer.alloc(4096);
    readSync(fd, buf, 0, buf.length, 0);
    if (buf.readUInt32BE(0) !== 0x7f454c46 || buf[4] !== 2) return false; // not ELF64: let it fail later
    const phoff = Number(buf.readBigUInt64LE(0x20));
    const phentsize = buf.readUInt16LE(0x36);
    const phnum = buf.readUInt16LE(0x38);
    for (let i = 0; i < phnum && phoff + (i + 1) * phentsize <= buf.length; i++) {
      if (buf.readUInt32LE(phoff + i * phentsize) === 3 /* PT_INTERP */) return true;
    }
    return false;
  } finally {
    closeSync(fd);
  }
}
