/**
 * The Linux capabilities of a pool's sandboxes: a default set, changed by the pool's
 * `sandboxSecurityContext.capabilities` ({add, drop}, the shape and meaning of a Kubernetes
 * container's `securityContext.capabilities`), and which namespaces the operator lets add what.
 * Pure: no I/O. Names are Kubernetes' (`NET_RAW`); the OCI spec's are `CAP_`-prefixed.
 */
import { ALL, CAPABILITY_NAMES, type CapabilityName } from '../api/capabilities.js';

export { ALL, CAPABILITY_NAMES, type CapabilityName };

/**
 * A sandbox's capabilities when its pool says nothing: containerd's default set (`defaultUnixCaps`,
 * the same in 1.6 and 2.x) without NET_RAW, MKNOD, SETFCAP, SYS_CHROOT and AUDIT_WRITE. NET_RAW lets
 * a sandbox open raw and packet sockets (sniff and spoof the traffic of its network namespace);
 * MKNOD makes device nodes, where the device cgroup allows only those /dev already holds;
 * SETFCAP sets file capabilities, which `no_new_privs` keeps from taking effect; SYS_CHROOT and
 * AUDIT_WRITE serve image builds and login tools, not sandboxed code. A pool opts back in with `add`.
 */
export const DEFAULT_CAPABILITY_NAMES: readonly CapabilityName[] = [
  'CHOWN',
  'DAC_OVERRIDE',
  'FSETID',
  'FOWNER',
  'SETGID',
  'SETUID',
  'SETPCAP',
  'NET_BIND_SERVICE',
  'KILL',
];

/** A pool's `sandboxSecurityContext.capabilities`. */
export interface CapabilitiesSpec {
  add?: readonly string[];
  drop?: readonly string[];
}

const KNOWN = new Set<string>(CAPABILITY_NAMES);

export function isCapabilityName(name: string): name is CapabilityName {
  return KNOWN.has(name);
}

/** The OCI name of a capability (`NET_RAW` → `CAP_NET_RAW`). */
export const ociCapability = (name: CapabilityName): string => `CAP_${name}`;

/**
 * The capabilities a sandbox runs with, as containerd's CRI applies a container's
 * `securityContext.capabilities` to the default set: `drop: [ALL]` empties it, then each named
 * `add` is added and each named `drop` removed (a name in both is dropped). Kernel order, so the
 * same setting always gives the same spec. Returns what is wrong instead when a name is unknown
 * or `add` holds ALL.
 */
export function sandboxCapabilities(spec: CapabilitiesSpec | undefined): CapabilityName[] | { error: string } {
  const add = spec?.add ?? [];
  const drop = spec?.drop ?? [];
  const unknown = [
    ...add.filter((n) => !isCapabilityName(n)).map((n) => `add: ${JSON.stringify(n)}`),
    ...drop.filter((n) => n !== ALL && !isCapabilityName(n)).map((n) => `drop: ${JSON.stringify(n)}`),
  ];
  if (unknown.length)
    return {
      error: `unknown capabilities (${unknown.join(', ')}); names as in Kubernetes, without CAP_: ${CAPABILITY_NAMES.join(', ')}${drop.length ? `, and ${ALL} in drop` : ''}`,
    };
  const set = new Set<string>(drop.includes(ALL) ? [] : DEFAULT_CAPABILITY_NAMES);
  for (const n of add) set.add(n);
  for (const n of drop) set.delete(n);
  return CAPABILITY_NAMES.filter((n) => set.has(n));
}

/** The capabilities a setting gives beyond the default set: what the operator must allow. */
export function addedBeyondDefault(spec: CapabilitiesSpec | undefined): CapabilityName[] {
  const caps = sandboxCapabilities(spec);
  if ('error' in caps) return [];
  return caps.filter((n) => !DEFAULT_CAPABILITY_NAMES.includes(n));
}

/** `NET_RAW,SYS_PTRACE` (the agent's flags and the Pod's environment) as names; empty: none. */
export function parseCapabilityList(s: string | undefined): string[] {
  return (s ?? '')
    .split(',')
    .map((x) => x.trim())
    .filter(Boolean);
}

/** Per capability, the namespaces whose pools may add it (`*`: every namespace). */
export type AllowedCapabilities = Partial<Record<CapabilityName, string[]>>;

/** The admission role's setting that lets namespaces add capabilities. */
export const ALLOWED_CAPABILITIES_SETTING = 'admission.sandboxCapabilities (DO_ADMISSION_SANDBOX_CAPABILITIES)';

/**
 * The operator's setting, JSON `{"NET_RAW": ["team-a"], "SYS_PTRACE": ["*"]}`, checked: known
 * names, lists of namespace names or `*`. Throws what is wrong (the admission role does not start).
 */
export function parseAllowedCapabilities(json: string | undefined): AllowedCapabilities {
  if (!json?.trim()) return {};
  let parsed: unknown;
  try {
    parsed = JSON.parse(json);
  } catch (err) {
    throw new Error(`${ALLOWED_CAPABILITIES_SETTING}: not JSON: ${(err as Error).message}`);
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed))
    throw new Error(`${ALLOWED_CAPABILITIES_SETTING}: must be an object, e.g. {"NET_RAW": ["team-a"]}`);
  const out: AllowedCapabilities = {};
  for (const [name, namespaces] of Object.entries(parsed)) {
    if (!isCapabilityName(name))
      throw new Error(
        `${ALLOWED_CAPABILITIES_SETTING}: ${JSON.stringify(name)} is not a capability (names without CAP_: ${CAPABILITY_NAMES.join(', ')})`,
      );
    if (
      !Array.isArray(namespaces) ||
      !namespaces.every((n) => typeof n === 'string' && (n === '*' || /^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/.test(n)))
    )
      throw new Error(
        `${ALLOWED_CAPABILITIES_SETTING}: ${name} must list namespace names or "*", not ${JSON.stringify(namespaces)}`,
      );
    out[name] = namespaces as string[];
  }
  return out;
}

/**
 * Why a pool in `namespace` may not have these capabilities, or undefined when it may: each one
 * beyond the default set must be allowed for the namespace by the operator.
 */
export function capabilitiesRefusal(
  namespace: string,
  spec: CapabilitiesSpec | undefined,
  allowed: AllowedCapabilities,
): string | undefined {
  const caps = sandboxCapabilities(spec);
  if ('error' in caps) return `spec.sandboxSecurityContext.capabilities: ${caps.error}`;
  const refused = addedBeyondDefault(spec).filter((n) => {
    const list = allowed[n] ?? [];
    return !list.includes('*') && !list.includes(namespace);
  });
  if (!refused.length) return undefined;
  return (
    `spec.sandboxSecurityContext.capabilities adds ${refused.join(', ')}, beyond the sandboxes' default set ` +
    `(${DEFAULT_CAPABILITY_NAMES.join(', ')}), and the operator has not allowed ${refused.length === 1 ? 'it' : 'them'} ` +
    `in namespace "${namespace}": an administrator lists the namespace under ${refused.join(', ')} ` +
    `in the setting ${ALLOWED_CAPABILITIES_SETTING} of the admission webhook`
  );
}
