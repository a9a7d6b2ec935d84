/**
 * Volume capture and restore rules, pure and workflow-safe. Activities gather plain facts with
 * uncached GETs and hand them here; every terminal verdict (and its message) is decided in this
 * module, so the rules are unit-tested without an apiserver.
 */
import { RequestReason } from '../api/requests.js';
import { STORAGE_GROUP, type VolumeRestoreRequestSpec, type VolumeTarget } from '../api/volumes.js';
import { failed, type RequestOutcome } from './requests.js';
import { failedWith, ok, type Outcome } from './results.js';

export const SNAPSHOT_API = 'snapshot.storage.k8s.io/v1';
/** Marks the VolumeSnapshotClass a driver uses when nothing names one (external-snapshotter's annotation). */
export const DEFAULT_SNAPSHOT_CLASS_ANNOTATION = 'snapshot.storage.kubernetes.io/is-default-class';
/**
 * The reclaim policy a detached PersistentVolume had before the capture set Retain: recorded on
 * the PV itself, so a retried or restarted detach restores the user's policy and not ours.
 */
export const ORIGINAL_RECLAIM_POLICY_ANNOTATION = `${STORAGE_GROUP}/original-reclaim-policy`;

export type SnapshotMode = 'VolumeSnapshot' | 'Content';
export type VolumeMode = 'Filesystem' | 'Block';

type Verdict = Outcome;
const OK: Verdict = ok();
const fail = (reason: Parameters<typeof failed>[0], message: string): Verdict => failedWith(failed(reason, message));

/** What a capture needs to know about one target, resolved once (small plain data for the history). */
export interface ResolvedVolumeTarget {
  /** Position in spec.targets: names the snapshot (snapshotNameFor). */
  index: number;
  /** The target as the user wrote it (echoed into status.dataRefs). */
  target: VolumeTarget;
  namespace: string;
  pvcName: string;
  pvcUid: string;
  pvName: string;
  pvUid: string;
  driver: string;
  volumeHandle: string;
  volumeMode: VolumeMode;
  /** persistentVolumeReclaimPolicy before the capture touched the volume. */
  reclaimPolicy: string;
  /** Snapshot mode only: the VolumeSnapshotClass and its deletionPolicy. */
  snapshotClass?: string;
  deletionPolicy?: string;
}

export function claimLabel(namespace: string, name: string): string {
  return `PVC ${namespace}/${name}`;
}

/**
 * Checks the targets as written, before anything is read: each must be a v1 PVC in the request's
 * own namespace, and none may be listed twice (a Detach would release one volume twice).
 */
export function checkTargets(targets: readonly VolumeTarget[], requestNamespace: string): Verdict {
  const seen = new Set<string>();
  for (const t of targets) {
    // A namespaced request must never reach into another namespace: that would let anyone who
    // may create a request in their namespace snapshot or detach someone else's volumes.
    if (t.namespace !== undefined && t.namespace !== requestNamespace) {
      return fail(
        RequestReason.RBACDenied,
        `target ${t.namespace}/${t.name}: targets must be in the request's namespace (${requestNamespace})`,
      );
    }
    // Admission (CEL) already enforces this; kept so a CRD installed without the rule cannot slip by.
    if (t.apiVersion !== 'v1' || t.kind !== 'PersistentVolumeClaim') {
      return fail(RequestReason.InvalidSource, `target ${t.kind} ${t.name}: targets must be v1 PersistentVolumeClaims`);
    }
    if (seen.has(t.name)) return fail(RequestReason.InvalidSource, `target PVC ${t.name} is listed twice`);
    seen.add(t.name);
  }
  return OK;
}

/** A PVC as a fresh GET showed it (undefined: it does not exist). */
export interface ClaimFacts {
  uid: string;
  phase?: string;
  volumeName?: string;
  deleting: boolean;
}

export function judgeClaim(target: VolumeTarget, namespace: string, pvc: ClaimFacts | undefined): Verdict {
  const label = claimLabel(namespace, target.name);
  if (!pvc) {
    return fail(
      RequestReason.NotFound,
      `${label} not found; the request captures volumes as they are now — create a new request once it exists`,
    );
  }
  if (target.uid && target.uid !== pvc.uid) {
    return fail(
      RequestReason.NotFound,
      `${label} was recreated: it has uid ${pvc.uid}, the request names uid ${target.uid}`,
    );
  }
  // A claim on its way out is the user's decision to drop the data: capturing it would race the
  // deletion (the snapshot-controller refuses to snapshot a terminating claim).
  if (pvc.deleting) return fail(RequestReason.InvalidSource, `${label} is being deleted`);
  if (pvc.phase !== 'Bound' || !pvc.volumeName) {
    return fail(RequestReason.InvalidSource, `${label} is not bound to a volume (phase ${pvc.phase ?? 'unknown'})`);
  }
  return OK;
}

/** The claim's PersistentVolume as a fresh GET showed it. */
export interface VolumeFacts {
  name: string;
  uid: string;
  csi?: { driver: string; volumeHandle: string };
  claimUid?: string;
  volumeMode?: string;
  reclaimPolicy?: string;
  storageClassName?: string;
  /** Another object's controller ownerReference, if any (kind/name). */
  controlledBy?: string;
}

export function judgeVolume(
  label: string,
  pvc: ClaimFacts,
  pv: VolumeFacts | undefined,
  mode: 'Snapshot' | 'Detach',
): Verdict {
  if (!pv)
    return fail(
      RequestReason.NotFound,
      `${label} is bound to PersistentVolume ${pvc.volumeName}, which does not exist`,
    );
  if (!pv.csi?.volumeHandle) {
    return fail(RequestReason.InvalidSource, `${label}: PersistentVolume ${pv.name} is not a CSI volume`);
  }
  // The claim says volumeName, but only the volume's claimRef makes the binding mutual.
  if (pv.claimUid !== pvc.uid) {
    return fail(RequestReason.InvalidSource, `${label}: PersistentVolume ${pv.name} is not bound to this claim`);
  }
  // Detach hands the volume to the request's ObjectKeeper as its one controller owner.
  if (mode === 'Detach' && pv.controlledBy) {
    return fail(
      RequestReason.InvalidSource,
      `${label}: PersistentVolume ${pv.name} is already controlled by ${pv.controlledBy}`,
    );
  }
  return OK;
}

/** A VolumeSnapshotClass, reduced to what selection needs. */
export interface SnapshotClassFacts {
  name: string;
  driver: string;
  deletionPolicy: string;
  isDefault: boolean;
}

export type SnapshotClassChoice = Outcome<{ snapshotClass: SnapshotClassFacts }>;

/**
 * Which VolumeSnapshotClass snapshots a volume: the one the StorageClass names (annotation
 * storage.deckhouse.io/volumesnapshotclass, as the original reads it), else the driver's single
 * default class, else the driver's only class. Guessing between several would pick a deletion
 * policy or backend parameters the admin did not choose, so ambiguity is terminal.
 */
export function selectSnapshotClass(input: {
  label: string;
  driver: string;
  storageClassName?: string;
  /** From the StorageClass annotation, when present. */
  requested?: string;
  classes: readonly SnapshotClassFacts[];
}): SnapshotClassChoice {
  const { label, driver, requested, classes } = input;
  const sc = input.storageClassName ? `StorageClass ${input.storageClassName}` : 'the volume (no StorageClass)';
  const incompatible = (message: string): SnapshotClassChoice => ({
    status: 'failed',
    outcome: failed(RequestReason.Incompatible, `${label}: ${message}`),
  });
  if (requested) {
    const named = classes.find((c) => c.name === requested);
    if (!named) return incompatible(`${sc} names VolumeSnapshotClass ${requested}, which does not exist`);
    if (named.driver !== driver) {
      return incompatible(
        `${sc} names VolumeSnapshotClass ${requested} of driver ${named.driver}, but the volume's CSI driver is ${driver}`,
      );
    }
    return { status: 'ok', snapshotClass: named };
  }
  const forDriver = classes.filter((c) => c.driver === driver);
  const defaults = forDriver.filter((c) => c.isDefault);
  if (defaults.length === 1) return { status: 'ok', snapshotClass: defaults[0]! };
  const names = (cs: readonly SnapshotClassFacts[]) =>
    cs
      .map((c) => c.name)
      .sort()
      .join(', ');
  const hint = input.storageClassName
    ? `annotate ${sc} with ${STORAGE_GROUP}/volumesnapshotclass=<class>`
    : `mark exactly one of them with ${DEFAULT_SNAPSHOT_CLASS_ANNOTATION}: "true"`;
  if (defaults.length > 1) {
    return incompatible(
      `several VolumeSnapshotClasses are the default for driver ${driver} (${names(defaults)}); ${hint}`,
    );
  }
  if (forDriver.length === 1) return { status: 'ok', snapshotClass: forDriver[0]! };
  if (forDriver.length === 0) return incompatible(`no VolumeSnapshotClass exists for CSI driver ${driver}`);
  return incompatible(
    `${forDriver.length} VolumeSnapshotClasses exist for driver ${driver} (${names(forDriver)}) and none is ` +
      `the default; ${hint}`,
  );
}

/** What one poll of a snapshot under way showed (undefined object: it does not exist). */
export interface SnapshotObservation {
  mode: SnapshotMode;
  /** VolumeSnapshot mode only. */
  snapshot?: { readyToUse?: boolean; boundContentName?: string; error?: string };
  content?: { name: string; readyToUse?: boolean; volumeHandle?: string; error?: string };
}

export type SnapshotVerdict =
  | { state: 'ready'; contentName: string }
  | { state: 'waiting'; waitingFor: string; actor: string; error?: string }
  | { state: 'failed'; outcome: RequestOutcome };

/**
 * Where a snapshot stands. A status.error is not terminal: the upstream sidecar keeps retrying
 * CreateSnapshot and clears the error when one succeeds; it only shows up in the deadline message.
 */
export function judgeSnapshot(
  obs: SnapshotObservation,
  expected: { what: string; driver: string; volumeHandle: string },
): SnapshotVerdict {
  const { what, driver } = expected;
  const sidecar = `the csi-snapshotter sidecar of driver ${driver}`;
  const error = obs.content?.error ?? obs.snapshot?.error;
  if (obs.mode === 'VolumeSnapshot' && !obs.snapshot) {
    return {
      state: 'failed',
      outcome: failed(RequestReason.Failed, `${what} was deleted before it became ready`),
    };
  }
  if (obs.mode === 'VolumeSnapshot' && !obs.snapshot?.boundContentName) {
    return {
      state: 'waiting',
      waitingFor: 'a VolumeSnapshotContent to be created and bound',
      actor: 'the snapshot-controller',
      error,
    };
  }
  if (!obs.content) {
    return obs.mode === 'VolumeSnapshot'
      ? {
          state: 'waiting',
          waitingFor: `the bound VolumeSnapshotContent ${obs.snapshot!.boundContentName} to exist`,
          actor: 'the snapshot-controller',
          error,
        }
      : { state: 'failed', outcome: failed(RequestReason.Failed, `${what} was deleted before it became ready`) };
  }
  // The source is fixed when the content is made; another handle means the claim was recreated
  // between our checks and the snapshot, so the snapshot is of someone else's data.
  if (obs.content.volumeHandle && obs.content.volumeHandle !== expected.volumeHandle) {
    return {
      state: 'failed',
      outcome: failed(
        RequestReason.InvalidSource,
        `${what} snapshots volume ${obs.content.volumeHandle}, not ${expected.volumeHandle}: the claim was replaced`,
      ),
    };
  }
  if (!obs.content.readyToUse) {
    return {
      state: 'waiting',
      waitingFor: `VolumeSnapshotContent ${obs.content.name} to become readyToUse`,
      actor: sidecar,
      error,
    };
  }
  if (obs.mode === 'VolumeSnapshot' && !obs.snapshot?.readyToUse) {
    return {
      state: 'waiting',
      waitingFor: 'the VolumeSnapshot to become readyToUse',
      actor: 'the snapshot-controller',
      error,
    };
  }
  return { state: 'ready', contentName: obs.content.name };
}

/** What a wait was still waiting for when its deadline passed, and whom to look at. */
export interface WaitingFor {
  waitingFor: string;
  actor: string;
  error?: string;
  /** A full "what to check" sentence, when "check <actor>'s logs and events" does not fit. */
  hint?: string;
}

/** The content's controller ownerReference and binding, as a fresh GET showed them. */
export interface BoundContentFacts {
  name: string;
  volumeSnapshotRef?: { namespace?: string; name?: string; uid?: string };
  controller?: { kind: string; name: string; uid: string };
}

export type ContentAdoption = { state: 'owned' } | { state: 'adopt' } | { state: 'failed'; outcome: RequestOutcome };

/**
 * In VolumeSnapshot mode the snapshot-controller makes the VolumeSnapshotContent, without owners:
 * deleting the VolumeSnapshot deletes it only under deletionPolicy Delete, so with Retain it would
 * outlive the request forever. Once bound, the content is handed to the request's keeper as its
 * controller owner (cluster-scoped → cluster-scoped, legal), and the garbage collector removes it
 * with the VolumeSnapshot whatever the policy (the backend snapshot still follows the policy: the
 * sidecar deletes it only under Delete). The snapshot-controller sets no ownerReferences on
 * contents it makes; one controlled by something else, or bound to another VolumeSnapshot, is not
 * ours to take.
 */
export function judgeContentAdoption(
  what: string,
  content: BoundContentFacts,
  snapshot: { namespace: string; name: string; uid: string },
  keeperUid: string,
): ContentAdoption {
  const label = `VolumeSnapshotContent ${content.name}`;
  if (content.controller?.uid === keeperUid) return { state: 'owned' };
  const ref = content.volumeSnapshotRef;
  if (ref?.namespace !== snapshot.namespace || ref?.name !== snapshot.name || ref?.uid !== snapshot.uid) {
    return {
      state: 'failed',
      outcome: failed(
        RequestReason.Failed,
        `${what}: ${label} is bound to another VolumeSnapshot (${ref?.namespace ?? '?'}/${ref?.name ?? '?'}); ` +
          'check the snapshot-controller',
      ),
    };
  }
  if (content.controller) {
    return {
      state: 'failed',
      outcome: failed(
        RequestReason.Failed,
        `${what}: ${label} is controlled by ${content.controller.kind} ${content.controller.name}, so the ` +
          "request's ObjectKeeper cannot own it and it would outlive the request",
      ),
    };
  }
  return { state: 'adopt' };
}

/** The terminal message when a wait on an external actor passed its deadline. */
export function deadlineMessage(what: string, done: string, timeoutMs: number, waiting: WaitingFor): string {
  const err = waiting.error ? `; last error: ${waiting.error}` : '';
  const hint = waiting.hint ?? `Check ${waiting.actor} (its logs and the object's events)`;
  return `${what} was not ${done} within ${humanDuration(timeoutMs)}: still waiting for ${waiting.waitingFor}${err}. ${hint}`;
}

/** `8s`, `30m`, `1h30m`: the deadline as a person configured it (DO_REQUEST_WAIT_TIMEOUT). */
export function humanDuration(ms: number): string {
  if (ms < 1000) return `${ms}ms`;
  let s = Math.round(ms / 1000);
  const h = Math.floor(s / 3600);
  s -= h * 3600;
  const m = Math.floor(s / 60);
  s -= m * 60;
  return `${h ? `${h}h` : ''}${m ? `${m}m` : ''}${s || (!h && !m) ? `${s}s` : ''}`;
}

/** The upstream VolumeSnapshotContent CRD requires volumeSnapshotRef; Deckhouse's patched one does not. */
export function isUpstreamContentRejection(code: number | undefined, message: string): boolean {
  return code === 422 && /volumeSnapshotRef/.test(message);
}

export function upstreamContentMessage(label: string, apiMessage: string): string {
  return (
    `${label}: this cluster runs the upstream VolumeSnapshotContent CRD, which refuses a content without ` +
    `spec.volumeSnapshotRef (${apiMessage}). Content mode needs Deckhouse's patched external-snapshotter; ` +
    `install it, or set DO_VOLUME_SNAPSHOT_MODE=VolumeSnapshot on the worker to snapshot through VolumeSnapshots`
  );
}

// ---------------------------------------------------------------------------------------------
// Restore
// ---------------------------------------------------------------------------------------------

/**
 * The restored PVC must land in the request's own namespace. The original accepted any
 * targetNamespace, which let anyone allowed to create a request in one namespace place data
 * (possibly someone else's snapshot) into a namespace they cannot write: a privilege escalation.
 */
export function checkRestoreNamespace(spec: VolumeRestoreRequestSpec, requestNamespace: string): Verdict {
  if (spec.targetNamespace !== requestNamespace) {
    return fail(
      RequestReason.RBACDenied,
      `targetNamespace ${spec.targetNamespace} is not the request's namespace (${requestNamespace}); ` +
        'a restore only creates a PVC next to its request',
    );
  }
  return OK;
}

/** The restore source as a fresh GET showed it (undefined: it does not exist). */
export type RestoreSourceFacts =
  | {
      kind: 'VolumeSnapshotContent';
      name: string;
      deleting: boolean;
      driver: string;
      readyToUse?: boolean;
      error?: string;
      sourceVolumeMode?: string;
    }
  | {
      kind: 'PersistentVolume';
      name: string;
      deleting: boolean;
      driver?: string;
      phase?: string;
      claimRef?: { namespace?: string; name?: string; uid?: string };
      volumeMode?: string;
      /** Carries this project's detached mark (a Detach capture took it, or is taking it). */
      detached?: boolean;
    };

/**
 * The claim a detached volume is reserved (pre-bound) for: never created, so nothing can bind the
 * volume, and the PV binder keeps it Available.
 */
export function reservedClaimName(pvcUid: string): string {
  return `detached-${pvcUid}`;
}

const RESERVED_CLAIM = /^detached-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/** Reserved by our own Detach: the detached mark and a UID-less claimRef to the reserved name. */
function reservedByDetach(source: Extract<RestoreSourceFacts, { kind: 'PersistentVolume' }>): boolean {
  const ref = source.claimRef;
  return Boolean(source.detached && ref && !ref.uid && ref.name && RESERVED_CLAIM.test(ref.name));
}

/**
 * Judges a restore source. Absent is terminal NotFound (a request describes the state at its
 * creation: a source that appears later needs a new request). A content that exists but is not
 * readyToUse yet, with no error, is the temporary absence of status the sidecar will fill in:
 * `pending` says what to wait for (the workflow waits under the request's deadline). A content's
 * status.error is the external controller's verdict and terminal.
 */
export function judgeRestoreSource(
  spec: VolumeRestoreRequestSpec,
  source: RestoreSourceFacts | undefined,
): Outcome<{ driver: string; pending?: WaitingFor }> {
  const label = `${spec.sourceRef.kind} ${spec.sourceRef.name}`;
  if (!source) return { status: 'failed', outcome: failed(RequestReason.NotFound, `${label} not found`) };
  const invalid = (message: string) => ({
    status: 'failed' as const,
    outcome: failed(RequestReason.InvalidSource, message),
  });
  if (source.deleting) return invalid(`${label} is being deleted`);
  if (source.kind === 'VolumeSnapshotContent') {
    if (source.sourceVolumeMode && source.sourceVolumeMode !== spec.volumeMode) {
      return {
        status: 'failed',
        outcome: failed(
          RequestReason.Incompatible,
          `${label} was taken from a ${source.sourceVolumeMode} volume; it cannot be restored as volumeMode ${spec.volumeMode}`,
        ),
      };
    }
    if (!source.readyToUse) {
      if (source.error) return invalid(`${label} is not readyToUse: ${source.error}`);
      return {
        status: 'ok',
        driver: source.driver,
        pending: {
          waitingFor: `${label} to become readyToUse`,
          actor: `the csi-snapshotter sidecar of driver ${source.driver}`,
        },
      };
    }
    return { status: 'ok', driver: source.driver };
  }
  if (!source.driver) return invalid(`${label} is not a CSI volume`);
  // Detach leaves the volume reserved for a claim nobody uses; with no PV binder looking yet the
  // phase may still read Bound from before.
  if (source.phase === 'Bound' && source.claimRef && !reservedByDetach(source)) {
    const claim = source.claimRef.name ? ` to ${source.claimRef.namespace ?? ''}/${source.claimRef.name}` : '';
    const hint = source.detached
      ? '; it is being detached by a VolumeCaptureRequest: restore from it once that capture is Ready'
      : '; only a released volume can be restored';
    return {
      status: 'failed',
      outcome: failed(RequestReason.PVBound, `${label} is bound${claim}${hint}`),
    };
  }
  const mode = source.volumeMode ?? 'Filesystem';
  if (mode !== spec.volumeMode) {
    return {
      status: 'failed',
      outcome: failed(
        RequestReason.Incompatible,
        `${label} is a ${mode} volume; it cannot be restored as volumeMode ${spec.volumeMode}`,
      ),
    };
  }
  return { status: 'ok', driver: source.driver };
}

/** The requested StorageClass must exist and be served by the source's driver (no cross-driver restore). */
export function judgeRestoreStorageClass(
  storageClassName: string,
  driver: string,
  storageClass: { provisioner: string } | undefined,
): Verdict {
  if (!storageClass) return fail(RequestReason.NotFound, `StorageClass ${storageClassName} not found`);
  if (storageClass.provisioner !== driver) {
    return fail(
      RequestReason.Incompatible,
      `StorageClass ${storageClassName} provisions with ${storageClass.provisioner}, but the source belongs to driver ${driver}`,
    );
  }
  return OK;
}

/**
 * A PVC of the target name that predates the request is someone's data: the provisioner would
 * never fill it, and reporting it as restored would be a lie. (Same-second creation cannot be
 * told apart at metav1.Time's resolution and is taken as the provisioner's.)
 */
export function judgeExistingTarget(
  label: string,
  pvc: { creationTimestamp?: string } | undefined,
  requestCreated: string | undefined,
): Verdict {
  if (!pvc?.creationTimestamp || !requestCreated) return OK;
  if (Date.parse(pvc.creationTimestamp) < Date.parse(requestCreated)) {
    return fail(RequestReason.RestoreFailed, `${label} already exists; a restore never overwrites a PVC`);
  }
  return OK;
}

export type RestoredClaimVerdict =
  { state: 'bound'; uid: string } | { state: 'waiting'; seen: string } | { state: 'failed'; outcome: RequestOutcome };

/** Where the provisioner's PVC stands: absent or Pending is waiting, Bound is done, Lost is terminal. */
export function judgeRestoredClaim(
  label: string,
  pvc: { uid: string; phase?: string } | undefined,
): RestoredClaimVerdict {
  if (!pvc) return { state: 'waiting', seen: 'not created yet' };
  if (pvc.phase === 'Bound') return { state: 'bound', uid: pvc.uid };
  if (pvc.phase === 'Lost') {
    return {
      state: 'failed',
      outcome: failed(RequestReason.RestoreFailed, `${label} is Lost: its PersistentVolume disappeared`),
    };
  }
  return { state: 'waiting', seen: `phase ${pvc.phase ?? 'unknown'}` };
}
