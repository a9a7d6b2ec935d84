/**
 * What the Cloudflare aggregation's workflows tell each other, and what users send them. The
 * wire names are part of the user-facing API: `temporal workflow signal --workflow-id
 * cloudflare-sync/<resourceType>/<target> --name reaggregate` forces a full GET-merge-write.
 *
 * Sources register with a target's sync workflow (`registerSource`, sent with signal-with-start
 * so the first source starts it); the sync workflow reads the sources fresh when it syncs
 * (registrations are hints, the source objects are the truth) and reports back to each source's
 * workflow (`syncReported`), which shows the result on the source's own status.
 */
import { defineQuery, defineSignal } from '@temporalio/workflow';
import type { CloudflareConfig } from '../../config.js';
import type { SourceRef } from '../../domain/cloudflare/markers.js';
import type { SyncTarget } from '../../domain/cloudflare/targets.js';

/** The sync settings a target's workflow runs with (from the operator's config, at start). */
export type SyncSettings = Pick<
  CloudflareConfig,
  'clusterId' | 'adoptLegacyMarkers' | 'debounceMs' | 'maxDebounceMs' | 'observeIntervalMs' | 'driftPolicy'
> & {
  /** The task queue of this target's account (its API throttle). */
  cloudflareTaskQueue: string;
};

/** A source's registration with one target: a hint that the sync workflow verifies by a fresh read. */
export interface SourceRegistration {
  ref: SourceRef;
  uid: string;
  /** The generation the source's workflow registered (the sync reports which one Cloudflare shows). */
  generation: number;
  /**
   * What places the source on this target, as its spec says it (the zone name of a ruleset
   * source, the credentials of a device policy): a fresh read that says otherwise means the
   * source has moved elsewhere, and it is left out until it registers there.
   */
  anchor: string;
  /**
   * The CloudflareCredentials this source resolved (its credentialsRef, or the default): its
   * claim. The target is written with one identity (src/domain/cloudflare/identity.ts decides).
   */
  credentials: string;
  /**
   * A digest of what the source's items are made of beyond its spec (the Ingresses, Services or
   * routes it reads): a change there re-registers with the same generation, and must sync.
   */
  view?: string;
  /** TunnelDNS: zones inside the target's zone holding some of the source's hostnames (their CNAMEs go there). */
  subzones?: string[];
}

export interface SyncWorkflowInput {
  target: SyncTarget;
  settings: SyncSettings;
  /** Carried across continue-as-new. */
  sources?: SourceRegistration[];
  /** Removals not yet written to Cloudflare (carried across continue-as-new). */
  pendingRemovals?: SourceRemoval[];
  credentials?: string;
  lastDigest?: string;
  configVersion?: number;
}

export const registerSourceSignal = defineSignal<[SourceRegistration]>('registerSource');
/** A source leaving a target; `orphan`: its items stay in Cloudflare (deletion policy Orphan). */
export type SourceRemoval = SourceRef & { orphan?: boolean };
export const unregisterSourceSignal =
  defineSignal<[{ ref: SourceRef; uid: string; orphan?: boolean }]>('unregisterSource');
/** Force a full GET-merge-write now (no debounce), e.g. after fixing something by hand. */
export const reaggregateSignal = defineSignal<[]>('reaggregate');

/** How one target's last sync went for one source. */
export interface SyncReport {
  /** `targetKey` of the target. */
  target: string;
  syncState: string;
  /** Synced: Cloudflare shows this generation of the source. Removed: its items are gone from Cloudflare. */
  result: 'Synced' | 'Removed' | 'Invalid' | 'Conflict' | 'Failed';
  /** The source generation the report is about. */
  generation: number;
  reason: string;
  message: string;
  /** Synced only: the Cloudflare object's ID, for kinds that show it (`status.groupId`, `status.recordId`, …). */
  cloudflareId?: string;
}
export const syncReportedSignal = defineSignal<[SyncReport]>('syncReported');

/** Hint from the watcher: the source object was created, changed or is being deleted. */
export const sourceChangedSignal = defineSignal<[{ event: string }?]>('sourceChanged');

export interface SyncStateView {
  target: string;
  syncState: string;
  sources: string[];
  configVersion: number;
  lastResult?: string;
  lastWrite?: string;
}
export const syncStateQuery = defineQuery<SyncStateView>('syncState');

export interface SourceInput {
  ref: SourceRef;
  /**
   * How long a source hears nothing before it registers again (default 5 min; the watcher passes
   * the observation interval, so a shortened one shortens both).
   */
  reregisterMs?: number;
  /** Continue as new past this many history events, before Temporal suggests it (at a quiet moment). */
  continueAfterEvents?: number;
}
