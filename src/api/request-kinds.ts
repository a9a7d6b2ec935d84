/**
 * The one table of fire-and-forget request kinds. The watcher's route, the workflows (one per
 * kind, see src/workflows/requests/contract.ts), the TTL sweep, the activities and the names of
 * a request's artifacts all take their list of kinds from here, so adding a kind is one entry.
 */
import type { KindDefinition } from './kind.js';
import { ManifestCaptureRequestKind } from './manifests.js';
import { VolumeCaptureRequestKind, VolumeRestoreRequestKind } from './volumes.js';

interface RequestKind {
  definition: KindDefinition & { apiVersion: string };
  /** In the name of the request's ObjectKeeper: `ret-<keeperPrefix>-<request uid>`. */
  keeperPrefix: string;
}

export const REQUEST_KINDS = {
  ManifestCaptureRequest: { definition: ManifestCaptureRequestKind, keeperPrefix: 'mcr' },
  VolumeCaptureRequest: { definition: VolumeCaptureRequestKind, keeperPrefix: 'vcr' },
  VolumeRestoreRequest: { definition: VolumeRestoreRequestKind, keeperPrefix: 'vrr' },
} as const satisfies Record<string, RequestKind>;

export type RequestKindName = keyof typeof REQUEST_KINDS;

export const REQUEST_KIND_NAMES = Object.keys(REQUEST_KINDS) as RequestKindName[];
