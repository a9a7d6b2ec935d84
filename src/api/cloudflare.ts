/**
 * The Cloudflare kinds (`networking.cloudflare-operator.io/v1alpha2`): CloudflareSyncState (the
 * aggregated state one Cloudflare object is synced from), CloudflareCredentials, and the source
 * kinds that feed sync states: DeviceSettingsPolicy, ZoneRuleset, TransformRule, RedirectRule.
 *
 * Same group, version, names, scope, fields, enums and defaults as the original cloudflare-operator
 * (StringKe/cloudflare-operator, api/v1alpha2), so its manifests apply unchanged. Added here: a
 * `priority` on each source kind (lower wins when several sources feed one sync state) and, on
 * their status, `syncState` (the CloudflareSyncState they feed) and a `Ready` printer column.
 *
 * Addresses (CIDRs) and Cloudflare Rules expressions are deliberately not validated by the
 * schema: a bad one must reach the operator, which reports it on status.
 */
import { Type, type Static, type TUnsafe } from '@sinclair/typebox';
import type { KubernetesObject } from '@kubernetes/client-node';
import { Conditions, StringEnum, Timestamp } from './schema.js';
import { defineKind, type PrinterColumn } from './kind.js';

export const CLOUDFLARE_GROUP = 'networking.cloudflare-operator.io';
export const CLOUDFLARE_VERSION = 'v1alpha2';
export const CLOUDFLARE_API_VERSION = `${CLOUDFLARE_GROUP}/${CLOUDFLARE_VERSION}`;

/** Set on every source object (DeviceSettingsPolicy, ZoneRuleset, …) while it contributes to a sync state. */
export const CLOUDFLARE_SOURCE_FINALIZER = 'cloudflare-operator.io/sync-source';

/**
 * The finalizers the original operators (StringKe's, adyanth's) put on the kinds served here. An
 * object they made carries one; nothing here would ever remove it, so the deletion of a migrated
 * object would hang. The source's workflow treats one like its own: the deletion removes the
 * source's items, then releases them all.
 */
export const ORIGINAL_FINALIZERS: readonly string[] = [
  'cloudflare-operator.io/finalizer',
  'cloudflare.com/finalizer',
  'cfargotunnel.com/finalizer',
  'tunnelconfig.sync.cloudflare-operator.io/finalizer',
  'tunnellifecycle.sync.cloudflare-operator.io/finalizer',
  'cloudflare.com/devicesettingspolicy-finalizer',
  'devicesettingspolicy.networking.cloudflare-operator.io/finalizer',
  'cloudflare.com/zone-ruleset-finalizer',
  'cloudflare.com/transform-rule-finalizer',
  'cloudflare.com/redirect-rule-finalizer',
  'cloudflare.com/virtualnetwork-finalizer',
  'virtualnetwork.networking.cloudflare-operator.io/finalizer',
  'dnsrecord.networking.cloudflare-operator.io/finalizer',
  'cloudflare.com/domain-finalizer',
  'gatewayconfiguration.networking.cloudflare-operator.io/finalizer',
  'accessgroup.networking.cloudflare-operator.io/finalizer',
  'accessidentityprovider.networking.cloudflare-operator.io/finalizer',
];

/**
 * The finalizers the original (StringKe's) put on objects that are not sources here: every
 * Ingress of its class, every Gateway of its class, a tunnel's Secret (`…-<tunnel name>`), each
 * CloudflareCredentials, and its own CloudflareSyncStates (`<kind>.sync.cloudflare-operator.io/
 * finalizer`). Nothing here would remove them, so deleting such an object (or its namespace, or
 * the CRD) would hang: the operator releases them where it meets them
 * (src/activities/cloudflare/original-finalizers.ts).
 */
export const ORIGINAL_INGRESS_FINALIZER = 'ingress.cloudflare-operator.io/finalizer';
export const ORIGINAL_GATEWAY_FINALIZER = 'gateway.cloudflare-operator.io/finalizer';
export const ORIGINAL_SECRET_FINALIZER_PREFIX = 'cloudflare-operator.io/secret-finalizer-';
export const ORIGINAL_CREDENTIALS_FINALIZER = 'cloudflare.com/credentials-finalizer';
/** The original's SyncState finalizers: `tunnelconfig.sync.cloudflare-operator.io/finalizer`, `dns.sync.…`, … */
export const isOriginalSyncStateFinalizer = (f: string) =>
  /^[a-z0-9-]+\.sync\.cloudflare-operator\.io\/finalizer$/.test(f);

/**
 * Annotation on a source: `Orphan` leaves its items in Cloudflare when it is deleted, and releases
 * the object at once — also the way out when its credentials are gone and nothing can be removed.
 * Unset (or `Delete`): its items are removed before the object goes.
 */
export const CLOUDFLARE_DELETION_POLICY_ANNOTATION = 'cloudflare-operator.io/deletion-policy';

/**
 * Annotation on a Tunnel, ClusterTunnel, AccessGroup or AccessIdentityProvider: the ID of the
 * Cloudflare object the operator made for it. Its status says the same, but status is not kept by
 * backup/restore or `kubectl get -o yaml | kubectl apply`, and a SyncState may be deleted: the
 * annotation is what lets the operator know its object again (checked against the name it wants).
 */
export const CLOUDFLARE_ID_ANNOTATION = 'cloudflare-operator.io/cloudflare-id';

/**
 * Annotation on a settings target's CloudflareSyncState: its `status.managedSettings` (who holds
 * which setting and the value it had before the operator took it), kept where a lost status does
 * not take it.
 */
export const MANAGED_SETTINGS_ANNOTATION = 'cloudflare-operator.io/managed-settings';

/** An integer enum as Kubernetes expects it (`type: integer, enum: [...]`), typed as a union. */
function IntegerEnum<const T extends readonly number[]>(
  values: T,
  opts: Record<string, unknown> = {},
): TUnsafe<T[number]> {
  return Type.Unsafe<T[number]>({ type: 'integer', enum: [...values], ...opts });
}

/** An object whose unknown fields the apiserver keeps (runtime.RawExtension, free-form config). */
const FreeForm = (description: string) =>
  Type.Object({}, { 'x-kubernetes-preserve-unknown-fields': true, description });

/** map[string]string. */
const StringMap = (description: string) => Type.Object({}, { additionalProperties: Type.String(), description });

/** The priority every source kind adds: lower wins when several sources feed one sync state. */
export const SourcePriority = (defaultPriority = 100) =>
  Type.Optional(
    Type.Integer({
      minimum: 0,
      default: defaultPriority,
      description: 'Order among the sources of one CloudflareSyncState: lower number = higher priority.',
    }),
  );

/** The status fields every source kind adds to the original's. */
export const sourceStatusFields = {
  conditions: Type.Optional(Conditions),
  observedGeneration: Type.Optional(Type.Integer({ format: 'int64', minimum: 0 })),
  syncState: Type.Optional(Type.String({ description: 'Name of the CloudflareSyncState this object feeds.' })),
  message: Type.Optional(Type.String({ description: 'Additional information about the current state.' })),
};

export const READY_COLUMN: PrinterColumn = {
  name: 'Ready',
  type: 'string',
  jsonPath: '.status.conditions[?(@.type=="Ready")].status',
};

/** Reference to a CloudflareCredentials object. */
export const CredentialsReference = Type.Object(
  { name: Type.String({ minLength: 1, description: 'Name of the CloudflareCredentials resource.' }) },
  { description: 'References a CloudflareCredentials resource.' },
);
export type CredentialsReference = Static<typeof CredentialsReference>;

/** The state the original's rule kinds report. */
export const RULE_STATES = ['Pending', 'Syncing', 'Ready', 'Error'] as const;
export type RuleState = (typeof RULE_STATES)[number];

// ---------------------------------------------------------------------------------------------
// CloudflareSyncState
// ---------------------------------------------------------------------------------------------

export const SYNC_RESOURCE_TYPES = [
  'TunnelConfiguration',
  'TunnelLifecycle',
  'DNSRecord',
  'AccessApplication',
  'AccessGroup',
  'AccessPolicy',
  'AccessServiceToken',
  'AccessIdentityProvider',
  'VirtualNetwork',
  'NetworkRoute',
  'PrivateService',
  'R2Bucket',
  'R2BucketDomain',
  'R2BucketNotification',
  'ZoneRuleset',
  'TransformRule',
  'RedirectRule',
  'GatewayRule',
  'GatewayList',
  'GatewayConfiguration',
  'OriginCACertificate',
  'CloudflareDomain',
  'DomainRegistration',
  'DevicePostureRule',
  'DeviceSettingsPolicy',
  'WARPConnector',
  'PagesProject',
  'PagesDomain',
  'PagesDeployment',
  // Added here: the CNAMEs of every tunnel hostname in one zone (the original wrote them outside any SyncState).
  'TunnelDNS',
] as const;
export type SyncResourceType = (typeof SYNC_RESOURCE_TYPES)[number];

/** The original's four, and Failed: retries exhausted or a permanent error (see failureReason). */
export const SYNC_STATUSES = ['Pending', 'Syncing', 'Synced', 'Error', 'Failed'] as const;
export type SyncStatus = (typeof SYNC_STATUSES)[number];

export const SourceReference = Type.Object(
  {
    kind: Type.String({ minLength: 1, description: 'Kind of the source resource, e.g. ZoneRuleset.' }),
    namespace: Type.Optional(Type.String({ description: 'Namespace of the source (empty for cluster-scoped).' })),
    name: Type.String({ minLength: 1, description: 'Name of the source resource.' }),
  },
  { description: 'The Kubernetes resource that contributes configuration.' },
);
export type SyncSourceRef = { kind: string; namespace?: string; name: string };

export const ConfigSource = Type.Object({
  ref: SourceReference,
  priority: Type.Optional(
    Type.Integer({
      default: 100,
      description: 'Order when resolving conflicts (lower number = higher priority). Tunnel settings use 10.',
    }),
  ),
  config: FreeForm('The configuration contributed by this source.'),
  orphaned: Type.Optional(
    Type.Boolean({
      description:
        'The source was deleted with deletion policy Orphan: its items stay in Cloudflare, never changed or removed.',
    }),
  ),
  createdAt: Type.Optional(
    Timestamp({
      description:
        "The source object's creation time: its place among sources of equal priority, kept when its object is gone (orphaned).",
    }),
  ),
  lastUpdated: Type.Optional(Timestamp({ description: 'When this source was last updated.' })),
});
export type ConfigSource = Static<typeof ConfigSource>;

export const CloudflareSyncStateSpec = Type.Object({
  resourceType: StringEnum(SYNC_RESOURCE_TYPES, { description: 'The type of Cloudflare resource being synced.' }),
  cloudflareId: Type.String({ description: 'The Cloudflare resource identifier (e.g. tunnel ID, record ID).' }),
  accountId: Type.String({ description: 'The Cloudflare account ID.' }),
  zoneId: Type.Optional(Type.String({ description: 'The Cloudflare zone ID (DNS and zone-level resources).' })),
  credentialsRef: CredentialsReference,
  sources: Type.Optional(
    Type.Array(ConfigSource, { description: 'Configuration from each contributing Kubernetes resource.' }),
  ),
  packedConfigs: Type.Optional(
    Type.String({
      description:
        "The sources' configurations as base64 of gzip'd JSON (source → configuration), in place of sources[].config " +
        'once those pass 256 KiB: what a source whose spec became invalid keeps contributing.',
    }),
  ),
});

/** A setting held by the operator on a settings target (no marker can say so in Cloudflare). */
export const ManagedSetting = Type.Object({
  setting: Type.String({ description: "Cloudflare's name of the setting, e.g. min_tls_version." }),
  previous: Type.Optional(
    Type.String({
      description: 'The value before the operator first took the setting, as JSON (absent: Cloudflare had none).',
    }),
  ),
  heldBy: Type.String({ description: 'The source whose value is written: Kind/Namespace/Name or Kind/Name.' }),
  restoreOnDelete: Type.Optional(
    Type.Boolean({ description: 'Write `previous` back once no source sets the setting any more.' }),
  ),
});
export type ManagedSetting = Static<typeof ManagedSetting>;

export const CloudflareSyncStateStatus = Type.Object({
  syncStatus: Type.Optional(StringEnum(SYNC_STATUSES)),
  lastSyncTime: Type.Optional(Timestamp({ description: 'The last successful sync to Cloudflare.' })),
  configVersion: Type.Optional(
    Type.Integer({ description: 'The Cloudflare configuration version after the last sync.' }),
  ),
  configHash: Type.Optional(
    Type.String({ description: 'SHA-256 of the aggregated configuration; unchanged → no sync.' }),
  ),
  aggregatedConfig: Type.Optional(FreeForm('The merged configuration of all sources.')),
  error: Type.Optional(Type.String({ description: 'The last error message.' })),
  resultData: Type.Optional(StringMap('Resource-specific output of the sync (e.g. a tunnel ID).')),
  conditions: Type.Optional(Conditions),
  observedGeneration: Type.Optional(Type.Integer({ format: 'int64', minimum: 0 })),
  retryCount: Type.Optional(Type.Integer({ minimum: 0, description: 'Failed sync attempts since the last success.' })),
  maxRetries: Type.Optional(Type.Integer({ minimum: 0, description: 'Attempts before syncStatus becomes Failed.' })),
  failedAt: Type.Optional(Timestamp({ description: 'When syncStatus became Failed.' })),
  errorCategory: Type.Optional(
    Type.String({ description: 'Class of the last error, e.g. Auth, RateLimit, Validation.' }),
  ),
  failureReason: Type.Optional(Type.String({ description: 'Why syncStatus is Failed.' })),
  rejectedSources: Type.Optional(
    Type.Array(
      Type.Object({
        source: Type.String({ description: 'Kind/Namespace/Name of the source.' }),
        generation: Type.Integer({ description: 'The generation of the source Cloudflare refused.' }),
        reason: Type.String(),
        message: Type.String({ description: "Cloudflare's answer." }),
      }),
      {
        description:
          'Sources whose items Cloudflare refused: left as they were while the others are written; tried again when something changes.',
      },
    ),
  ),
  managedSettings: Type.Optional(
    Type.Array(ManagedSetting, {
      description:
        'Settings targets (zone settings, gateway configuration): each setting the operator holds, who holds it and ' +
        'the value it had before the operator first took it.',
    }),
  ),
});

export type CloudflareSyncStateSpec = Static<typeof CloudflareSyncStateSpec>;
export type CloudflareSyncStateStatus = Static<typeof CloudflareSyncStateStatus>;

export interface CloudflareSyncState extends KubernetesObject {
  spec: CloudflareSyncStateSpec;
  status?: CloudflareSyncStateStatus;
}

export const CloudflareSyncStateKind = defineKind({
  group: CLOUDFLARE_GROUP,
  version: CLOUDFLARE_VERSION,
  kind: 'CloudflareSyncState',
  plural: 'cloudflaresyncstates',
  singular: 'cloudflaresyncstate',
  shortNames: ['cfss', 'syncstate'],
  scope: 'Cluster',
  description:
    'The aggregated configuration state of one Cloudflare resource: every Kubernetes object that contributes ' +
    'to it is a source; the sync controller merges them and syncs the result to Cloudflare. Managed by the operator.',
  spec: CloudflareSyncStateSpec,
  status: CloudflareSyncStateStatus,
  printerColumns: [
    { name: 'Type', type: 'string', jsonPath: '.spec.resourceType' },
    { name: 'CloudflareID', type: 'string', jsonPath: '.spec.cloudflareId', priority: 1 },
    // The original's `Sources` column pointed an integer column at the array (kubectl cannot
    // count); the names of the sources are what a user looks for.
    { name: 'Sources', type: 'string', jsonPath: '.spec.sources[*].ref.name' },
    { name: 'Status', type: 'string', jsonPath: '.status.syncStatus' },
    { name: 'Version', type: 'integer', jsonPath: '.status.configVersion' },
  ],
});

// ---------------------------------------------------------------------------------------------
// CloudflareCredentials
// ---------------------------------------------------------------------------------------------

export const CLOUDFLARE_AUTH_TYPES = ['apiToken', 'globalAPIKey'] as const;
export type CloudflareAuthType = (typeof CLOUDFLARE_AUTH_TYPES)[number];

/** Where the original looks for a Secret whose reference names no namespace. */
export const DEFAULT_CREDENTIALS_NAMESPACE = 'cloudflare-operator-system';

export const CredentialsSecretReference = Type.Object({
  name: Type.String({ minLength: 1, description: 'Name of the Secret.' }),
  namespace: Type.Optional(
    Type.String({ default: 'cloudflare-operator-system', description: 'Namespace of the Secret.' }),
  ),
  apiTokenKey: Type.Optional(
    Type.String({ default: 'CLOUDFLARE_API_TOKEN', description: 'Key of the API token (authType apiToken).' }),
  ),
  apiKeyKey: Type.Optional(
    Type.String({ default: 'CLOUDFLARE_API_KEY', description: 'Key of the Global API Key (authType globalAPIKey).' }),
  ),
  emailKey: Type.Optional(
    Type.String({ default: 'CLOUDFLARE_EMAIL', description: 'Key of the email (authType globalAPIKey).' }),
  ),
});
export type CredentialsSecretReference = Static<typeof CredentialsSecretReference>;

export const CloudflareCredentialsSpec = Type.Object({
  accountId: Type.String({ description: 'The Cloudflare account ID.' }),
  accountName: Type.Optional(Type.String({ description: 'Human-readable account name (reference only).' })),
  // Added here (issue 23, D7): Cloudflare's rate limit is per user, and a token does not say whose it is.
  user: Type.Optional(
    Type.String({
      minLength: 1,
      description:
        "The Cloudflare user the token belongs to (e.g. their email). Cloudflare's API rate limit is per user, across all their tokens and accounts: credentials naming the same user share one call budget. Unset: the Global API Key's email, else the account (credentials of one account share a budget).",
    }),
  ),
  // Required in the original, with a default: the apiserver fills it in before validating, so
  // optional-with-default here admits exactly the same objects.
  authType: Type.Optional(StringEnum(CLOUDFLARE_AUTH_TYPES, { default: 'apiToken' })),
  secretRef: CredentialsSecretReference,
  defaultDomain: Type.Optional(Type.String({ description: 'Default domain for resources using these credentials.' })),
  isDefault: Type.Optional(
    Type.Boolean({ default: false, description: 'The credentials of resources that name none. At most one.' }),
  ),
  // Added here (issue 23, D2): who may write with these credentials (src/domain/cloudflare/credentials-use.ts).
  allowedNamespaces: Type.Optional(
    Type.Array(Type.String({ minLength: 1 }), {
      description:
        'Namespaces whose resources may use these credentials ("*": every namespace). Unset: every namespace when named in credentialsRef, none as the default. Cluster-scoped resources are not restricted.',
    }),
  ),
  allowedZones: Type.Optional(
    Type.Array(Type.String({ minLength: 1 }), {
      description: 'Zones (domain names) resources may write to with these credentials ("*": any). Unset: any zone.',
    }),
  ),
  priorityNamespaces: Type.Optional(
    Type.Array(Type.String({ minLength: 1 }), {
      description:
        'Namespaces whose resources may set a priority below their kind\'s default (ahead of the others) when using these credentials ("*": every namespace). Unset: none.',
    }),
  ),
  // Added here (issue 33, N1/N5): taking over what the operator did not create is a grant, not a default.
  adoptNamespaces: Type.Optional(
    Type.Array(Type.String({ minLength: 1 }), {
      description:
        'Namespaces whose resources may take over Cloudflare objects this operator did not create, with these credentials: a Tunnel\'s spec.existingTunnel, a DNSRecord\'s spec.adoptExisting ("*": every namespace). Unset: none. Cluster-scoped resources are not restricted.',
    }),
  ),
});

export const CloudflareCredentialsStatus = Type.Object({
  conditions: Type.Optional(Conditions),
  observedGeneration: Type.Optional(Type.Integer({ format: 'int64', minimum: 0 })),
  state: Type.Optional(Type.String()),
  validated: Type.Optional(Type.Boolean()),
  lastValidatedTime: Type.Optional(Timestamp()),
  accountName: Type.Optional(Type.String({ description: 'The account name reported by the Cloudflare API.' })),
});

export type CloudflareCredentialsSpec = Static<typeof CloudflareCredentialsSpec>;
export type CloudflareCredentialsStatus = Static<typeof CloudflareCredentialsStatus>;

export interface CloudflareCredentials extends KubernetesObject {
  spec: CloudflareCredentialsSpec;
  status?: CloudflareCredentialsStatus;
}

export const CloudflareCredentialsKind = defineKind({
  group: CLOUDFLARE_GROUP,
  version: CLOUDFLARE_VERSION,
  kind: 'CloudflareCredentials',
  plural: 'cloudflarecredentials',
  singular: 'cloudflarecredentials',
  shortNames: ['cfcreds'],
  scope: 'Cluster',
  description: 'Cloudflare API credentials: an account and the Secret holding its API token (or Global API Key).',
  spec: CloudflareCredentialsSpec,
  status: CloudflareCredentialsStatus,
  printerColumns: [
    { name: 'Account ID', type: 'string', jsonPath: '.spec.accountId' },
    { name: 'Auth Type', type: 'string', jsonPath: '.spec.authType' },
    { name: 'Default', type: 'boolean', jsonPath: '.spec.isDefault' },
    { name: 'Validated', type: 'boolean', jsonPath: '.status.validated' },
    { name: 'State', type: 'string', jsonPath: '.status.state' },
  ],
});

// ---------------------------------------------------------------------------------------------
// DeviceSettingsPolicy
// ---------------------------------------------------------------------------------------------

/** The original's CloudflareDetails: credentialsRef (recommended) or the legacy inline fields. */
export const CloudflareDetails = Type.Object({
  credentialsRef: Type.Optional(CredentialsReference),
  domain: Type.Optional(Type.String({ description: 'Cloudflare domain (unless credentialsRef has a defaultDomain).' })),
  zoneId: Type.Optional(
    Type.String({ description: "The zone's ID: used as it is instead of looking the domain's zone up." }),
  ),
  secret: Type.Optional(Type.String({ description: 'Secret with the API key/token (legacy; use credentialsRef).' })),
  accountName: Type.Optional(Type.String()),
  accountId: Type.Optional(Type.String()),
  email: Type.Optional(Type.String()),
  CLOUDFLARE_API_KEY: Type.Optional(Type.String({ default: 'CLOUDFLARE_API_KEY' })),
  CLOUDFLARE_API_TOKEN: Type.Optional(Type.String({ default: 'CLOUDFLARE_API_TOKEN' })),
  CLOUDFLARE_TUNNEL_CREDENTIAL_FILE: Type.Optional(Type.String({ default: 'CLOUDFLARE_TUNNEL_CREDENTIAL_FILE' })),
  CLOUDFLARE_TUNNEL_CREDENTIAL_SECRET: Type.Optional(Type.String({ default: 'CLOUDFLARE_TUNNEL_CREDENTIAL_SECRET' })),
});
export type CloudflareDetails = Static<typeof CloudflareDetails>;

export const SPLIT_TUNNEL_MODES = ['exclude', 'include'] as const;
export type SplitTunnelMode = (typeof SPLIT_TUNNEL_MODES)[number];

/**
 * Cloudflare takes at most 100 characters, and the ownership marker
 * (`[managed-by:<clusterId>:DeviceSettingsPolicy/<name>]`) goes in the same field: the worker
 * refuses a description whose marker would not fit (src/domain/cloudflare/kinds/device-settings-policy.ts).
 */
const DeviceListDescription = Type.String({
  maxLength: 100,
  description:
    "At most 100 characters together with the ownership marker the operator appends ('[managed-by:<clusterId>:DeviceSettingsPolicy/<name>]').",
});

export const SplitTunnelEntry = Type.Object({
  address: Type.Optional(Type.String({ description: 'CIDR of the addresses to match (this or host).' })),
  host: Type.Optional(Type.String({ description: 'Domain name to match (this or address).' })),
  description: Type.Optional(DeviceListDescription),
});
export type SplitTunnelEntry = Static<typeof SplitTunnelEntry>;

export const FallbackDomainEntry = Type.Object({
  suffix: Type.String({ description: 'Domain suffix to match, e.g. internal.company.com.' }),
  description: Type.Optional(DeviceListDescription),
  dnsServer: Type.Optional(Type.Array(Type.String(), { description: 'DNS server IPs for this domain.' })),
});
export type FallbackDomainEntry = Static<typeof FallbackDomainEntry>;

export const LabelSelector = Type.Object(
  {
    matchLabels: Type.Optional(StringMap('Labels the object must carry.')),
    matchExpressions: Type.Optional(
      Type.Array(
        Type.Object({
          key: Type.String(),
          operator: Type.String(),
          values: Type.Optional(Type.Array(Type.String(), { 'x-kubernetes-list-type': 'atomic' })),
        }),
        { 'x-kubernetes-list-type': 'atomic' },
      ),
    ),
  },
  { 'x-kubernetes-map-type': 'atomic' },
);

export const AutoPopulateConfig = Type.Object({
  enabled: Type.Optional(Type.Boolean({ default: false })),
  labelSelector: Type.Optional(LabelSelector),
  descriptionPrefix: Type.Optional(Type.String({ default: 'Auto-populated from NetworkRoute: ' })),
});

export const DeviceSettingsPolicySpec = Type.Object({
  splitTunnelMode: Type.Optional(
    StringEnum(SPLIT_TUNNEL_MODES, {
      default: 'exclude',
      description: 'exclude: listed addresses bypass the tunnel. include: only listed addresses use it.',
    }),
  ),
  splitTunnelExclude: Type.Optional(Type.Array(SplitTunnelEntry)),
  splitTunnelInclude: Type.Optional(Type.Array(SplitTunnelEntry)),
  fallbackDomains: Type.Optional(Type.Array(FallbackDomainEntry)),
  autoPopulateFromRoutes: Type.Optional(AutoPopulateConfig),
  cloudflare: CloudflareDetails,
  priority: SourcePriority(),
});

export const DeviceSettingsPolicyStatus = Type.Object({
  accountId: Type.Optional(Type.String()),
  splitTunnelExcludeCount: Type.Optional(Type.Integer({ minimum: 0 })),
  splitTunnelIncludeCount: Type.Optional(Type.Integer({ minimum: 0 })),
  fallbackDomainsCount: Type.Optional(Type.Integer({ minimum: 0 })),
  autoPopulatedRoutesCount: Type.Optional(Type.Integer({ minimum: 0 })),
  state: Type.Optional(Type.String()),
  ...sourceStatusFields,
});

export type DeviceSettingsPolicySpec = Static<typeof DeviceSettingsPolicySpec>;
export type DeviceSettingsPolicyStatus = Static<typeof DeviceSettingsPolicyStatus>;

export interface DeviceSettingsPolicy extends KubernetesObject {
  spec: DeviceSettingsPolicySpec;
  status?: DeviceSettingsPolicyStatus;
}

export const DeviceSettingsPolicyKind = defineKind({
  group: CLOUDFLARE_GROUP,
  version: CLOUDFLARE_VERSION,
  kind: 'DeviceSettingsPolicy',
  plural: 'devicesettingspolicies',
  singular: 'devicesettingspolicy',
  shortNames: ['dsp'],
  scope: 'Cluster',
  description:
    'WARP client device settings of an account: split tunnel entries and fallback domains. Several policies of ' +
    'one account are merged (by priority) into one CloudflareSyncState.',
  spec: DeviceSettingsPolicySpec,
  status: DeviceSettingsPolicyStatus,
  printerColumns: [
    { name: 'Mode', type: 'string', jsonPath: '.spec.splitTunnelMode' },
    { name: 'Exclude', type: 'integer', jsonPath: '.status.splitTunnelExcludeCount' },
    { name: 'Include', type: 'integer', jsonPath: '.status.splitTunnelIncludeCount' },
    { name: 'Fallback', type: 'integer', jsonPath: '.status.fallbackDomainsCount' },
    { name: 'State', type: 'string', jsonPath: '.status.state' },
    READY_COLUMN,
  ],
});

// ---------------------------------------------------------------------------------------------
// ZoneRuleset
// ---------------------------------------------------------------------------------------------

export const RULESET_PHASES = [
  'http_request_transform',
  'http_request_late_transform',
  'http_request_origin',
  'http_request_redirect',
  'http_request_dynamic_redirect',
  'http_request_cache_settings',
  'http_config_settings',
  'http_custom_errors',
  'http_response_headers_transform',
  'http_response_compression',
  'http_ratelimit',
  'http_request_firewall_custom',
  'http_request_firewall_managed',
  'http_response_firewall_managed',
] as const;
export type RulesetPhase = (typeof RULESET_PHASES)[number];

export const RULESET_ACTIONS = [
  'block',
  'challenge',
  'js_challenge',
  'managed_challenge',
  'log',
  'skip',
  'rewrite',
  'redirect',
  'route',
  'score',
  'execute',
  'set_config',
  'set_cache_settings',
  'serve_error',
  'compress_response',
] as const;
export type RulesetAction = (typeof RULESET_ACTIONS)[number];

export const HEADER_OPERATIONS = ['set', 'add', 'remove'] as const;
export type HeaderOperation = (typeof HEADER_OPERATIONS)[number];

export const REDIRECT_STATUS_CODES = [301, 302, 307, 308] as const;
export type RedirectStatusCode = (typeof REDIRECT_STATUS_CODES)[number];

const RulesetRewriteValue = Type.Object({
  value: Type.Optional(Type.String({ description: 'A static value.' })),
  expression: Type.Optional(Type.String({ description: 'A dynamic expression.' })),
});

const OptionalBool = () => Type.Optional(Type.Boolean());

const RulesetCacheTTL = Type.Object({
  mode: Type.Optional(StringEnum(['respect_origin', 'bypass_by_default', 'override_origin'] as const)),
  default: Type.Optional(Type.Integer()),
  statusCodeTtl: Type.Optional(
    Type.Array(
      Type.Object({
        statusCodeRange: Type.Optional(Type.Object({ from: Type.Integer(), to: Type.Integer() })),
        statusCodeValue: Type.Optional(Type.Integer()),
        value: Type.Integer({ description: 'TTL in seconds.' }),
      }),
    ),
  ),
});

const RulesetQueryStringList = Type.Object({
  list: Type.Optional(Type.Array(Type.String())),
  all: OptionalBool(),
});

const RulesetCacheKey = Type.Object({
  ignoreQueryStringsOrder: OptionalBool(),
  cacheDeceptionArmor: OptionalBool(),
  queryString: Type.Optional(
    Type.Object({ exclude: Type.Optional(RulesetQueryStringList), include: Type.Optional(RulesetQueryStringList) }),
  ),
  header: Type.Optional(
    Type.Object({
      include: Type.Optional(Type.Array(Type.String())),
      checkPresence: Type.Optional(Type.Array(Type.String())),
      excludeOrigin: OptionalBool(),
    }),
  ),
  cookie: Type.Optional(
    Type.Object({
      include: Type.Optional(Type.Array(Type.String())),
      checkPresence: Type.Optional(Type.Array(Type.String())),
    }),
  ),
  user: Type.Optional(Type.Object({ deviceType: OptionalBool(), geo: OptionalBool(), lang: OptionalBool() })),
  host: Type.Optional(Type.Object({ resolved: OptionalBool() })),
});

/**
 * The original's typed action parameters, kept for their enums, with unknown fields preserved so
 * parameters of actions this schema does not spell out still reach the operator.
 */
export const RulesetRuleActionParameters = Type.Object(
  {
    uri: Type.Optional(
      Type.Object({ path: Type.Optional(RulesetRewriteValue), query: Type.Optional(RulesetRewriteValue) }),
    ),
    headers: Type.Optional(
      Type.Object(
        {},
        {
          additionalProperties: Type.Object({
            operation: StringEnum(HEADER_OPERATIONS),
            value: Type.Optional(Type.String()),
            expression: Type.Optional(Type.String()),
          }),
          description: 'Header name → modification.',
        },
      ),
    ),
    redirect: Type.Optional(
      Type.Object({
        sourceUrl: Type.Optional(Type.String()),
        targetUrl: Type.Optional(RulesetRewriteValue),
        statusCode: Type.Optional(IntegerEnum(REDIRECT_STATUS_CODES)),
        preserveQueryString: OptionalBool(),
        includeSubdomains: OptionalBool(),
        subpathMatching: OptionalBool(),
      }),
    ),
    origin: Type.Optional(Type.Object({ host: Type.Optional(Type.String()), port: Type.Optional(Type.Integer()) })),
    cache: Type.Optional(
      Type.Object({
        cache: OptionalBool(),
        edgeTtl: Type.Optional(RulesetCacheTTL),
        browserTtl: Type.Optional(RulesetCacheTTL),
        cacheKey: Type.Optional(RulesetCacheKey),
        respectStrongEtags: OptionalBool(),
        originErrorPagePassthru: OptionalBool(),
      }),
    ),
    products: Type.Optional(Type.Array(Type.String())),
    ruleset: Type.Optional(Type.String()),
    phases: Type.Optional(Type.Array(Type.String())),
    rules: Type.Optional(Type.Object({}, { additionalProperties: Type.Array(Type.String()) })),
    response: Type.Optional(
      Type.Object({
        statusCode: Type.Optional(Type.Integer()),
        contentType: Type.Optional(Type.String()),
        content: Type.Optional(Type.String()),
      }),
    ),
    algorithms: Type.Optional(
      Type.Array(Type.Object({ name: StringEnum(['gzip', 'brotli', 'auto', 'none'] as const) })),
    ),
  },
  { 'x-kubernetes-preserve-unknown-fields': true, description: 'Parameters of the action.' },
);

export const RulesetRuleRateLimit = Type.Object({
  characteristics: Type.Optional(Type.Array(Type.String())),
  period: Type.Optional(Type.Integer({ description: 'Period in seconds.' })),
  requestsPerPeriod: Type.Optional(Type.Integer()),
  mitigationTimeout: Type.Optional(Type.Integer({ description: 'Block duration in seconds.' })),
  countingExpression: Type.Optional(Type.String()),
  requestsToOrigin: OptionalBool(),
  scorePerPeriod: Type.Optional(Type.Integer()),
  scoreResponseHeaderName: Type.Optional(Type.String()),
});

export const RulesetRule = Type.Object({
  description: Type.Optional(Type.String()),
  expression: Type.String({ description: 'Filter expression (Cloudflare Rules language).' }),
  action: StringEnum(RULESET_ACTIONS),
  actionParameters: Type.Optional(RulesetRuleActionParameters),
  enabled: Type.Optional(Type.Boolean({ default: true })),
  ref: Type.Optional(Type.String({ description: 'Reference ID of the rule.' })),
  rateLimit: Type.Optional(RulesetRuleRateLimit),
});
export type RulesetRule = Static<typeof RulesetRule>;

export const ZoneRulesetSpec = Type.Object({
  zone: Type.String({ description: 'Zone name (domain) the rules apply to.' }),
  phase: StringEnum(RULESET_PHASES, { description: 'The ruleset phase (entry point).' }),
  description: Type.Optional(Type.String()),
  rules: Type.Array(RulesetRule, { minItems: 1 }),
  credentialsRef: Type.Optional(CredentialsReference),
  priority: SourcePriority(),
});

const RuleStatusCommon = {
  state: Type.Optional(StringEnum(RULE_STATES)),
  rulesetId: Type.Optional(Type.String({ description: 'The Cloudflare ruleset ID.' })),
  zoneId: Type.Optional(Type.String({ description: 'The Cloudflare zone ID.' })),
  ruleCount: Type.Optional(Type.Integer({ minimum: 0 })),
};

export const ZoneRulesetStatus = Type.Object({
  ...RuleStatusCommon,
  rulesetVersion: Type.Optional(Type.String()),
  lastUpdated: Type.Optional(Timestamp()),
  ...sourceStatusFields,
});

export type ZoneRulesetSpec = Static<typeof ZoneRulesetSpec>;
export type ZoneRulesetStatus = Static<typeof ZoneRulesetStatus>;

export interface ZoneRuleset extends KubernetesObject {
  spec: ZoneRulesetSpec;
  status?: ZoneRulesetStatus;
}

export const ZoneRulesetKind = defineKind({
  group: CLOUDFLARE_GROUP,
  version: CLOUDFLARE_VERSION,
  kind: 'ZoneRuleset',
  plural: 'zonerulesets',
  singular: 'zoneruleset',
  shortNames: ['cfzr', 'zoneruleset'],
  scope: 'Namespaced',
  description:
    'Rules for one phase (entry point) of a Cloudflare zone. Several ZoneRulesets of one zone and phase are ' +
    'merged (by priority) into the one ruleset Cloudflare keeps per phase.',
  spec: ZoneRulesetSpec,
  status: ZoneRulesetStatus,
  printerColumns: [
    { name: 'Zone', type: 'string', jsonPath: '.spec.zone' },
    { name: 'Phase', type: 'string', jsonPath: '.spec.phase' },
    { name: 'Rules', type: 'integer', jsonPath: '.status.ruleCount' },
    { name: 'State', type: 'string', jsonPath: '.status.state' },
    READY_COLUMN,
  ],
});

// ---------------------------------------------------------------------------------------------
// TransformRule
// ---------------------------------------------------------------------------------------------

export const TRANSFORM_RULE_TYPES = ['url_rewrite', 'request_header', 'response_header'] as const;
export type TransformRuleType = (typeof TRANSFORM_RULE_TYPES)[number];

/** The zone ruleset phase each transform type lands in. */
export const TRANSFORM_PHASES = {
  url_rewrite: 'http_request_transform',
  request_header: 'http_request_late_transform',
  response_header: 'http_response_headers_transform',
} as const satisfies Record<TransformRuleType, RulesetPhase>;

const RewriteValue = Type.Object({
  static: Type.Optional(Type.String({ description: 'A literal value.' })),
  expression: Type.Optional(Type.String({ description: 'A dynamic expression.' })),
});

export const HeaderModification = Type.Object({
  name: Type.String({ description: 'Header name.' }),
  operation: StringEnum(HEADER_OPERATIONS),
  value: Type.Optional(Type.String()),
  expression: Type.Optional(Type.String()),
});

export const TransformRuleDefinition = Type.Object({
  name: Type.String({ description: 'Human-readable name of the rule.' }),
  expression: Type.String({ description: 'Filter expression (Cloudflare Rules language).' }),
  enabled: Type.Optional(Type.Boolean({ default: true })),
  urlRewrite: Type.Optional(
    Type.Object(
      { path: Type.Optional(RewriteValue), query: Type.Optional(RewriteValue) },
      { description: 'Only for type url_rewrite.' },
    ),
  ),
  headers: Type.Optional(
    Type.Array(HeaderModification, { description: 'Only for type request_header or response_header.' }),
  ),
});
export type TransformRuleDefinition = Static<typeof TransformRuleDefinition>;

export const TransformRuleSpec = Type.Object({
  zone: Type.String({ description: 'Zone name (domain) the rules apply to.' }),
  type: StringEnum(TRANSFORM_RULE_TYPES),
  description: Type.Optional(Type.String()),
  rules: Type.Array(TransformRuleDefinition, { minItems: 1 }),
  credentialsRef: Type.Optional(CredentialsReference),
  priority: SourcePriority(),
});

export const TransformRuleStatus = Type.Object({ ...RuleStatusCommon, ...sourceStatusFields });

export type TransformRuleSpec = Static<typeof TransformRuleSpec>;
export type TransformRuleStatus = Static<typeof TransformRuleStatus>;

export interface TransformRule extends KubernetesObject {
  spec: TransformRuleSpec;
  status?: TransformRuleStatus;
}

export const TransformRuleKind = defineKind({
  group: CLOUDFLARE_GROUP,
  version: CLOUDFLARE_VERSION,
  kind: 'TransformRule',
  plural: 'transformrules',
  singular: 'transformrule',
  shortNames: ['cftransform', 'transformrule'],
  scope: 'Namespaced',
  description:
    'Cloudflare Transform Rules (URL rewrites, request or response header changes): a simpler ZoneRuleset for ' +
    'the phase of its type.',
  spec: TransformRuleSpec,
  status: TransformRuleStatus,
  printerColumns: [
    { name: 'Zone', type: 'string', jsonPath: '.spec.zone' },
    { name: 'Type', type: 'string', jsonPath: '.spec.type' },
    { name: 'Rules', type: 'integer', jsonPath: '.status.ruleCount' },
    { name: 'State', type: 'string', jsonPath: '.status.state' },
    READY_COLUMN,
  ],
});

// ---------------------------------------------------------------------------------------------
// RedirectRule
// ---------------------------------------------------------------------------------------------

/** The zone ruleset phase redirect rules land in. */
export const REDIRECT_PHASE = 'http_request_dynamic_redirect' satisfies RulesetPhase;

export const RedirectTarget = Type.Object({
  url: Type.Optional(Type.String({ description: 'A static target URL.' })),
  expression: Type.Optional(Type.String({ description: 'A dynamic expression for the target URL.' })),
});

export const RedirectRuleDefinition = Type.Object({
  name: Type.String({ description: 'Human-readable name of the rule.' }),
  expression: Type.String({ description: 'Filter expression (Cloudflare Rules language).' }),
  enabled: Type.Optional(Type.Boolean({ default: true })),
  target: RedirectTarget,
  statusCode: Type.Optional(IntegerEnum(REDIRECT_STATUS_CODES, { default: 302 })),
  preserveQueryString: Type.Optional(Type.Boolean({ default: false })),
});
export type RedirectRuleDefinition = Static<typeof RedirectRuleDefinition>;

export const WildcardRedirectRule = Type.Object({
  name: Type.String({ description: 'Human-readable name of the rule.' }),
  sourceUrl: Type.String({ description: 'Wildcard URL pattern (`*`), e.g. https://example.com/blog/*.' }),
  targetUrl: Type.String({ description: 'Destination; ${1}, ${2}… stand for the wildcards.' }),
  enabled: Type.Optional(Type.Boolean({ default: true })),
  statusCode: Type.Optional(IntegerEnum(REDIRECT_STATUS_CODES, { default: 301 })),
  preserveQueryString: Type.Optional(Type.Boolean({ default: false })),
  includeSubdomains: Type.Optional(Type.Boolean({ default: false })),
  subpathMatching: Type.Optional(Type.Boolean({ default: false })),
});
export type WildcardRedirectRule = Static<typeof WildcardRedirectRule>;

export const RedirectRuleSpec = Type.Object({
  zone: Type.String({ description: 'Zone name (domain) the rules apply to.' }),
  description: Type.Optional(Type.String()),
  rules: Type.Optional(Type.Array(RedirectRuleDefinition, { description: 'Expression-based redirect rules.' })),
  wildcardRules: Type.Optional(Type.Array(WildcardRedirectRule, { description: 'Wildcard-pattern redirect rules.' })),
  credentialsRef: Type.Optional(CredentialsReference),
  priority: SourcePriority(),
});

export const RedirectRuleStatus = Type.Object({ ...RuleStatusCommon, ...sourceStatusFields });

export type RedirectRuleSpec = Static<typeof RedirectRuleSpec>;
export type RedirectRuleStatus = Static<typeof RedirectRuleStatus>;

export interface RedirectRule extends KubernetesObject {
  spec: RedirectRuleSpec;
  status?: RedirectRuleStatus;
}

export const RedirectRuleKind = defineKind({
  group: CLOUDFLARE_GROUP,
  version: CLOUDFLARE_VERSION,
  kind: 'RedirectRule',
  plural: 'redirectrules',
  singular: 'redirectrule',
  shortNames: ['cfredirect', 'redirectrule'],
  scope: 'Namespaced',
  description:
    'Cloudflare redirect rules (expression-based or wildcard): a simpler ZoneRuleset for the redirect phase.',
  spec: RedirectRuleSpec,
  status: RedirectRuleStatus,
  printerColumns: [
    { name: 'Zone', type: 'string', jsonPath: '.spec.zone' },
    { name: 'Rules', type: 'integer', jsonPath: '.status.ruleCount' },
    { name: 'State', type: 'string', jsonPath: '.status.state' },
    READY_COLUMN,
  ],
});

/** The six kinds, in the order the CRD generator lists them. */
export const CLOUDFLARE_KINDS = [
  CloudflareSyncStateKind,
  CloudflareCredentialsKind,
  DeviceSettingsPolicyKind,
  ZoneRulesetKind,
  TransformRuleKind,
  RedirectRuleKind,
] as const;
