/**
 * Zone settings (`/zones/{zone_id}/settings/{setting_id}`, and `/zones/{zone_id}/settings` for all
 * of them): GET answers the stored value or the
 * setting's default for a new Free zone; PATCH `{value}` validates and stores it. Both answer
 * `{id, value, editable, modified_on}` (`modified_on` is null until the first change, as the real
 * API answers untouched settings). Unknown setting → 404; invalid value → 400; a setting the
 * zone's plan does not include answers `editable: false` and refuses its PATCH (codes in CfErrors).
 */
import { Type } from '@sinclair/typebox';
import { CfErrors } from '../envelope.js';
import { planOf, type ZonePlan } from '../ruleset-limits.js';
import type { Route, RouteContext } from '../router.js';
import type { Zone } from '../store.js';
import { checkBody } from '../validate.js';
import { zoneFor } from './zones.js';

export interface SettingSpec {
  default: unknown;
  /** An error detail when the value is not allowed. */
  check: (value: unknown) => string | undefined;
}

const oneOf =
  (...allowed: readonly (string | number)[]) =>
  (value: unknown) =>
    allowed.includes(value as string | number) ? undefined : `must be one of ${allowed.join(', ')}`;
const onOff = (def: 'on' | 'off'): SettingSpec => ({ default: def, check: oneOf('on', 'off') });

/** The browser cache TTLs the dashboard offers (0 = respect existing headers). */
export const BROWSER_CACHE_TTLS = [
  0, 30, 60, 120, 300, 1200, 1800, 3600, 7200, 10800, 14400, 18000, 28800, 43200, 57600, 72000, 86400, 172800, 259200,
  345600, 432000, 691200, 1382400, 2073600, 2678400, 5356800, 16070400, 31536000,
] as const;

/** Defaults are those of a new Free-plan zone (ssl: `full`, as Automatic SSL/TLS sets it today). */
export const ZONE_SETTINGS: Readonly<Record<string, SettingSpec>> = {
  ssl: { default: 'full', check: oneOf('off', 'flexible', 'full', 'strict') },
  min_tls_version: { default: '1.0', check: oneOf('1.0', '1.1', '1.2', '1.3') },
  always_use_https: onOff('off'),
  automatic_https_rewrites: onOff('on'),
  tls_1_3: { default: 'on', check: oneOf('on', 'off', 'zrt') },
  cache_level: { default: 'aggressive', check: oneOf('aggressive', 'basic', 'simplified') },
  browser_cache_ttl: { default: 14400, check: oneOf(...BROWSER_CACHE_TTLS) },
  security_level: {
    default: 'medium',
    check: oneOf('off', 'essentially_off', 'low', 'medium', 'high', 'under_attack'),
  },
  brotli: onOff('on'),
  development_mode: onOff('off'),
  opportunistic_encryption: onOff('on'),
  http3: onOff('on'),
  '0rtt': onOff('off'),
  ipv6: onOff('on'),
  websockets: onOff('on'),
  always_online: onOff('off'),
  email_obfuscation: onOff('on'),
  hotlink_protection: onOff('off'),
  rocket_loader: onOff('off'),
  origin_error_page_pass_thru: onOff('off'),
  opportunistic_onion: onOff('on'),
  http2: onOff('on'),
  early_hints: onOff('off'),
  ip_geolocation: onOff('on'),
  server_side_exclude: onOff('on'),
  browser_check: onOff('on'),
  challenge_ttl: { default: 1800, check: oneOf(300, 900, 1800, 2700, 3600, 7200, 10800, 14400, 28800, 57600, 86400) },
  tls_client_auth: onOff('off'),
  sort_query_string_for_cache: onOff('off'),
  cache_by_device_type: onOff('off'),
  prefetch_preload: onOff('off'),
  polish: { default: 'off', check: oneOf('off', 'lossless', 'lossy') },
  webp: onOff('off'),
  mirage: onOff('off'),
  waf: onOff('off'),
  minify: {
    default: { css: 'off', html: 'off', js: 'off' },
    check: (v) => {
      const o = v as Record<string, unknown> | null;
      if (!o || typeof o !== 'object' || Array.isArray(o)) return 'must be an object {css, html, js}';
      for (const [k, x] of Object.entries(o))
        if (!['css', 'html', 'js'].includes(k) || (x !== 'on' && x !== 'off')) return `${k}: must be on or off`;
      return undefined;
    },
  },
};

const PLAN_ORDER: readonly ZonePlan[] = ['free', 'pro', 'business', 'enterprise'];

/**
 * The lowest plan whose zones may change a setting (absent: every plan). A zone below it reads the
 * setting with `editable: false`, and its PATCH is refused as a real Free zone's are ("Not allowed
 * to edit setting for …", code 1015, seen for waf, polish, webp, mirage, http2 on Free zones).
 */
export const SETTING_MIN_PLAN: Readonly<Record<string, ZonePlan>> = {
  // Plans of each: developers.cloudflare.com/rules/page-rules/reference/settings/ ("Plans" column)
  polish: 'pro',
  // WebP is an option of Polish (developers.cloudflare.com/images/polish/); real Free zones refuse it
  webp: 'pro',
  mirage: 'pro',
  // "Web Application Firewall (previous version)": Pro and above; a Free zone answers 1015
  waf: 'pro',
  cache_by_device_type: 'enterprise',
  sort_query_string_for_cache: 'enterprise',
  origin_error_page_pass_thru: 'enterprise',
  // developers.cloudflare.com/speed/optimization/content/prefetch-urls/ — Enterprise only
  prefetch_preload: 'enterprise',
  // developers.cloudflare.com/speed/optimization/protocol/http2/ — Free zones cannot turn HTTP/2 off
  http2: 'pro',
};

/** Whether the zone's plan lets it change the setting. */
export function settingEditable(zone: Pick<Zone, 'plan'>, id: string): boolean {
  const min = SETTING_MIN_PLAN[id];
  return !min || PLAN_ORDER.indexOf(planOf(zone.plan)) >= PLAN_ORDER.indexOf(min);
}

function settingOf(ctx: RouteContext): { zone: Zone; id: string; spec: SettingSpec } {
  const zone = zoneFor(ctx);
  const id = ctx.params.setting_id ?? '';
  const spec = Object.hasOwn(ZONE_SETTINGS, id) ? ZONE_SETTINGS[id] : undefined;
  if (!spec) throw CfErrors.settingNotFound(id);
  return { zone, id, spec };
}

function view(ctx: RouteContext, zone: Zone, id: string, spec: SettingSpec) {
  const stored = ctx.store.zoneSettings.get(`${zone.id}/${id}`);
  const result: Record<string, unknown> = {
    id,
    value: stored ? stored.value : spec.default,
    editable: settingEditable(zone, id),
    modified_on: stored?.modified_on ?? null,
  };
  if (id === 'development_mode') result.time_remaining = result.value === 'on' ? 10800 : 0;
  return result;
}

const PatchBody = Type.Object({ value: Type.Unknown() }, { additionalProperties: true });

export const settingRoutes: Route[] = [
  {
    // Every setting of the zone (the real API lists them all, in no documented order).
    method: 'GET',
    pattern: '/zones/:zone_id/settings',
    handler: (ctx) => {
      const zone = zoneFor(ctx);
      return { result: Object.entries(ZONE_SETTINGS).map(([id, spec]) => view(ctx, zone, id, spec)) };
    },
  },
  {
    method: 'GET',
    pattern: '/zones/:zone_id/settings/:setting_id',
    handler: (ctx) => {
      const { zone, id, spec } = settingOf(ctx);
      return { result: view(ctx, zone, id, spec) };
    },
  },
  {
    method: 'PATCH',
    pattern: '/zones/:zone_id/settings/:setting_id',
    handler: (ctx) => {
      const { zone, id, spec } = settingOf(ctx);
      const body = checkBody(PatchBody, ctx.body ?? {});
      if (!('value' in body)) throw CfErrors.invalidBody(['/value: value is required']);
      if (!settingEditable(zone, id)) throw CfErrors.settingNotAllowed(id);
      const problem = spec.check(body.value);
      if (problem) throw CfErrors.settingInvalidValue(id, problem);
      ctx.store.zoneSettings.set(`${zone.id}/${id}`, { value: body.value, modified_on: ctx.store.timestamp() });
      if (id === 'development_mode') zone.development_mode = body.value === 'on' ? 10800 : 0;
      return { result: view(ctx, zone, id, spec) };
    },
  },
];
