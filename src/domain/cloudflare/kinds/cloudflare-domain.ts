/**
 * CloudflareDomain (cluster-scoped): a zone's settings. Every CloudflareDomain of one zone feeds
 * the target `CloudflareDomain/<zoneId>`, merged per setting by priority (./../settings.ts): each
 * setting is written under its own Cloudflare name. Only the fields a resource sets are managed
 * (the CRD has no defaults for them).
 *
 * The original took the first CloudflareDomain's settings only and mapped
 * `authenticatedOriginPull` onto `origin_error_page_pass_thru`; here it is `tls_client_auth`
 * (zone-level Authenticated Origin Pulls). `tieredCache`, `cacheReserve` and the origin-pull
 * certificate are separate Cloudflare APIs, not zone settings: they are accepted and not written
 * (the README says so).
 */
import { CloudflareDomainKind, type CloudflareDomainSpec } from '../../../api/cloudflare-zones.js';
import type { SettingItem } from '../settings.js';
import type { SourceKindRules } from './types.js';
import { HOSTNAME } from './validation.js';

const onOff = (b: boolean | undefined) => (b === undefined ? undefined : b ? 'on' : 'off');

/** The spec's settings as Cloudflare names and values, in a stable order; unset fields are absent. */
export function zoneSettingsOf(spec: CloudflareDomainSpec): SettingItem[] {
  const { ssl, cache, security, performance: perf } = spec;
  const minify = perf?.minify;
  const pairs: [string, unknown][] = [
    ['ssl', ssl?.mode === 'full_strict' ? 'strict' : ssl?.mode],
    ['min_tls_version', ssl?.minTLSVersion],
    ['tls_1_3', ssl?.tls13],
    ['always_use_https', onOff(ssl?.alwaysUseHttps)],
    ['automatic_https_rewrites', onOff(ssl?.automaticHttpsRewrites)],
    ['opportunistic_encryption', onOff(ssl?.opportunisticEncryption)],
    ['tls_client_auth', onOff(ssl?.authenticatedOriginPull?.enabled)],
    ['browser_cache_ttl', cache?.browserTTL],
    ['development_mode', onOff(cache?.developmentMode)],
    ['cache_level', cache?.cacheLevel],
    ['always_online', onOff(cache?.alwaysOnline)],
    ['cache_by_device_type', onOff(cache?.cacheByDeviceType)],
    ['sort_query_string_for_cache', onOff(cache?.sortQueryStringForCache)],
    ['security_level', security?.level],
    ['browser_check', onOff(security?.browserCheck)],
    ['email_obfuscation', onOff(security?.emailObfuscation)],
    ['server_side_exclude', onOff(security?.serverSideExclude)],
    ['hotlink_protection', onOff(security?.hotlinkProtection)],
    ['challenge_ttl', security?.challengePassage],
    ['waf', onOff(security?.waf?.enabled)],
    ['brotli', onOff(perf?.brotli)],
    ['http2', onOff(perf?.http2)],
    ['http3', onOff(perf?.http3)],
    ['0rtt', onOff(perf?.zeroRTT)],
    [
      'minify',
      minify && (minify.html !== undefined || minify.css !== undefined || minify.javascript !== undefined)
        ? { html: onOff(minify.html ?? false), css: onOff(minify.css ?? false), js: onOff(minify.javascript ?? false) }
        : undefined,
    ],
    ['polish', perf?.polish],
    ['webp', onOff(perf?.webp)],
    ['mirage', onOff(perf?.mirage)],
    ['early_hints', onOff(perf?.earlyHints)],
    ['rocket_loader', onOff(perf?.rocketLoader)],
    ['prefetch_preload', onOff(perf?.prefetchPreload)],
    ['ip_geolocation', onOff(perf?.ipGeolocation)],
    ['websockets', onOff(perf?.websockets)],
  ];
  return pairs.filter(([, v]) => v !== undefined).map(([id, value]) => ({ id, value }));
}

export const cloudflareDomainRules: SourceKindRules<CloudflareDomainSpec> = {
  definition: CloudflareDomainKind,
  clusterScoped: true,
  // A zone has a handful of CloudflareDomains: the sync GETs each (no `list` on the kind).
  oneSourcePerTarget: true,
  // The original's CloudflareDomain states are Pending | Verifying | Ready | Error.
  syncingState: 'Pending',
  priority: (spec) => spec.priority ?? 100,
  credentialsRef: (spec) => spec.credentialsRef?.name,
  zone: (spec) => spec.domain,
  validate(spec) {
    const problems: string[] = [];
    if (!HOSTNAME.test(spec.domain ?? ''))
      problems.push(`spec.domain: ${JSON.stringify(spec.domain)} is not a domain name`);
    // The original accepted it and never read it; a certificate nobody uploads must not look honoured.
    if (spec.ssl?.authenticatedOriginPull?.certificateSecretRef)
      problems.push(
        "spec.ssl.authenticatedOriginPull.certificateSecretRef: a zone's own origin-pull certificate is not uploaded by the operator (the original never did either); remove it — enabled alone turns on Cloudflare's shared certificate",
      );
    return problems;
  },
  targets: (_spec, place) =>
    place.zoneId ? [{ resourceType: 'CloudflareDomain', accountId: place.accountId, zoneId: place.zoneId }] : [],
  contribution(spec, target) {
    if (target.resourceType !== 'CloudflareDomain') return { entries: [] };
    const restore = spec.restoreOnDelete ? { restoreOnDelete: true } : {};
    return { entries: zoneSettingsOf(spec).map((s) => ({ ...s, ...restore })) };
  },
};
