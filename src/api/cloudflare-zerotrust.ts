/**
 * The Zero Trust kinds of `networking.cloudflare-operator.io/v1alpha2`: GatewayConfiguration,
 * AccessGroup, AccessIdentityProvider, VirtualNetwork (all cluster-scoped).
 *
 * Same names, scope, fields, enums and defaults as the original cloudflare-operator
 * (StringKe/cloudflare-operator, api/v1alpha2). Added here: GatewayConfiguration `priority`
 * (several are merged into the account's one Gateway configuration, lower number wins), and on
 * every status `conditions`, `observedGeneration`, `syncState`, `message` and a `Ready` column.
 *
 * Identity provider secrets belong in a Secret named by `configSecretRef`; the original's inline
 * `config.clientSecret`, `config.apiToken` and `scimConfig.secret` stay optional for its manifests.
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

const OptBool = () => Type.Optional(Type.Boolean());
const OptStr = () => Type.Optional(Type.String());
const Enabled = () => Type.Boolean();

/** The status fields of the Zero Trust kinds: account, state, and what every source adds. */
const zeroTrustStatusFields = {
  accountId: Type.Optional(Type.String({ description: 'The Cloudflare account ID.' })),
  state: Type.Optional(Type.String()),
  ...sourceStatusFields,
};

// ---------------------------------------------------------------------------------------------
// GatewayConfiguration
// ---------------------------------------------------------------------------------------------

export const GatewaySettings = Type.Object({
  tlsDecrypt: Type.Optional(Type.Object({ enabled: Enabled() })),
  activityLog: Type.Optional(Type.Object({ enabled: Enabled() })),
  antiVirus: Type.Optional(
    Type.Object({
      enabled: Enabled(),
      enabledDownloadPhase: OptBool(),
      enabledUploadPhase: OptBool(),
      failClosed: OptBool(),
      notificationSettings: Type.Optional(Type.Object({ enabled: Enabled(), message: OptStr(), supportUrl: OptStr() })),
    }),
  ),
  blockPage: Type.Optional(
    Type.Object({
      enabled: Enabled(),
      name: OptStr(),
      footerText: OptStr(),
      headerText: OptStr(),
      logoPath: OptStr(),
      backgroundColor: OptStr(),
      mailtoAddress: OptStr(),
      mailtoSubject: OptStr(),
      suppressFooter: OptBool(),
    }),
  ),
  bodyScanning: Type.Optional(
    Type.Object({ inspectionMode: Type.Optional(Type.String({ description: 'deep or shallow.' })) }),
  ),
  browserIsolation: Type.Optional(
    Type.Object({ urlBrowserIsolationEnabled: OptBool(), nonIdentityEnabled: OptBool() }),
  ),
  fips: Type.Optional(Type.Object({ tls: OptBool() })),
  protocolDetection: Type.Optional(Type.Object({ enabled: Enabled() })),
  customCertificate: Type.Optional(Type.Object({ enabled: Enabled(), id: OptStr() })),
  nonIdentityBrowserIsolation: Type.Optional(Type.Object({ enabled: Enabled() })),
});
export type GatewaySettings = Static<typeof GatewaySettings>;

export const GatewayConfigurationSpec = Type.Object({
  settings: GatewaySettings,
  cloudflare: CloudflareDetails,
  priority: SourcePriority(),
});

export const GatewayConfigurationStatus = Type.Object(zeroTrustStatusFields);

export type GatewayConfigurationSpec = Static<typeof GatewayConfigurationSpec>;
export type GatewayConfigurationStatus = Static<typeof GatewayConfigurationStatus>;

export interface GatewayConfiguration extends KubernetesObject {
  spec: GatewayConfigurationSpec;
  status?: GatewayConfigurationStatus;
}

export const GatewayConfigurationKind = defineKind({
  group: CLOUDFLARE_GROUP,
  version: CLOUDFLARE_VERSION,
  kind: 'GatewayConfiguration',
  plural: 'gatewayconfigurations',
  singular: 'gatewayconfiguration',
  shortNames: ['gwconfig'],
  scope: 'Cluster',
  description:
    "Settings of an account's Zero Trust Gateway (TLS decryption, anti-virus, block page, …). Several " +
    'GatewayConfigurations of one account are merged by priority.',
  spec: GatewayConfigurationSpec,
  status: GatewayConfigurationStatus,
  printerColumns: [{ name: 'State', type: 'string', jsonPath: '.status.state' }, READY_COLUMN],
});

// ---------------------------------------------------------------------------------------------
// AccessGroup
// ---------------------------------------------------------------------------------------------

const Req = () => Type.String();
const idp = { identityProviderId: Req() };

export const AccessGroupRule = Type.Object(
  {
    email: Type.Optional(Type.Object({ email: Req() })),
    emailDomain: Type.Optional(Type.Object({ domain: Req() })),
    everyone: OptBool(),
    ipRanges: Type.Optional(Type.Object({ ip: Type.Array(Type.String()) })),
    country: Type.Optional(Type.Object({ country: Type.Array(Type.String()) })),
    group: Type.Optional(Type.Object({ id: Req() })),
    serviceToken: Type.Optional(Type.Object({ tokenId: Req() })),
    anyValidServiceToken: OptBool(),
    certificate: OptBool(),
    commonName: Type.Optional(Type.Object({ commonName: Req() })),
    devicePosture: Type.Optional(Type.Object({ integrationUid: Req() })),
    gsuite: Type.Optional(Type.Object({ email: Req(), ...idp })),
    github: Type.Optional(Type.Object({ name: Req(), ...idp, teams: Type.Optional(Type.Array(Type.String())) })),
    azure: Type.Optional(Type.Object({ id: Req(), ...idp })),
    oidc: Type.Optional(Type.Object({ claimName: Req(), claimValue: Req(), ...idp })),
    saml: Type.Optional(Type.Object({ attributeName: Req(), attributeValue: Req(), ...idp })),
    externalEvaluation: Type.Optional(Type.Object({ evaluateUrl: Req(), keysUrl: Req() })),
    emailList: Type.Optional(Type.Object({ id: Req() }, { description: 'A Zero Trust list of emails, by ID.' })),
    ipList: Type.Optional(Type.Object({ id: Req() }, { description: 'A Zero Trust list of IPs, by ID.' })),
    okta: Type.Optional(Type.Object({ name: Req(), ...idp }, { description: 'An Okta group.' })),
    authMethod: Type.Optional(
      Type.Object({ authMethod: Req() }, { description: 'An authentication method (AMR), e.g. mfa, hwk.' }),
    ),
    authContext: Type.Optional(
      Type.Object({ id: Req(), acId: Req(), ...idp }, { description: 'An Azure authentication context.' }),
    ),
    loginMethod: Type.Optional(
      Type.Object({ id: Req() }, { description: 'A login method (an identity provider ID).' }),
    ),
  },
  { description: 'One Access rule: set one selector.' },
);
export type AccessGroupRule = Static<typeof AccessGroupRule>;

export const AccessGroupSpec = Type.Object({
  name: Type.Optional(Type.String({ maxLength: 255, description: 'Name in Cloudflare; default metadata.name.' })),
  include: Type.Array(AccessGroupRule, { minItems: 1, description: 'Users matching any of these are included.' }),
  exclude: Type.Optional(Type.Array(AccessGroupRule, { description: 'Users matching any of these are excluded.' })),
  require: Type.Optional(Type.Array(AccessGroupRule, { description: 'Users must also match all of these.' })),
  isDefault: Type.Optional(
    Type.Boolean({
      description:
        "The original's default-group flag. Cloudflare's groups no longer have one: true is refused (InvalidSpec), false is what every group is.",
    }),
  ),
  cloudflare: CloudflareDetails,
});

export const AccessGroupStatus = Type.Object({
  groupId: Type.Optional(Type.String({ description: 'The Cloudflare Access group ID.' })),
  ...zeroTrustStatusFields,
});

export type AccessGroupSpec = Static<typeof AccessGroupSpec>;
export type AccessGroupStatus = Static<typeof AccessGroupStatus>;

export interface AccessGroup extends KubernetesObject {
  spec: AccessGroupSpec;
  status?: AccessGroupStatus;
}

export const AccessGroupKind = defineKind({
  group: CLOUDFLARE_GROUP,
  version: CLOUDFLARE_VERSION,
  kind: 'AccessGroup',
  plural: 'accessgroups',
  singular: 'accessgroup',
  shortNames: ['accessgrp'],
  scope: 'Cluster',
  description: 'A reusable Cloudflare Access group: include, exclude and require rules.',
  spec: AccessGroupSpec,
  status: AccessGroupStatus,
  printerColumns: [
    { name: 'GroupID', type: 'string', jsonPath: '.status.groupId' },
    { name: 'State', type: 'string', jsonPath: '.status.state' },
    READY_COLUMN,
  ],
});

// ---------------------------------------------------------------------------------------------
// AccessIdentityProvider
// ---------------------------------------------------------------------------------------------

export const IDENTITY_PROVIDER_TYPES = [
  'onetimepin',
  'azureAD',
  'saml',
  'centrify',
  'facebook',
  'github',
  'google-apps',
  'google',
  'linkedin',
  'oidc',
  'okta',
  'onelogin',
  'pingone',
  'yandex',
] as const;
export type IdentityProviderType = (typeof IDENTITY_PROVIDER_TYPES)[number];

export const SCIM_IDENTITY_UPDATE_BEHAVIORS = ['automatic', 'reauth', 'no_action'] as const;

export const SecretKeySelector = Type.Object({
  name: Type.String({ description: 'Name of the Secret.' }),
  key: Type.String({ description: 'Key in the Secret.' }),
  namespace: Type.Optional(Type.String({ description: 'Namespace of the Secret.' })),
});
export type SecretKeySelector = Static<typeof SecretKeySelector>;

export const IdentityProviderConfig = Type.Object({
  clientId: OptStr(),
  clientSecret: Type.Optional(
    Type.String({ description: 'Inline OAuth client secret (legacy): use configSecretRef instead.' }),
  ),
  appsDomain: OptStr(),
  authUrl: OptStr(),
  tokenUrl: OptStr(),
  certsUrl: OptStr(),
  scopes: Type.Optional(Type.Array(Type.String())),
  attributes: Type.Optional(Type.Array(Type.String())),
  idpPublicCert: OptStr(),
  idpPublicCerts: Type.Optional(Type.Array(Type.String(), { description: 'Deprecated: use idpPublicCert.' })),
  issuerUrl: OptStr(),
  ssoTargetUrl: OptStr(),
  signRequest: OptBool(),
  emailClaimName: OptStr(),
  directoryId: OptStr(),
  supportGroups: OptBool(),
  pkceEnabled: OptBool(),
  conditionalAccessEnabled: OptBool(),
  claims: Type.Optional(Type.Array(Type.String())),
  emailAttributeName: OptStr(),
  headerAttributes: Type.Optional(
    Type.Array(
      Type.Object({
        attributeName: Type.String(),
        headerName: Type.String(),
        required: OptBool(),
      }),
    ),
  ),
  apiToken: Type.Optional(Type.String({ description: 'Inline API token (legacy): use configSecretRef instead.' })),
  oktaAccount: OptStr(),
  oktaAuthorizationServerId: OptStr(),
  oneloginAccount: OptStr(),
  pingEnvId: OptStr(),
  centrifyAccount: OptStr(),
  centrifyAppId: OptStr(),
  redirectUrl: OptStr(),
});
export type IdentityProviderConfig = Static<typeof IdentityProviderConfig>;

export const IdentityProviderScimConfig = Type.Object({
  enabled: OptBool(),
  secret: Type.Optional(Type.String({ description: 'Inline SCIM secret (legacy).' })),
  userDeprovision: OptBool(),
  seatDeprovision: OptBool(),
  groupMemberDeprovision: OptBool(),
  identityUpdateBehavior: Type.Optional(StringEnum(SCIM_IDENTITY_UPDATE_BEHAVIORS)),
});

export const AccessIdentityProviderSpec = Type.Object({
  name: Type.Optional(Type.String({ maxLength: 255, description: 'Name in Cloudflare; default metadata.name.' })),
  type: StringEnum(IDENTITY_PROVIDER_TYPES),
  config: Type.Optional(IdentityProviderConfig),
  configSecretRef: Type.Optional(SecretKeySelector),
  scimConfig: Type.Optional(IdentityProviderScimConfig),
  cloudflare: CloudflareDetails,
});

export const AccessIdentityProviderStatus = Type.Object({
  providerId: Type.Optional(Type.String({ description: 'The Cloudflare identity provider ID.' })),
  ...zeroTrustStatusFields,
});

export type AccessIdentityProviderSpec = Static<typeof AccessIdentityProviderSpec>;
export type AccessIdentityProviderStatus = Static<typeof AccessIdentityProviderStatus>;

export interface AccessIdentityProvider extends KubernetesObject {
  spec: AccessIdentityProviderSpec;
  status?: AccessIdentityProviderStatus;
}

export const AccessIdentityProviderKind = defineKind({
  group: CLOUDFLARE_GROUP,
  version: CLOUDFLARE_VERSION,
  kind: 'AccessIdentityProvider',
  plural: 'accessidentityproviders',
  singular: 'accessidentityprovider',
  shortNames: ['accessidp'],
  scope: 'Cluster',
  description:
    'A Cloudflare Access identity provider (OIDC, SAML, GitHub, …); its secret is read from configSecretRef.',
  spec: AccessIdentityProviderSpec,
  status: AccessIdentityProviderStatus,
  printerColumns: [
    { name: 'Type', type: 'string', jsonPath: '.spec.type' },
    { name: 'ProviderID', type: 'string', jsonPath: '.status.providerId' },
    { name: 'State', type: 'string', jsonPath: '.status.state' },
    READY_COLUMN,
  ],
});

// ---------------------------------------------------------------------------------------------
// VirtualNetwork
// ---------------------------------------------------------------------------------------------

export const VirtualNetworkSpec = Type.Object({
  name: Type.Optional(Type.String({ description: 'Name in Cloudflare; default metadata.name.' })),
  comment: Type.Optional(Type.String({ maxLength: 500 })),
  isDefaultNetwork: Type.Optional(
    Type.Boolean({ default: false, description: "The account's default virtual network. At most one." }),
  ),
  cloudflare: CloudflareDetails,
});

export const VirtualNetworkStatus = Type.Object({
  virtualNetworkId: Type.Optional(Type.String({ description: 'The Cloudflare virtual network ID.' })),
  isDefault: OptBool(),
  ...zeroTrustStatusFields,
});

export type VirtualNetworkSpec = Static<typeof VirtualNetworkSpec>;
export type VirtualNetworkStatus = Static<typeof VirtualNetworkStatus>;

export interface VirtualNetwork extends KubernetesObject {
  spec: VirtualNetworkSpec;
  status?: VirtualNetworkStatus;
}

export const VirtualNetworkKind = defineKind({
  group: CLOUDFLARE_GROUP,
  version: CLOUDFLARE_VERSION,
  kind: 'VirtualNetwork',
  plural: 'virtualnetworks',
  singular: 'virtualnetwork',
  shortNames: ['vnet'],
  scope: 'Cluster',
  description: 'A Cloudflare Zero Trust virtual network: an isolated private address space routed through tunnels.',
  spec: VirtualNetworkSpec,
  status: VirtualNetworkStatus,
  printerColumns: [
    { name: 'VNetID', type: 'string', jsonPath: '.status.virtualNetworkId' },
    { name: 'Default', type: 'boolean', jsonPath: '.status.isDefault' },
    { name: 'State', type: 'string', jsonPath: '.status.state' },
    READY_COLUMN,
  ],
});

/** The four Zero Trust kinds, in the order the CRD generator lists them. */
export const CLOUDFLARE_ZEROTRUST_KINDS = [
  GatewayConfigurationKind,
  AccessGroupKind,
  AccessIdentityProviderKind,
  VirtualNetworkKind,
] as const;
