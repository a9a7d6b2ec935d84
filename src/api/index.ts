/** Every kind the project serves; the CRD generator and the installer iterate this list. */
import { ObjectKeeperKind } from './objectkeeper.js';
import { ManifestCaptureRequestKind, ManifestCheckpointContentChunkKind, ManifestCheckpointKind } from './manifests.js';
import { VolumeCaptureRequestKind, VolumeRestoreRequestKind } from './volumes.js';
import { SandboxKind, SandboxPoolKind } from './sandbox.js';
import { CLOUDFLARE_KINDS } from './cloudflare.js';
import { CLOUDFLARE_TUNNEL_KINDS } from './cloudflare-tunnels.js';
import { CLOUDFLARE_ZONE_KINDS } from './cloudflare-zones.js';
import { CLOUDFLARE_ZEROTRUST_KINDS } from './cloudflare-zerotrust.js';
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
  ...CLOUDFLARE_KINDS,
  ...CLOUDFLARE_TUNNEL_KINDS,
  ...CLOUDFLARE_ZONE_KINDS,
  ...CLOUDFLARE_ZEROTRUST_KINDS,
];

export * from './objectkeeper.js';
export * from './requests.js';
export * from './manifests.js';
export * from './volumes.js';
export * from './sandbox.js';
export * from './cloudflare.js';
export * from './cloudflare-tunnels.js';
export * from './cloudflare-zones.js';
export * from './cloudflare-zerotrust.js';
export { crdOf, type KindDefinition } from './kind.js';
