/**
 * The tunnel kinds of `networking.cloudflare-operator.io`: Tunnel, ClusterTunnel,
 * TunnelIngressClassConfig, TunnelGatewayClassConfig (v1alpha2) and the deprecated TunnelBinding
 * (v1alpha1).
 *
 * Same names, scope, fields, enums and defaults as the original cloudflare-operator
 * (StringKe/cloudflare-operator), so its manifests apply unchanged. Added here, as on the kinds of
 * ./cloudflare.ts: a `priority` where several objects feed one tunnel configuration (Tunnel and
 * ClusterTunnel settings 10, TunnelBinding 100), and on every status `conditions`,
 * `observedGeneration`, `syncState`, `message` and a `Ready` printer column.
 *
 * TunnelBinding keeps `subjects` and `tunnelRef` at the top level of the object as the original
 * does; its `spec` exists only for the added priority and is optional.
 */
import { Type, type Static } from '@sinclair/typebox';
import type { KubernetesObject } from '@kubernetes/client-node';
import { StringEnum } from './schema.js';
import { defineKind } from './kind.js';
import {
  CLOUDFLARE_GROUP,
  CLOUDFLARE_VERSION,
  CloudflareDetails,
  READY_COLUMN,
  SourcePriority,
  sourceStatusFields,
} from './cloudflare.js';

/** TunnelBinding is served at v1alpha1 only, as in the original. */
export const TUNNEL_BINDING_VERSION = 'v1alpha1';

/** Priority of a Tunnel's/ClusterTunnel's own settings among the sources of its configuration. */
export const TUNNEL_SETTINGS_PRIORITY = 10;
/**
 * Priority of a TunnelBinding's rules among the sources of a tunnel configuration: the same as
 * an Ingress's or an HTTPRoute's (the original's 50 put any team's binding ahead of every Ingress).
 */
export const TUNNEL_BINDING_PRIORITY = 100;

// ---------------------------------------------------------------------------------------------
// Tunnel and ClusterTunnel
// ---------------------------------------------------------------------------------------------

export const TUNNEL_PROTOCOLS = ['auto', 'quic', 'http2'] as const;
export type TunnelProtocol = (typeof TUNNEL_PROTOCOLS)[number];

export const TUNNEL_STATES = ['pending', 'creating', 'active', 'error', 'deleting'] as const;
export type TunnelState = (typeof TUNNEL_STATES)[number];

export const ExistingTunnel = Type.Object(
  {
    id: Type.Optional(Type.String({ description: 'ID of the existing tunnel (used if valid, else name).' })),
    name: Type.Optional(Type.String({ description: 'Name of the existing tunnel (id or name must be set).' })),
  },
  { description: 'An existing Cloudflare tunnel to run. Mutually exclusive with newTunnel.' },
);

export const NewTunnel = Type.Object(
  { name: Type.String({ description: 'Name of the tunnel to create on Cloudflare.' }) },
  { description: 'A tunnel to create on Cloudflare. Mutually exclusive with existingTunnel.' },
);

/** A Pod toleration (core/v1 Toleration), for the v1alpha1 field `tolerations`. */
export const Toleration = Type.Object({
  key: Type.Optional(Type.String()),
  operator: Type.Optional(Type.String()),
  value: Type.Optional(Type.String()),
  effect: Type.Optional(Type.String()),
  tolerationSeconds: Type.Optional(Type.Integer({ format: 'int64' })),
});

/** The version the original served before v1alpha2, still served (same schema, see below). */
export const TUNNEL_OLD_VERSION = 'v1alpha1';

export const TunnelSpec = Type.Object({
  deployPatch: Type.Optional(
    Type.String({
      default: '{}',
      description:
        'Strategic merge patch (JSON or YAML, as `kubectl patch` takes) applied to the cloudflared Deployment ' +
        'the operator builds, after size, image, nodeSelectors and tolerations.',
    }),
  ),
  // The original's v1alpha1 fields (served again at v1alpha1, where its manifests set them; also
  // accepted at v1alpha2): the connector honours them before deployPatch. No defaults here, so a
  // v1alpha2 object does not grow them: the connector's are 1 replica and the operator's image.
  size: Type.Optional(
    Type.Integer({
      minimum: 0,
      format: 'int32',
      description:
        'Replicas of the cloudflared Deployment, kept at this. Unset: 1 at creation, then whatever scales it (an HPA, kubectl scale).',
    }),
  ),
  image: Type.Optional(
    Type.String({ description: "cloudflared image (default: the operator's, DO_CLOUDFLARED_IMAGE)." }),
  ),
  nodeSelectors: Type.Optional(
    Type.Object({}, { additionalProperties: Type.String(), description: 'nodeSelector of the cloudflared Pods.' }),
  ),
  tolerations: Type.Optional(Type.Array(Toleration, { description: 'Tolerations of the cloudflared Pods.' })),
  noTlsVerify: Type.Optional(
    Type.Boolean({ default: false, description: 'Disables origin TLS certificate checks for HTTPS endpoints.' }),
  ),
  originCaPool: Type.Optional(
    Type.String({ description: 'Secret whose tls.crt (and other keys) are the CAs trusted for HTTPS origins.' }),
  ),
  protocol: Type.Optional(StringEnum(TUNNEL_PROTOCOLS, { default: 'auto', description: 'Tunnel transport.' })),
  fallbackTarget: Type.Optional(
    Type.String({ default: 'http_status:404', description: 'Target of requests no ingress rule matches.' }),
  ),
  cloudflare: CloudflareDetails,
  existingTunnel: Type.Optional(ExistingTunnel),
  newTunnel: Type.Optional(NewTunnel),
  enableWarpRouting: Type.Optional(
    Type.Boolean({
      default: false,
      description:
        "Accepted for the original's manifests; no effect. Cloudflare routes WARP clients through a tunnel once a " +
        'private network route targets it (its configuration has no warp-routing field any more).',
    }),
  ),
  priority: SourcePriority(TUNNEL_SETTINGS_PRIORITY),
});

export const TunnelStatus = Type.Object({
  // Required in the original (Go always writes them, even empty); optional here so a status
  // patch of conditions alone is valid.
  tunnelId: Type.Optional(Type.String({ description: 'The Cloudflare tunnel ID.' })),
  tunnelName: Type.Optional(Type.String({ description: 'The Cloudflare tunnel name.' })),
  accountId: Type.Optional(Type.String({ description: 'The Cloudflare account ID.' })),
  zoneId: Type.Optional(Type.String({ description: 'The Cloudflare zone ID (DNS features).' })),
  state: Type.Optional(StringEnum(TUNNEL_STATES)),
  ...sourceStatusFields,
});

export type TunnelSpec = Static<typeof TunnelSpec>;
export type TunnelStatus = Static<typeof TunnelStatus>;

export interface Tunnel extends KubernetesObject {
  spec: TunnelSpec;
  status?: TunnelStatus;
}
/** Same spec and status as Tunnel, cluster-scoped. */
export type ClusterTunnel = Tunnel;

const TUNNEL_COLUMNS = [
  { name: 'TunnelID', type: 'string', jsonPath: '.status.tunnelId' },
  { name: 'State', type: 'string', jsonPath: '.status.state' },
  READY_COLUMN,
] as const;

export const TunnelKind = defineKind({
  group: CLOUDFLARE_GROUP,
  version: CLOUDFLARE_VERSION,
  kind: 'Tunnel',
  plural: 'tunnels',
  singular: 'tunnel',
  scope: 'Namespaced',
  description:
    'A Cloudflare Tunnel (new or existing) and the cloudflared Deployment that runs it; its settings are the ' +
    'highest-priority source of the tunnel configuration.',
  spec: TunnelSpec,
  status: TunnelStatus,
  printerColumns: [...TUNNEL_COLUMNS],
  olderVersions: [
    {
      name: TUNNEL_OLD_VERSION,
      deprecationWarning: `${CLOUDFLARE_GROUP}/${TUNNEL_OLD_VERSION} Tunnel is deprecated; use ${CLOUDFLARE_GROUP}/${CLOUDFLARE_VERSION}`,
    },
  ],
});

export const ClusterTunnelKind = defineKind({
  group: CLOUDFLARE_GROUP,
  version: CLOUDFLARE_VERSION,
  kind: 'ClusterTunnel',
  plural: 'clustertunnels',
  singular: 'clustertunnel',
  scope: 'Cluster',
  description: 'A Tunnel usable from every namespace (cluster-scoped; same spec as Tunnel).',
  spec: TunnelSpec,
  status: TunnelStatus,
  printerColumns: [...TUNNEL_COLUMNS],
  olderVersions: [
    {
      name: TUNNEL_OLD_VERSION,
      deprecationWarning: `${CLOUDFLARE_GROUP}/${TUNNEL_OLD_VERSION} ClusterTunnel is deprecated; use ${CLOUDFLARE_GROUP}/${CLOUDFLARE_VERSION}`,
    },
  ],
});

// ---------------------------------------------------------------------------------------------
// TunnelBinding (v1alpha1, deprecated in the original)
// ---------------------------------------------------------------------------------------------

export const TUNNEL_KINDS = ['ClusterTunnel', 'Tunnel'] as const;
export type TunnelKindName = (typeof TUNNEL_KINDS)[number];

export const PROXY_TYPES = ['', 'socks'] as const;
export type ProxyType = (typeof PROXY_TYPES)[number];

const OCTET = '([0-9]|[1-9][0-9]|1[0-9]{2}|2[0-4][0-9]|25[0-5])';
const HEXTET = '[0-9a-fA-F]{1,4}';
/** An IPv4 or IPv6 address: the original's pattern for proxyAddress. */
export const IP_ADDRESS_PATTERN =
  `((^((${OCTET}\\.){3}${OCTET})$)|(^(` +
  [
    `(${HEXTET}:){7,7}${HEXTET}`,
    `(${HEXTET}:){1,7}:`,
    `(${HEXTET}:){1,6}:${HEXTET}`,
    `(${HEXTET}:){1,5}(:${HEXTET}){1,2}`,
    `(${HEXTET}:){1,4}(:${HEXTET}){1,3}`,
    `(${HEXTET}:){1,3}(:${HEXTET}){1,4}`,
    `(${HEXTET}:){1,2}(:${HEXTET}){1,5}`,
    `${HEXTET}:((:${HEXTET}){1,6})`,
    `:((:${HEXTET}){1,7}|:)`,
  ].join('|') +
  `)$))`;

export const TunnelBindingSubjectSpec = Type.Object({
  fqdn: Type.Optional(
    Type.String({ description: 'DNS name of the service; default <service name>.<tunnel domain>. Not validated.' }),
  ),
  protocol: Type.Optional(
    Type.String({
      description:
        'http, https, tcp, udp, ssh, smb or rdp; default from the port (443 https, 139/445 smb, 3389 rdp, 22 ssh, ' +
        'UDP udp, else http).',
    }),
  ),
  path: Type.Optional(Type.String({ description: 'Regular expression on the request path (http/https).' })),
  target: Type.Optional(
    Type.String({ description: 'Where to proxy to; default <protocol>://<service>.<namespace>.svc:<port>.' }),
  ),
  caPool: Type.Optional(Type.String({ description: "Key of the tunnel's originCaPool Secret to trust (https)." })),
  noTlsVerify: Type.Optional(Type.Boolean({ default: false, description: 'Disables TLS verification (https).' })),
  http2Origin: Type.Optional(Type.Boolean({ default: false, description: 'Connects to the origin with HTTP/2.' })),
  proxyAddress: Type.Optional(
    Type.String({
      default: '127.0.0.1',
      pattern: IP_ADDRESS_PATTERN,
      description: 'Listen address of the proxy cloudflared starts for ssh/rdp.',
    }),
  ),
  proxyPort: Type.Optional(
    Type.Integer({ default: 0, minimum: 0, maximum: 65535, description: 'Listen port of that proxy.' }),
  ),
  proxyType: Type.Optional(StringEnum(PROXY_TYPES, { default: '', description: 'Type of that proxy.' })),
});

export const TunnelBindingSubject = Type.Object({
  kind: Type.Optional(Type.String({ default: 'Service', description: 'Kind of the subject: Service.' })),
  name: Type.String({ description: 'Name of the Service.' }),
  spec: Type.Optional(TunnelBindingSubjectSpec),
});
export type TunnelBindingSubject = Static<typeof TunnelBindingSubject>;

export const TunnelBindingTunnelRef = Type.Object({
  kind: StringEnum(TUNNEL_KINDS, { description: 'Tunnel or ClusterTunnel.' }),
  name: Type.String({ description: 'Name of the tunnel resource.' }),
  disableDNSUpdates: Type.Optional(
    Type.Boolean({ description: 'Only manage the tunnel configuration; DNS entries are added by hand.' }),
  ),
});
export type TunnelBindingTunnelRef = Static<typeof TunnelBindingTunnelRef>;

/** The binding's own spec: only the added priority (the original has no spec). */
export const TunnelBindingSpec = Type.Object({ priority: SourcePriority(TUNNEL_BINDING_PRIORITY) });

export const TunnelBindingStatus = Type.Object({
  // hostnames and services are required in the original (Go always writes them); optional here.
  hostnames: Type.Optional(Type.String({ description: 'The FQDNs, comma-separated (for kubectl).' })),
  services: Type.Optional(
    Type.Array(
      Type.Object({
        hostname: Type.String({ description: 'FQDN of the service.' }),
        target: Type.String({ description: 'Target for cloudflared.' }),
      }),
    ),
  ),
  syncedHostnames: Type.Optional(
    Type.Array(Type.String(), { description: 'The hostnames last synced to the tunnel configuration.' }),
  ),
  configVersion: Type.Optional(Type.Integer({ description: 'Tunnel configuration version after the last sync.' })),
  ...sourceStatusFields,
});

export type TunnelBindingSpec = Static<typeof TunnelBindingSpec>;
export type TunnelBindingStatus = Static<typeof TunnelBindingStatus>;

export interface TunnelBinding extends KubernetesObject {
  subjects: TunnelBindingSubject[];
  tunnelRef: TunnelBindingTunnelRef;
  spec?: TunnelBindingSpec;
  status?: TunnelBindingStatus;
}

export const TUNNEL_BINDING_DEPRECATION =
  'TunnelBinding is deprecated. Please migrate to Ingress with TunnelIngressClassConfig or Gateway API.';

export const TunnelBindingKind = defineKind({
  group: CLOUDFLARE_GROUP,
  version: TUNNEL_BINDING_VERSION,
  kind: 'TunnelBinding',
  plural: 'tunnelbindings',
  singular: 'tunnelbinding',
  scope: 'Namespaced',
  description:
    'Exposes Services through a Tunnel or ClusterTunnel (deprecated: use Ingress with TunnelIngressClassConfig ' +
    'or the Gateway API).',
  spec: TunnelBindingSpec,
  status: TunnelBindingStatus,
  rootProperties: {
    subjects: Type.Array(TunnelBindingSubject, { description: 'The Services to expose.' }),
    tunnelRef: TunnelBindingTunnelRef,
  },
  rootRequired: ['subjects', 'tunnelRef'],
  deprecationWarning: TUNNEL_BINDING_DEPRECATION,
  printerColumns: [{ name: 'FQDNs', type: 'string', jsonPath: '.status.hostnames' }, READY_COLUMN],
});

// ---------------------------------------------------------------------------------------------
// TunnelIngressClassConfig and TunnelGatewayClassConfig
// ---------------------------------------------------------------------------------------------

export const DNS_MANAGEMENT_MODES = ['Automatic', 'Manual', 'DNSRecord'] as const;
export type DNSManagementMode = (typeof DNS_MANAGEMENT_MODES)[number];

export const BACKEND_PROTOCOLS = ['http', 'https', 'tcp', 'udp', 'ssh', 'rdp', 'smb', 'bastion', 'wss', 'ws'] as const;
export type BackendProtocol = (typeof BACKEND_PROTOCOLS)[number];

export const CLASS_CONFIG_STATES = ['pending', 'active', 'error'] as const;
export type ClassConfigState = (typeof CLASS_CONFIG_STATES)[number];

export const TunnelReference = Type.Object({
  kind: StringEnum(['Tunnel', 'ClusterTunnel'] as const, { description: 'Tunnel or ClusterTunnel.' }),
  name: Type.String({ description: 'Name of the Tunnel/ClusterTunnel.' }),
  namespace: Type.Optional(
    Type.String({ description: "Namespace of a Tunnel; default the config's namespace. Not for ClusterTunnel." }),
  ),
});
export type TunnelReference = Static<typeof TunnelReference>;

/** A Go duration (`30s`, `1m30s`, `500ms`), as the original's `time.ParseDuration` reads it. */
const GO_DURATION = '^([0-9]+(\\.[0-9]+)?(ns|us|µs|ms|s|m|h))+$';

export const OriginRequestSpec = Type.Object({
  noTlsVerify: Type.Optional(Type.Boolean({ default: false, description: 'Disables TLS verification (https).' })),
  http2Origin: Type.Optional(Type.Boolean({ default: false, description: 'HTTP/2 to the origin (https only).' })),
  connectTimeout: Type.Optional(
    Type.String({
      pattern: GO_DURATION,
      description: 'Timeout of the connection to the origin, e.g. 30s. Sent to Cloudflare in seconds.',
    }),
  ),
  tlsTimeout: Type.Optional(
    Type.String({
      pattern: GO_DURATION,
      description: 'Timeout of the TLS handshake, e.g. 10s. Sent to Cloudflare in seconds.',
    }),
  ),
  keepAliveTimeout: Type.Optional(
    Type.String({
      pattern: GO_DURATION,
      description: 'Idle timeout of origin connections, e.g. 90s. Sent to Cloudflare in seconds.',
    }),
  ),
  keepAliveConnections: Type.Optional(Type.Integer({ minimum: 0, description: 'Idle connections kept open.' })),
  caPool: Type.Optional(Type.String({ description: 'Secret whose tls.crt verifies the backend.' })),
  originServerName: Type.Optional(Type.String({ description: 'Hostname for TLS verification.' })),
  httpHostHeader: Type.Optional(Type.String({ description: 'Host header sent to the origin.' })),
  proxyAddress: Type.Optional(Type.String({ description: 'Proxy address (bastion/SOCKS mode).' })),
  proxyPort: Type.Optional(Type.Integer({ minimum: 1, maximum: 65535, description: 'Proxy port.' })),
  proxyType: Type.Optional(StringEnum(PROXY_TYPES, { description: '"" (none) or socks.' })),
  disableChunkedEncoding: Type.Optional(Type.Boolean()),
  bastionMode: Type.Optional(Type.Boolean()),
});
export type OriginRequestSpec = Static<typeof OriginRequestSpec>;

const classConfigCommon = {
  tunnelRef: TunnelReference,
  defaultOriginRequest: Type.Optional(OriginRequestSpec),
  dnsManagement: Type.Optional(
    StringEnum(DNS_MANAGEMENT_MODES, {
      default: 'Automatic',
      description:
        'Automatic: CNAME records through the Cloudflare API. Manual: managed elsewhere (external-dns). ' +
        'DNSRecord: one DNSRecord object per hostname.',
    }),
  ),
  dnsProxied: Type.Optional(Type.Boolean({ default: true, description: 'Proxy the DNS records through Cloudflare.' })),
  watchNamespaces: Type.Optional(Type.Array(Type.String(), { description: 'Namespaces watched; empty: all.' })),
};

export const TunnelIngressClassConfigSpec = Type.Object({
  tunnelRef: classConfigCommon.tunnelRef,
  defaultProtocol: Type.Optional(
    StringEnum(BACKEND_PROTOCOLS, {
      default: 'http',
      description: 'Backend protocol when no annotation, appProtocol or port name says otherwise.',
    }),
  ),
  defaultOriginRequest: classConfigCommon.defaultOriginRequest,
  dnsManagement: classConfigCommon.dnsManagement,
  dnsProxied: classConfigCommon.dnsProxied,
  watchNamespaces: classConfigCommon.watchNamespaces,
});

export const TunnelIngressClassConfigStatus = Type.Object({
  tunnelId: Type.Optional(Type.String({ description: 'The resolved Cloudflare tunnel ID.' })),
  tunnelName: Type.Optional(Type.String({ description: 'The resolved Cloudflare tunnel name.' })),
  ingressCount: Type.Optional(Type.Integer({ description: 'Ingresses using this configuration.' })),
  skipped: Type.Optional(
    Type.Array(Type.String(), {
      description:
        "What of the class's Ingresses is not turned into rules or read, and why (a missing Service, an annotation whose value cannot be read, an IngressClass whose parameters mean another config); the first 10.",
    }),
  ),
  state: Type.Optional(StringEnum(CLASS_CONFIG_STATES)),
  ...sourceStatusFields,
});

export type TunnelIngressClassConfigSpec = Static<typeof TunnelIngressClassConfigSpec>;
export type TunnelIngressClassConfigStatus = Static<typeof TunnelIngressClassConfigStatus>;

export interface TunnelIngressClassConfig extends KubernetesObject {
  spec: TunnelIngressClassConfigSpec;
  status?: TunnelIngressClassConfigStatus;
}

export const TunnelIngressClassConfigKind = defineKind({
  group: CLOUDFLARE_GROUP,
  version: CLOUDFLARE_VERSION,
  kind: 'TunnelIngressClassConfig',
  plural: 'tunnelingressclassconfigs',
  singular: 'tunnelingressclassconfig',
  shortNames: ['ticc'],
  scope: 'Namespaced',
  description:
    'IngressClass parameters: the Tunnel or ClusterTunnel the Ingresses of the class are served by, their DNS ' +
    'management and default origin settings.',
  spec: TunnelIngressClassConfigSpec,
  status: TunnelIngressClassConfigStatus,
  printerColumns: [
    { name: 'Tunnel', type: 'string', jsonPath: '.spec.tunnelRef.name' },
    { name: 'Kind', type: 'string', jsonPath: '.spec.tunnelRef.kind' },
    { name: 'DNS', type: 'string', jsonPath: '.spec.dnsManagement' },
    { name: 'Ingresses', type: 'integer', jsonPath: '.status.ingressCount' },
    { name: 'State', type: 'string', jsonPath: '.status.state' },
    READY_COLUMN,
  ],
});

export const TunnelGatewayClassConfigSpec = Type.Object({
  ...classConfigCommon,
  fallbackTarget: Type.Optional(
    Type.String({ default: 'http_status:404', description: 'Target of requests no route matches.' }),
  ),
});

export const TunnelGatewayClassConfigStatus = Type.Object({
  tunnelId: Type.Optional(Type.String({ description: 'The resolved Cloudflare tunnel ID.' })),
  tunnelName: Type.Optional(Type.String({ description: 'The resolved Cloudflare tunnel name.' })),
  gatewayCount: Type.Optional(Type.Integer({ description: 'Gateways using this configuration.' })),
  routeCount: Type.Optional(Type.Integer({ description: 'Routes attached to the listeners of those Gateways.' })),
  skipped: Type.Optional(
    Type.Array(Type.String(), {
      description:
        "What of the class's HTTPRoutes is not turned into rules, and why (not attached: no listener whose " +
        'allowedRoutes and hostname take it; no Service backend; a GatewayClass whose parametersRef means another ' +
        'config); the first 10.',
    }),
  ),
  state: Type.Optional(StringEnum(CLASS_CONFIG_STATES)),
  ...sourceStatusFields,
});

export type TunnelGatewayClassConfigSpec = Static<typeof TunnelGatewayClassConfigSpec>;
export type TunnelGatewayClassConfigStatus = Static<typeof TunnelGatewayClassConfigStatus>;

export interface TunnelGatewayClassConfig extends KubernetesObject {
  spec: TunnelGatewayClassConfigSpec;
  status?: TunnelGatewayClassConfigStatus;
}

export const TunnelGatewayClassConfigKind = defineKind({
  group: CLOUDFLARE_GROUP,
  version: CLOUDFLARE_VERSION,
  kind: 'TunnelGatewayClassConfig',
  plural: 'tunnelgatewayclassconfigs',
  singular: 'tunnelgatewayclassconfig',
  shortNames: ['tgcc'],
  scope: 'Namespaced',
  description:
    'GatewayClass parameters: the Tunnel or ClusterTunnel the Gateways and Routes of the class are served by, ' +
    'their DNS management and default origin settings.',
  spec: TunnelGatewayClassConfigSpec,
  status: TunnelGatewayClassConfigStatus,
  printerColumns: [
    { name: 'Tunnel', type: 'string', jsonPath: '.spec.tunnelRef.name' },
    { name: 'Kind', type: 'string', jsonPath: '.spec.tunnelRef.kind' },
    { name: 'DNS', type: 'string', jsonPath: '.spec.dnsManagement' },
    { name: 'Gateways', type: 'integer', jsonPath: '.status.gatewayCount' },
    { name: 'Routes', type: 'integer', jsonPath: '.status.routeCount' },
    { name: 'State', type: 'string', jsonPath: '.status.state' },
    READY_COLUMN,
  ],
});

/** The five tunnel kinds, in the order the CRD generator lists them. */
export const CLOUDFLARE_TUNNEL_KINDS = [
  TunnelKind,
  ClusterTunnelKind,
  TunnelBindingKind,
  TunnelIngressClassConfigKind,
  TunnelGatewayClassConfigKind,
] as const;
