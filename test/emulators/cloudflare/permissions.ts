/**
 * API token permissions: which permission group a request needs, and whether the token has it.
 * A token with `permissions` holds only those (`<group>:read`, `<group>:edit`; edit includes read);
 * without them it holds every group. Lacking one answers 403 with code 10000 "Authentication
 * error", as Cloudflare answers a token without the permission (e.g. Zone:Read but not Zone WAF:Edit).
 * The groups follow Cloudflare's permission groups, coarsened to what the emulator serves.
 */
import { CfErrors } from './envelope.js';

export const PERMISSION_GROUPS = [
  'zone', // Zone: zones list/get
  'dns', // DNS
  'zone_settings', // Zone Settings
  'rulesets', // Zone WAF, Transform Rules, Single Redirect, … (phase entrypoints)
  'cloudflare_tunnel', // Cloudflare Tunnel: tunnels, their configuration, routes, virtual networks
  'zero_trust', // Zero Trust: device profiles' lists, Gateway configuration
  'access', // Access: Organizations, Identity Providers, and Groups
] as const;
export type PermissionGroup = (typeof PERMISSION_GROUPS)[number];
export type Permission = `${PermissionGroup}:${'read' | 'edit'}`;

const BY_PATH: ReadonlyArray<[RegExp, PermissionGroup]> = [
  [/^\/zones\/[^/]+\/dns_records(\/|$)/, 'dns'],
  [/^\/zones\/[^/]+\/settings(\/|$)/, 'zone_settings'],
  [/^\/(zones|accounts)\/[^/]+\/rulesets(\/|$)/, 'rulesets'],
  [/^\/(zones|accounts)\/[^/]+\/access\//, 'access'],
  [/^\/accounts\/[^/]+\/(cfd_tunnel|teamnet)(\/|$)/, 'cloudflare_tunnel'],
  [/^\/accounts\/[^/]+\/(devices|gateway)(\/|$)/, 'zero_trust'],
  [/^\/zones(\/[^/]+)?\/?$/, 'zone'],
];

/**
 * Reads that need the Edit permission: a tunnel's token runs the tunnel, so Cloudflare asks for
 * Cloudflare Tunnel Write (developers.cloudflare.com/cloudflare-one/connections/connect-networks/configure-tunnels/remote-tunnel-permissions/).
 */
const WRITE_TO_READ: ReadonlyArray<RegExp> = [/^\/accounts\/[^/]+\/cfd_tunnel\/[^/]+\/token\/?$/];

/** The permission a request needs (undefined: none, e.g. `/user/tokens/verify`). */
export function requiredPermission(method: string, path: string): Permission | undefined {
  const group = BY_PATH.find(([re]) => re.test(path))?.[1];
  if (!group) return undefined;
  if (WRITE_TO_READ.some((re) => re.test(path))) return `${group}:edit`;
  return `${group}:${method === 'GET' || method === 'HEAD' ? 'read' : 'edit'}`;
}

/**
 * Throws Cloudflare's 403/10000 when a token with permissions lacks the one the request needs; a
 * read-only token (every permission a Read one) lacks every Edit, the reads that need it too.
 */
export function authorizePermission(
  token: { permissions?: ReadonlySet<string>; readOnly?: boolean },
  method: string,
  path: string,
): void {
  const needed = requiredPermission(method, path);
  if (token.readOnly && needed?.endsWith(':edit')) throw CfErrors.authentication();
  if (!token.permissions) return;
  if (!needed) return;
  const [group, level] = needed.split(':');
  if (token.permissions.has(needed) || (level === 'read' && token.permissions.has(`${group}:edit`))) return;
  throw CfErrors.authentication();
}
