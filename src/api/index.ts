/** Every kind the project serves; the CRD generator and the installer iterate this list. */
import { ObjectKeeperKind } from './objectkeeper.js';
import { ManifestCaptureRequestKind, ManifestCheckpointContentChunkKind, ManifestCheckpointKind } from './manifests.js';
import { VolumeCaptureRequestKind, VolumeRestoreRequestKind } from './volumes.js';
import { SandboxKind, SandboxPoolKind } from './sandbox.js';
import {
  CloudflareCredentialsKind,
  CloudflareSyncStateKind,
  DeviceSettingsPolicyKind,
  RedirectRuleKind,
  TransformRuleKind,
  ZoneRulesetKind,
} from './cloudflare.js';
import type { KindDefinition } from './kind.js';

export const ALL_KINDS: KindDefinition[] = [
  ObjectKeeperKind,
  ManifestCaptureRequestKind,
  ManifestCheckpointKind,
  ManifestCheckpointContentChunkKind,
  VolumeCaptureRequestKind,
  VolumeRestoreRequestKind,
  SandboxKind,
  SandboxPoolKind,
  CloudflareSyncStateKind,
  CloudflareCredentialsKind,
  DeviceSettingsPolicyKind,
  ZoneRulesetKind,
  TransformRuleKind,
  RedirectRuleKind,
];

export * from './objectkeeper.js';
export * from './requests.js';
export * from './manifests.js';
export * from './volumes.js';
export * from './sandbox.js';
export * from './cloudflare.js';
export { crdOf, type KindDefinition } from './kind.js';
