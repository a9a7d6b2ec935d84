/**
 * The zone kinds of `networking.cloudflare-operator.io/v1alpha2`: CloudflareDomain (a zone and its
 * settings) and DNSRecord.
 *
 * Same names, scope, fields and enums as the original cloudflare-operator (StringKe/cloudflare-operator,
 * api/v1alpha2); its defaults too, except on CloudflareDomain's settings (see Bool below). Added
 * here: CloudflareDomain `priority` (several CloudflareDomains of one zone are merged per setting,
 * lower number wins) and `restoreOnDelete`, DNSRecord `adoptExisting`, and on
 * every status `conditions`, `observedGeneration`, `syncState`, `message` and a `Ready` column.
 */
import { Type, type Static } from '@sinclair/typebox';
import type { KubernetesObject } from '@kubernetes/client-node';
import { StringEnum, Timestamp } from './schema.js';
import { defineKind } from './kind.js';
import {
  CLOUDFLARE_GROUP,
  CLOUDFLARE_VERSION,
  CloudflareDetails,
  CredentialsReference,
  READY_COLUMN,
  SourcePriority,
  sourceStatusFields,
} from './cloudflare.js';

// ---------------------------------------------------------------------------------------------
// CloudflareDomain
// ---------------------------------------------------------------------------------------------

export const CLOUDFLARE_DOMAIN_STATES = ['Pending', 'Verifying', 'Ready', 'Error'] as const;
export type CloudflareDomainState = (typeof CLOUDFLARE_DOMAIN_STATES)[number];

export const SSL_MODES = ['off', 'flexible', 'full', 'strict', 'full_strict'] as const;
export const TLS_VERSIONS = ['1.0', '1.1', '1.2', '1.3'] as const;
export const FEATURE_TOGGLES = ['on', 'off'] as const;
export const CACHE_LEVELS = ['bypass', 'basic', 'simplified', 'aggressive'] as const;
export const SECURITY_LEVELS = ['off', 'essentially_off', 'low', 'medium', 'high', 'under_attack'] as const;
export const POLISH_MODES = ['off', 'lossless', 'lossy'] as const;
export const TIERED_CACHE_TOPOLOGIES = ['smart', 'generic'] as const;
export const CONFIG_SYNC_STATES = ['Synced', 'Syncing', 'Error', 'Unknown'] as const;

/** A hostname-like domain name, as the original's pattern. */
export const DOMAIN_PATTERN = '^[a-zA-Z0-9]([a-zA-Z0-9-]*[a-zA-Z0-9])?(\\.[a-zA-Z0-9]([a-zA-Z0-9-]*[a-zA-Z0-9])?)*$';

/**
 * A zone setting toggle. The settings carry no schema defaults (the original's default is in the
 * description): the apiserver would fill them in, and every CloudflareDomain would then set every
 * setting — a default nobody asked for beating another resource's value. Unset = not managed.
 */
const Bool = (originalDefault: boolean, description?: string) =>
  Type.Optional(
    Type.Boolean({
      description: `${description ? `${description} ` : ''}(The original's default: ${originalDefault}.)`,
    }),
  );
/** A setting's enum without a schema default (see Bool). */
const Choice = <const T extends readonly string[]>(values: T, originalDefault: T[number], description?: string) =>
  Type.Optional(
    StringEnum(values, {
      description: `${description ? `${description} ` : ''}(The original's default: ${originalDefault}.)`,
    }),
  );

export const SecretReference = Type.Object({
  name: Type.String({ description: 'Name of the Secret.' }),
  namespace: Type.Optional(Type.String({ description: 'Namespace of the Secret.' })),
});

export const SSLConfig = Type.Object({
  mode: Choice(SSL_MODES, 'full', 'SSL/TLS encryption mode.'),
  minTLSVersion: Choice(TLS_VERSIONS, '1.2'),
  tls13: Choice(FEATURE_TOGGLES, 'on'),
  alwaysUseHttps: Bool(true, 'Redirect all HTTP requests to HTTPS.'),
  automaticHttpsRewrites: Bool(true, 'Rewrite HTTP links to HTTPS in HTML.'),
  opportunisticEncryption: Bool(true),
  authenticatedOriginPull: Type.Optional(
    Type.Object(
      {
        enabled: Bool(false),
        certificateSecretRef: Type.Optional(
          Type.Object(
            {
              ...SecretReference.properties,
              // The original's schema (its credentials' Secret reference, reused); never read there.
              apiTokenKey: Type.Optional(Type.String()),
              apiKeyKey: Type.Optional(Type.String()),
              emailKey: Type.Optional(Type.String()),
            },
            {
              description:
                "The original's field, accepted so its manifests apply; refused when set (InvalidSpec): no custom origin-pull certificate is uploaded.",
            },
          ),
        ),
      },
      { description: 'mTLS between Cloudflare and the origin.' },
    ),
  ),
});

export const CacheConfig = Type.Object({
  browserTTL: Type.Optional(
    Type.Integer({ minimum: 0, maximum: 31536000, description: 'Browser cache TTL in seconds (0: respect origin).' }),
  ),
  developmentMode: Bool(false, 'Bypass the cache (turns itself off after 3 hours).'),
  cacheLevel: Choice(CACHE_LEVELS, 'aggressive'),
  tieredCache: Type.Optional(
    Type.Object({
      enabled: Bool(true),
      topology: Choice(TIERED_CACHE_TOPOLOGIES, 'smart'),
    }),
  ),
  cacheReserve: Type.Optional(Type.Object({ enabled: Bool(false) })),
  alwaysOnline: Bool(true, 'Serve stale content while the origin is down.'),
  cacheByDeviceType: Bool(false, 'Enterprise plan.'),
  sortQueryStringForCache: Bool(false, 'Enterprise plan.'),
});

export const SecurityConfig = Type.Object({
  level: Choice(SECURITY_LEVELS, 'medium'),
  browserCheck: Bool(true, 'Browser integrity check.'),
  emailObfuscation: Bool(true),
  serverSideExclude: Bool(true),
  hotlinkProtection: Bool(false),
  challengePassage: Type.Optional(
    Type.Integer({
      minimum: 300,
      maximum: 31536000,
      description: "Seconds after a challenge. (The original's default: 1800.)",
    }),
  ),
  waf: Type.Optional(Type.Object({ enabled: Bool(false) })),
});

export const PerformanceConfig = Type.Object({
  brotli: Bool(true),
  http2: Bool(true),
  http3: Bool(true),
  zeroRTT: Bool(true),
  minify: Type.Optional(Type.Object({ html: Bool(false), css: Bool(false), javascript: Bool(false) })),
  polish: Choice(POLISH_MODES, 'off', 'Pro plan or higher.'),
  webp: Bool(false, 'Pro plan or higher.'),
  mirage: Bool(false, 'Pro plan or higher.'),
  earlyHints: Bool(true),
  rocketLoader: Bool(false),
  prefetchPreload: Bool(true),
  ipGeolocation: Bool(true),
  websockets: Bool(true),
});

export const CloudflareDomainSpec = Type.Object({
  domain: Type.String({ pattern: DOMAIN_PATTERN, description: 'The apex domain in Cloudflare, e.g. example.com.' }),
  credentialsRef: Type.Optional(CredentialsReference),
  isDefault: Type.Optional(
    Type.Boolean({ default: false, description: 'The domain of resources that name none. At most one.' }),
  ),
  zoneId: Type.Optional(Type.String({ description: 'The zone ID; skips the zone lookup.' })),
  ssl: Type.Optional(SSLConfig),
  cache: Type.Optional(CacheConfig),
  security: Type.Optional(SecurityConfig),
  performance: Type.Optional(PerformanceConfig),
  priority: SourcePriority(),
  restoreOnDelete: Type.Optional(
    Type.Boolean({
      description:
        'When no CloudflareDomain sets a setting any more, write back the value it had before the operator first ' +
        'took it (kept on the CloudflareSyncState). Default: leave the last value, as the original did.',
    }),
  ),
});

export const CloudflareDomainStatus = Type.Object({
  state: Type.Optional(StringEnum(CLOUDFLARE_DOMAIN_STATES)),
  zoneId: Type.Optional(Type.String()),
  zoneName: Type.Optional(Type.String()),
  accountId: Type.Optional(Type.String()),
  nameServers: Type.Optional(Type.Array(Type.String())),
  zoneStatus: Type.Optional(Type.String({ description: 'Status of the zone in Cloudflare (active, pending, …).' })),
  lastVerifiedTime: Type.Optional(Timestamp()),
  configSyncStatus: Type.Optional(
    Type.Object({
      ssl: Type.Optional(StringEnum(CONFIG_SYNC_STATES)),
      cache: Type.Optional(StringEnum(CONFIG_SYNC_STATES)),
      security: Type.Optional(StringEnum(CONFIG_SYNC_STATES)),
      performance: Type.Optional(StringEnum(CONFIG_SYNC_STATES)),
      lastSyncTime: Type.Optional(Type.String()),
      errorMessage: Type.Optional(Type.String()),
    }),
  ),
  ...sourceStatusFields,
});

export type CloudflareDomainSpec = Static<typeof CloudflareDomainSpec>;
export type CloudflareDomainStatus = Static<typeof CloudflareDomainStatus>;

export interface CloudflareDomain extends KubernetesObject {
  spec: CloudflareDomainSpec;
  status?: CloudflareDomainStatus;
}

export const CloudflareDomainKind = defineKind({
  group: CLOUDFLARE_GROUP,
  version: CLOUDFLARE_VERSION,
  kind: 'CloudflareDomain',
  plural: 'cloudflaredomains',
  singular: 'cloudflaredomain',
  shortNames: ['cfdomain', 'cfdom'],
  scope: 'Cluster',
  description:
    'A Cloudflare zone: its ID for the other kinds (longest suffix match of a hostname) and its SSL, cache, ' +
    'security and performance settings. Several CloudflareDomains of one zone are merged by priority.',
  spec: CloudflareDomainSpec,
  status: CloudflareDomainStatus,
  printerColumns: [
    { name: 'Domain', type: 'string', jsonPath: '.spec.domain' },
    { name: 'Zone ID', type: 'string', jsonPath: '.status.zoneId' },
    { name: 'Default', type: 'boolean', jsonPath: '.spec.isDefault' },
    { name: 'State', type: 'string', jsonPath: '.status.state' },
    READY_COLUMN,
  ],
});

// ---------------------------------------------------------------------------------------------
// DNSRecord
// ---------------------------------------------------------------------------------------------

export const DNS_RECORD_TYPES = [
  'A',
  'AAAA',
  'CNAME',
  'TXT',
  'MX',
  'NS',
  'SRV',
  'CAA',
  'CERT',
  'DNSKEY',
  'DS',
  'HTTPS',
  'LOC',
  'NAPTR',
  'SMIMEA',
  'SSHFP',
  'SVCB',
  'TLSA',
  'URI',
] as const;
export type DNSRecordType = (typeof DNS_RECORD_TYPES)[number];

const OptInt = () => Type.Optional(Type.Integer());
const OptStr = () => Type.Optional(Type.String());

export const DNSRecordData = Type.Object(
  {
    service: OptStr(),
    proto: OptStr(),
    weight: OptInt(),
    port: OptInt(),
    target: OptStr(),
    flags: OptInt(),
    tag: OptStr(),
    value: OptStr(),
    algorithm: OptInt(),
    certificate: OptStr(),
    keyTag: OptInt(),
    usage: OptInt(),
    selector: OptInt(),
    matchingType: OptInt(),
    latDegrees: OptInt(),
    latMinutes: OptInt(),
    latSeconds: OptStr(),
    latDirection: OptStr(),
    longDegrees: OptInt(),
    longMinutes: OptInt(),
    longSeconds: OptStr(),
    longDirection: OptStr(),
    altitude: OptStr(),
    size: OptStr(),
    precisionHorz: OptStr(),
    precisionVert: OptStr(),
    content: Type.Optional(Type.String({ description: 'URI records.' })),
  },
  { description: 'Type-specific data: SRV, CAA, CERT/SSHFP/TLSA, LOC, URI.' },
);

export const DNSRecordSpec = Type.Object({
  name: Type.String({ maxLength: 255, description: 'Record name, e.g. www or www.example.com.' }),
  type: StringEnum(DNS_RECORD_TYPES),
  content: Type.String({ description: 'Record content.' }),
  ttl: Type.Optional(Type.Integer({ minimum: 1, default: 1, description: 'TTL in seconds; 1 = automatic.' })),
  proxied: Type.Optional(Type.Boolean({ default: false, description: 'Proxy through Cloudflare.' })),
  priority: Type.Optional(
    Type.Integer({ minimum: 0, maximum: 65535, description: 'MX/SRV priority (not a source priority).' }),
  ),
  comment: Type.Optional(Type.String({ maxLength: 100 })),
  tags: Type.Optional(Type.Array(Type.String())),
  data: Type.Optional(DNSRecordData),
  cloudflare: CloudflareDetails,
  adoptExisting: Type.Optional(
    Type.Boolean({
      default: false,
      description:
        'Take over an existing record of the same name and type that no operator marks as its own. When false, ' +
        'such a record is left alone and this DNSRecord reports the conflict.',
    }),
  ),
});

export const DNSRecordStatus = Type.Object({
  recordId: Type.Optional(Type.String({ description: 'The Cloudflare DNS record ID.' })),
  zoneId: Type.Optional(Type.String({ description: 'The Cloudflare zone ID.' })),
  fqdn: Type.Optional(Type.String({ description: 'The fully qualified name.' })),
  state: Type.Optional(Type.String()),
  ...sourceStatusFields,
});

export type DNSRecordSpec = Static<typeof DNSRecordSpec>;
export type DNSRecordStatus = Static<typeof DNSRecordStatus>;

export interface DNSRecord extends KubernetesObject {
  spec: DNSRecordSpec;
  status?: DNSRecordStatus;
}

export const DNSRecordKind = defineKind({
  group: CLOUDFLARE_GROUP,
  version: CLOUDFLARE_VERSION,
  kind: 'DNSRecord',
  plural: 'dnsrecords',
  singular: 'dnsrecord',
  shortNames: ['dnsrec'],
  scope: 'Namespaced',
  description: 'A DNS record of a Cloudflare zone.',
  spec: DNSRecordSpec,
  status: DNSRecordStatus,
  printerColumns: [
    { name: 'Type', type: 'string', jsonPath: '.spec.type' },
    { name: 'Name', type: 'string', jsonPath: '.spec.name' },
    { name: 'Content', type: 'string', jsonPath: '.spec.content' },
    { name: 'Proxied', type: 'boolean', jsonPath: '.spec.proxied' },
    { name: 'State', type: 'string', jsonPath: '.status.state' },
    READY_COLUMN,
  ],
});

/** The two zone kinds, in the order the CRD generator lists them. */
export const CLOUDFLARE_ZONE_KINDS = [CloudflareDomainKind, DNSRecordKind] as const;
