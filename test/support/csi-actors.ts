/**
 * Integration tests play the external actors a real cluster runs next to the operators (the CSI
 * external-snapshotter sidecar, the common snapshot-controller, the external-provisioner and the
 * PV binder of kube-controller-manager, none of which the test stack runs). Each helper writes
 * what its actor writes to the objects (external-snapshotter v8: pkg/common-controller and
 * pkg/sidecar-controller), through the status subresource where the actor does, including the
 * protection finalizers and annotations that decide how deletion goes; no events or metrics.
 * The CSI backend is a record of the snapshot handles the sidecar deleted (`csiBackend`).
 */
import { randomUUID } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  PatchStrategy,
  setHeaderOptions,
  type KubernetesObject,
  type V1CustomResourceDefinition,
  type V1PersistentVolume,
  type V1PersistentVolumeClaim,
  type V1StorageClass,
} from '@kubernetes/client-node';
import { parse } from 'yaml';
import { KubeClient, statusCode } from '../../src/kube/client.js';
import { eventually } from './env.js';

export const SNAPSHOT_API = 'snapshot.storage.k8s.io/v1';
const CRD_DIR = path.join(path.dirname(fileURLToPath(import.meta.url)), '../fixtures/crds/external-snapshotter');
const CRD_FILES = ['volumesnapshotclasses', 'volumesnapshotcontents', 'volumesnapshots'].map(
  (plural) => `snapshot.storage.k8s.io_${plural}.yaml`,
);
const DEFAULT_CLASS_ANNOTATION = 'snapshot.storage.kubernetes.io/is-default-class';
const mergePatch = setHeaderOptions('Content-Type', PatchStrategy.MergePatch);
/** What the StorageObjectInUseProtection admission plugin puts on every claim. */
export const PVC_PROTECTION_FINALIZER = 'kubernetes.io/pvc-protection';
/** external-snapshotter's pkg/utils: finalizers the snapshot-controller puts on snapshots and contents. */
export const VS_AS_SOURCE_FINALIZER = 'snapshot.storage.kubernetes.io/volumesnapshot-as-source-protection';
export const VS_BOUND_FINALIZER = 'snapshot.storage.kubernetes.io/volumesnapshot-bound-protection';
export const VSC_FINALIZER = 'snapshot.storage.kubernetes.io/volumesnapshotcontent-bound-protection';
/** Set on a content by the snapshot-controller when its VolumeSnapshot is deleted: the sidecar may then delete. */
export const BEING_DELETED_ANNOTATION = 'snapshot.storage.kubernetes.io/volumesnapshot-being-deleted';

/** The CSI driver's backend, as far as tests look at it: the snapshots DeleteSnapshot removed. */
export const csiBackend = { deletedSnapshots: new Set<string>() };

type VolumeMode = 'Filesystem' | 'Block';
type DeletionPolicy = 'Delete' | 'Retain';

export interface VolumeSnapshotClass extends KubernetesObject {
  driver: string;
  deletionPolicy: DeletionPolicy;
  parameters?: Record<string, string>;
}

export interface VolumeSnapshot extends KubernetesObject {
  spec: {
    source: { persistentVolumeClaimName?: string; volumeSnapshotContentName?: string };
    volumeSnapshotClassName?: string;
  };
  status?: {
    boundVolumeSnapshotContentName?: string;
    creationTime?: string;
    readyToUse?: boolean;
    restoreSize?: string;
    error?: { time?: string; message?: string };
  };
}

export interface VolumeSnapshotContent extends KubernetesObject {
  spec: {
    volumeSnapshotRef?: { apiVersion?: string; kind?: string; name?: string; namespace?: string; uid?: string };
    source: { volumeHandle?: string; snapshotHandle?: string };
    driver: string;
    deletionPolicy: DeletionPolicy;
    volumeSnapshotClassName?: string;
    sourceVolumeMode?: VolumeMode;
  };
  status?: {
    snapshotHandle?: string;
    creationTime?: number;
    restoreSize?: number;
    readyToUse?: boolean;
    error?: { time?: string; message?: string };
  };
}

export interface BoundVolume {
  pvc: V1PersistentVolumeClaim;
  pv: V1PersistentVolume;
}

/** Installs the upstream external-snapshotter CRDs (idempotent) and waits until they are served. */
export async function installSnapshotCrds(kube: KubeClient): Promise<void> {
  await applySnapshotCrds(kube, (crd) => crd);
  await eventually(
    'the upstream VolumeSnapshotContent schema in force',
    async () => !(await bareContentAccepted(kube)),
  );
}

/**
 * Deckhouse's external-snapshotter (003-vsc-only-model.patch: "The CRD validation ... is relaxed
 * accordingly"): a VolumeSnapshotContent may have no spec.volumeSnapshotRef. Derived from the
 * upstream files; `installSnapshotCrds` puts the upstream schema back (every file's beforeAll
 * calls it, so a file that stops half-way cannot leak the relaxed one into the next).
 */
export async function installDeckhouseSnapshotCrds(kube: KubeClient): Promise<void> {
  await applySnapshotCrds(kube, (crd) => {
    if (crd.spec.names.kind !== 'VolumeSnapshotContent') return crd;
    for (const version of crd.spec.versions) {
      const spec = version.schema?.openAPIV3Schema?.properties?.spec;
      if (!spec) continue;
      spec.required = spec.required?.filter((r) => r !== 'volumeSnapshotRef');
      // Parsed YAML, so the key is the wire name, not the typed client's x_kubernetes_validations.
      const ref = spec.properties?.volumeSnapshotRef as Record<string, unknown> | undefined;
      if (ref) delete ref['x-kubernetes-validations'];
    }
    return crd;
  });
  await eventually('the relaxed VolumeSnapshotContent schema in force', () => bareContentAccepted(kube));
}

/** Whether the apiserver accepts (dry run) a content without volumeSnapshotRef. */
async function bareContentAccepted(kube: KubeClient): Promise<boolean> {
  try {
    await kube.apply(
      {
        apiVersion: SNAPSHOT_API,
        kind: 'VolumeSnapshotContent',
        metadata: { name: 'schema-probe' },
        spec: { driver: 'probe', deletionPolicy: 'Delete', source: { snapshotHandle: 'probe' } },
      },
      { dryRun: true },
    );
    return true;
  } catch (err) {
    if (statusCode(err) === 422) return false;
    throw err;
  }
}

async function applySnapshotCrds(
  kube: KubeClient,
  edit: (crd: V1CustomResourceDefinition) => V1CustomResourceDefinition,
): Promise<void> {
  const crds: V1CustomResourceDefinition[] = [];
  for (const file of CRD_FILES) {
    const crd = parse(await readFile(path.join(CRD_DIR, file), 'utf8')) as V1CustomResourceDefinition;
    delete crd.status; // the generated placeholder status is not ours to apply
    crds.push(await kube.apply(edit(crd)));
  }
  for (const crd of crds) {
    const name = crd.metadata!.name!;
    await eventually(`CRD ${name} Established`, async () => {
      const live = await kube.apiextensions.readCustomResourceDefinition({ name });
      return live.status?.conditions?.some((c) => c.type === 'Established' && c.status === 'True');
    });
    await eventually(`discovery of ${crd.spec.names.kind}`, () =>
      kube.objects.resourceFor(SNAPSHOT_API, crd.spec.names.kind),
    );
  }
}

/** A CSI volume as external-provisioner + PV binder leave it: StorageClass, bound PV and PVC. */
export async function createCsiVolume(
  kube: KubeClient,
  opts: {
    namespace: string;
    pvcName: string;
    driver: string;
    storageClassName: string;
    size?: string;
    volumeHandle?: string;
    reclaimPolicy?: DeletionPolicy;
    volumeMode?: VolumeMode;
  },
): Promise<BoundVolume> {
  const reclaimPolicy = opts.reclaimPolicy ?? 'Delete';
  await createIfMissing<V1StorageClass>(kube, {
    apiVersion: 'storage.k8s.io/v1',
    kind: 'StorageClass',
    metadata: { name: opts.storageClassName },
    provisioner: opts.driver,
    reclaimPolicy,
    volumeBindingMode: 'Immediate',
  });
  return provisionAndBind(kube, {
    ...opts,
    reclaimPolicy,
    volumeHandle: opts.volumeHandle ?? `vol-${randomUUID()}`,
  });
}

/** A VolumeSnapshotClass as a cluster admin (or the CSI driver's chart) creates it; idempotent. */
export async function createSnapshotClass(
  kube: KubeClient,
  opts: { name: string; driver: string; deletionPolicy?: DeletionPolicy; isDefault?: boolean },
): Promise<VolumeSnapshotClass> {
  return createIfMissing<VolumeSnapshotClass>(kube, {
    apiVersion: SNAPSHOT_API,
    kind: 'VolumeSnapshotClass',
    metadata: {
      name: opts.name,
      annotations: opts.isDefault ? { [DEFAULT_CLASS_ANNOTATION]: 'true' } : undefined,
    },
    driver: opts.driver,
    deletionPolicy: opts.deletionPolicy ?? 'Delete',
  });
}

/** CSI external-snapshotter sidecar, after CreateSnapshot succeeded: the content's status. */
export async function snapshotterMarksContentReady(
  kube: KubeClient,
  vscName: string,
  opts: { snapshotHandle?: string; restoreSizeBytes?: number; creationTimeNs?: number } = {},
): Promise<VolumeSnapshotContent> {
  return (await kube.patchCustomStatus(contentRef(vscName), {
    snapshotHandle: opts.snapshotHandle ?? `snap-${randomUUID()}`,
    creationTime: opts.creationTimeNs ?? Date.now() * 1_000_000,
    // The sidecar leaves restoreSize unset when the driver reports 0 (unknown).
    restoreSize: opts.restoreSizeBytes || undefined,
    readyToUse: true,
    error: null,
  })) as VolumeSnapshotContent;
}

/** CSI external-snapshotter sidecar, after CreateSnapshot failed: the content's status.error. */
export async function snapshotterReportsContentError(
  kube: KubeClient,
  vscName: string,
  message: string,
): Promise<VolumeSnapshotContent> {
  return (await kube.patchCustomStatus(contentRef(vscName), {
    error: { time: rfc3339(new Date()), message },
    readyToUse: false,
  })) as VolumeSnapshotContent;
}

/**
 * snapshot-controller + sidecar for a dynamically provisioned VolumeSnapshot: the content
 * `snapcontent-<vs uid>` bound to it, made ready, then the snapshot's status. Returns the content.
 */
export async function snapshotControllerProvisions(
  kube: KubeClient,
  vsNamespace: string,
  vsName: string,
  opts: { snapshotHandle?: string } = {},
): Promise<VolumeSnapshotContent> {
  const { content, pvc } = await bindContent(kube, vsNamespace, vsName);
  const size = pvc.status?.capacity?.storage ?? pvc.spec?.resources?.requests?.storage ?? '0';
  const ready = await snapshotterMarksContentReady(kube, content.metadata!.name!, {
    snapshotHandle: opts.snapshotHandle,
    restoreSizeBytes: quantityBytes(size),
  });
  await kube.patchCustomStatus(snapshotStatusRef(vsNamespace, vsName), {
    boundVolumeSnapshotContentName: content.metadata!.name,
    creationTime: rfc3339(new Date(ready.status!.creationTime! / 1_000_000)),
    readyToUse: true,
    restoreSize: ready.status!.restoreSize === undefined ? undefined : binaryQuantity(ready.status!.restoreSize),
    error: null,
  });
  return ready;
}

/**
 * snapshot-controller alone, before the sidecar has cut the snapshot: the content
 * `snapcontent-<vs uid>` bound to the VolumeSnapshot, and the snapshot's status naming it (not
 * ready). Returns the content, whose status is the sidecar's to write.
 */
export async function snapshotControllerBinds(
  kube: KubeClient,
  vsNamespace: string,
  vsName: string,
): Promise<VolumeSnapshotContent> {
  const { content } = await bindContent(kube, vsNamespace, vsName);
  await kube.patchCustomStatus(snapshotStatusRef(vsNamespace, vsName), {
    boundVolumeSnapshotContentName: content.metadata!.name,
    readyToUse: false,
  });
  return content;
}

/** The content the snapshot-controller creates for a dynamically provisioned VolumeSnapshot. */
async function bindContent(
  kube: KubeClient,
  vsNamespace: string,
  vsName: string,
): Promise<{ content: VolumeSnapshotContent; pvc: V1PersistentVolumeClaim }> {
  const vs = await mustGet<VolumeSnapshot>(kube, {
    apiVersion: SNAPSHOT_API,
    kind: 'VolumeSnapshot',
    namespace: vsNamespace,
    name: vsName,
  });
  const pvcName = vs.spec.source.persistentVolumeClaimName;
  if (!pvcName) throw new Error(`VolumeSnapshot ${vsNamespace}/${vsName} is not dynamically provisioned`);
  const pvc = await mustGet<V1PersistentVolumeClaim>(kube, {
    apiVersion: 'v1',
    kind: 'PersistentVolumeClaim',
    namespace: vsNamespace,
    name: pvcName,
  });
  if (pvc.status?.phase !== 'Bound' || !pvc.spec?.volumeName)
    throw new Error(`PVC ${vsNamespace}/${pvcName} is not bound`);
  const pv = await mustGet<V1PersistentVolume>(kube, {
    apiVersion: 'v1',
    kind: 'PersistentVolume',
    name: pvc.spec.volumeName,
  });
  if (!pv.spec?.csi) throw new Error(`PV ${pv.metadata!.name} is not a CSI volume`);
  const vsClass = await snapshotClassFor(kube, vs, pv.spec.csi.driver);

  // syncSnapshot adds the as-source finalizer before it makes the content.
  await addFinalizers(kube, snapshotStatusRef(vsNamespace, vsName), [VS_AS_SOURCE_FINALIZER]);
  // Bound from creation (volumeSnapshotRef.uid set), so syncContent adds its finalizer at once.
  const content = await kube.create<VolumeSnapshotContent>({
    apiVersion: SNAPSHOT_API,
    kind: 'VolumeSnapshotContent',
    metadata: { name: `snapcontent-${vs.metadata!.uid}`, finalizers: [VSC_FINALIZER] },
    spec: {
      volumeSnapshotRef: {
        apiVersion: SNAPSHOT_API,
        kind: 'VolumeSnapshot',
        name: vsName,
        namespace: vsNamespace,
        uid: vs.metadata!.uid,
      },
      source: { volumeHandle: pv.spec.csi.volumeHandle },
      driver: vsClass.driver,
      deletionPolicy: vsClass.deletionPolicy,
      volumeSnapshotClassName: vsClass.metadata!.name,
      sourceVolumeMode: (pv.spec.volumeMode as VolumeMode | undefined) ?? 'Filesystem',
    },
  });
  // checkandAddSnapshotFinalizers: the bound finalizer only when the content's policy is Delete.
  if (vsClass.deletionPolicy === 'Delete') {
    await addFinalizers(kube, snapshotStatusRef(vsNamespace, vsName), [VS_BOUND_FINALIZER]);
  }
  return { content, pvc };
}

async function addFinalizers(
  kube: KubeClient,
  ref: { apiVersion: string; kind: string; name: string; namespace?: string },
  add: string[],
): Promise<void> {
  const obj = await mustGet<KubernetesObject>(kube, ref);
  const finalizers = obj.metadata?.finalizers ?? [];
  if (add.every((f) => finalizers.includes(f))) return;
  await kube.mergePatch(ref, {
    metadata: { resourceVersion: obj.metadata!.resourceVersion, finalizers: [...new Set([...finalizers, ...add])] },
  });
}

async function removeFinalizers(kube: KubeClient, obj: KubernetesObject, remove: string[]): Promise<void> {
  const finalizers = obj.metadata?.finalizers ?? [];
  if (!remove.some((f) => finalizers.includes(f))) return;
  const ref = {
    apiVersion: obj.apiVersion!,
    kind: obj.kind!,
    name: obj.metadata!.name!,
    namespace: obj.metadata!.namespace,
  };
  await kube.mergePatch(ref, {
    metadata: {
      resourceVersion: obj.metadata!.resourceVersion,
      finalizers: finalizers.filter((f) => !remove.includes(f)),
    },
  });
}

/**
 * One pass of the snapshot-controller and the csi-snapshotter sidecar over a VolumeSnapshot and
 * its content, for what they do once either is being deleted (by a user or the garbage
 * collector). Returns true once both are gone. Call it until then (`eventually`), as the
 * controllers' informers would. Mirrors external-snapshotter v8:
 *  - common controller, VolumeSnapshot with deletionTimestamp (processSnapshotWithDeletionTimestamp):
 *    mark the bound content volumesnapshot-being-deleted whatever its policy; delete it under
 *    Delete; drop the as-source finalizer, and the bound finalizer unless a Delete content is
 *    still there;
 *  - sidecar, content with deletionTimestamp (syncContent/shouldDelete): acts only once marked
 *    being-deleted (or a VSC-only content of Deckhouse's patch, which needs no mark): under Delete
 *    with a snapshot handle, DeleteSnapshot and clear the handle; then drop the finalizer.
 * A content deleted while its VolumeSnapshot lives and is not being deleted is left waiting.
 */
export async function snapshotControllersReconcileDeletion(
  kube: KubeClient,
  names: { vsNamespace?: string; vsName?: string; contentName: string },
): Promise<boolean> {
  const vsRef = names.vsName
    ? { apiVersion: SNAPSHOT_API, kind: 'VolumeSnapshot', namespace: names.vsNamespace, name: names.vsName }
    : undefined;
  const vscRef = { apiVersion: SNAPSHOT_API, kind: 'VolumeSnapshotContent', name: names.contentName };
  const vs = vsRef && (await kube.get<VolumeSnapshot>(vsRef));
  let vsc = await kube.get<VolumeSnapshotContent>(vscRef);
  const bound = Boolean(vs && vsc && vsc.spec.volumeSnapshotRef?.uid === vs.metadata!.uid);

  if (vs?.metadata?.deletionTimestamp) {
    if (vsc && bound) {
      if (vsc.metadata?.annotations?.[BEING_DELETED_ANNOTATION] !== 'yes') {
        vsc = await kube.mergePatch<VolumeSnapshotContent>(vscRef, {
          metadata: { annotations: { [BEING_DELETED_ANNOTATION]: 'yes' } },
        });
      }
      if (vsc.spec.deletionPolicy === 'Delete' && !vsc.metadata?.deletionTimestamp) {
        await kube.delete(vscRef, { uid: vsc.metadata!.uid });
      }
    }
    const keepBound = Boolean(vsc && bound && vsc.spec.deletionPolicy === 'Delete');
    await removeFinalizers(
      kube,
      vs,
      keepBound ? [VS_AS_SOURCE_FINALIZER] : [VS_AS_SOURCE_FINALIZER, VS_BOUND_FINALIZER],
    );
  }

  vsc = await kube.get<VolumeSnapshotContent>(vscRef);
  if (vsc?.metadata?.deletionTimestamp) {
    const vscOnly = !vsc.spec.volumeSnapshotRef?.uid && vsc.spec.source.volumeHandle !== undefined;
    const shouldDelete =
      vscOnly ||
      (vsc.spec.source.snapshotHandle !== undefined && !vsc.spec.volumeSnapshotRef?.uid) ||
      vsc.metadata.annotations?.[BEING_DELETED_ANNOTATION] === 'yes';
    if (shouldDelete) {
      const handle = vsc.status?.snapshotHandle;
      if (vsc.spec.deletionPolicy === 'Delete' && handle) {
        csiBackend.deletedSnapshots.add(handle);
        await kube.patchCustomStatus(contentRef(names.contentName), {
          snapshotHandle: null,
          readyToUse: null,
          creationTime: null,
          restoreSize: null,
        });
      } else {
        await removeFinalizers(kube, vsc, [VSC_FINALIZER]);
      }
    }
  }

  const vsLeft = vsRef ? await kube.get(vsRef) : undefined;
  const vscLeft = await kube.get(vscRef);
  return !vsLeft && !vscLeft;
}

/**
 * Deckhouse's patched controllers for a VSC-only content (no VolumeSnapshot): the common
 * controller adds its protection finalizer, the sidecar cuts the snapshot and reports it ready.
 */
export async function deckhouseSnapshotterServes(kube: KubeClient, vscName: string): Promise<VolumeSnapshotContent> {
  const ref = { apiVersion: SNAPSHOT_API, kind: 'VolumeSnapshotContent', name: vscName };
  await eventually(`VolumeSnapshotContent ${vscName}`, () => kube.get(ref));
  await addFinalizers(kube, ref, [VSC_FINALIZER]);
  return snapshotterMarksContentReady(kube, vscName);
}

/**
 * The pvc-protection controller, once no pod uses the claim: drops `kubernetes.io/pvc-protection`
 * from a terminating claim so its deletion completes. Returns false while it is not terminating.
 */
export async function pvcProtectionReleases(kube: KubeClient, namespace: string, name: string): Promise<boolean> {
  const pvc = await kube.get<V1PersistentVolumeClaim>({
    apiVersion: 'v1',
    kind: 'PersistentVolumeClaim',
    namespace,
    name,
  });
  if (!pvc) return true;
  if (!pvc.metadata?.deletionTimestamp) return false;
  const finalizers = (pvc.metadata.finalizers ?? []).filter((f) => f !== PVC_PROTECTION_FINALIZER);
  await kube.core.patchNamespacedPersistentVolumeClaim(
    { name, namespace, body: { metadata: { finalizers, resourceVersion: pvc.metadata.resourceVersion } } },
    mergePatch,
  );
  return true;
}

/** (Deckhouse-patched) external-provisioner restoring a snapshot: a new PV and its PVC, bound. */
export async function provisionerRestores(
  kube: KubeClient,
  opts: {
    namespace: string;
    pvcName: string;
    storageClassName: string;
    driver: string;
    size?: string;
    volumeMode?: VolumeMode;
    accessModes?: string[];
  },
): Promise<BoundVolume> {
  return provisionAndBind(kube, { ...opts, volumeHandle: `restored-${randomUUID()}`, reclaimPolicy: 'Delete' });
}

/**
 * external-provisioner's part for a claim: the PV `pvc-<claim uid>` pre-bound to it via claimRef.
 * Then the PV binder's: volume phase Bound, the claim's volumeName and annotations, its status.
 */
async function provisionAndBind(
  kube: KubeClient,
  opts: {
    namespace: string;
    pvcName: string;
    driver: string;
    storageClassName: string;
    volumeHandle: string;
    reclaimPolicy: DeletionPolicy;
    size?: string;
    volumeMode?: VolumeMode;
    accessModes?: string[];
  },
): Promise<BoundVolume> {
  const size = opts.size ?? '1Gi';
  const accessModes = opts.accessModes ?? ['ReadWriteOnce'];
  const volumeMode = opts.volumeMode ?? 'Filesystem';
  const claim = await kube.create<V1PersistentVolumeClaim>({
    apiVersion: 'v1',
    kind: 'PersistentVolumeClaim',
    metadata: { name: opts.pvcName, namespace: opts.namespace },
    spec: {
      accessModes,
      resources: { requests: { storage: size } },
      storageClassName: opts.storageClassName,
      volumeMode,
    },
  });
  const pvName = `pvc-${claim.metadata!.uid}`;
  await kube.create<V1PersistentVolume>({
    apiVersion: 'v1',
    kind: 'PersistentVolume',
    metadata: { name: pvName, annotations: { 'pv.kubernetes.io/provisioned-by': opts.driver } },
    spec: {
      capacity: { storage: size },
      accessModes,
      persistentVolumeReclaimPolicy: opts.reclaimPolicy,
      storageClassName: opts.storageClassName,
      volumeMode,
      csi: { driver: opts.driver, volumeHandle: opts.volumeHandle },
      claimRef: {
        apiVersion: 'v1',
        kind: 'PersistentVolumeClaim',
        namespace: opts.namespace,
        name: opts.pvcName,
        uid: claim.metadata!.uid,
      },
    },
  });
  const pv = await kube.core.patchPersistentVolumeStatus(
    { name: pvName, body: { status: { phase: 'Bound' } } },
    mergePatch,
  );
  const ref = { name: opts.pvcName, namespace: opts.namespace };
  const annotations = {
    'pv.kubernetes.io/bind-completed': 'yes',
    'pv.kubernetes.io/bound-by-controller': 'yes',
    'volume.kubernetes.io/storage-provisioner': opts.driver,
    'volume.beta.kubernetes.io/storage-provisioner': opts.driver,
  };
  await kube.core.patchNamespacedPersistentVolumeClaim(
    { ...ref, body: { metadata: { annotations }, spec: { volumeName: pvName } } },
    mergePatch,
  );
  const pvc = await kube.core.patchNamespacedPersistentVolumeClaimStatus(
    { ...ref, body: { status: { phase: 'Bound', accessModes, capacity: { storage: size } } } },
    mergePatch,
  );
  return { pvc, pv };
}

/** The class the snapshot-controller uses: the named one, else the driver's single default. */
async function snapshotClassFor(kube: KubeClient, vs: VolumeSnapshot, driver: string): Promise<VolumeSnapshotClass> {
  const name = vs.spec.volumeSnapshotClassName;
  if (name) return mustGet<VolumeSnapshotClass>(kube, { apiVersion: SNAPSHOT_API, kind: 'VolumeSnapshotClass', name });
  const { items } = await kube.listPage<VolumeSnapshotClass>(SNAPSHOT_API, 'VolumeSnapshotClass');
  const defaults = items.filter(
    (c) => c.driver === driver && c.metadata?.annotations?.[DEFAULT_CLASS_ANNOTATION] === 'true',
  );
  if (defaults.length !== 1) throw new Error(`${defaults.length} default VolumeSnapshotClasses for driver ${driver}`);
  return defaults[0]!;
}

async function createIfMissing<T extends KubernetesObject>(kube: KubeClient, obj: T): Promise<T> {
  const ref = {
    apiVersion: obj.apiVersion!,
    kind: obj.kind!,
    name: obj.metadata!.name!,
    namespace: obj.metadata!.namespace,
  };
  const existing = await kube.get<T>(ref);
  if (existing) return existing;
  try {
    return await kube.create(obj);
  } catch (err) {
    if (statusCode(err) === 409) return mustGet<T>(kube, ref);
    throw err;
  }
}

async function mustGet<T extends KubernetesObject>(
  kube: KubeClient,
  ref: { apiVersion: string; kind: string; name: string; namespace?: string },
): Promise<T> {
  const obj = await kube.get<T>(ref);
  if (!obj) throw new Error(`${ref.kind} ${ref.namespace ? `${ref.namespace}/` : ''}${ref.name} not found`);
  return obj;
}

function snapshotStatusRef(namespace: string, name: string) {
  return { apiVersion: SNAPSHOT_API, kind: 'VolumeSnapshot', plural: 'volumesnapshots', namespace, name };
}

function contentRef(name: string) {
  return { apiVersion: SNAPSHOT_API, kind: 'VolumeSnapshotContent', plural: 'volumesnapshotcontents', name };
}

/** metav1.Time's wire form: RFC 3339, whole seconds. */
function rfc3339(d: Date): string {
  return d.toISOString().replace(/\.\d{3}Z$/, 'Z');
}

const SUFFIXES: Record<string, number> = {
  '': 1,
  k: 1e3,
  M: 1e6,
  G: 1e9,
  T: 1e12,
  P: 1e15,
  Ki: 2 ** 10,
  Mi: 2 ** 20,
  Gi: 2 ** 30,
  Ti: 2 ** 40,
  Pi: 2 ** 50,
};

/** Bytes of a storage quantity such as `1Gi` or `500M` (the forms tests use). */
export function quantityBytes(q: string): number {
  const m = /^(\d+(?:\.\d+)?)([kMGTP]i?|Ki)?$/.exec(q);
  const factor = m ? SUFFIXES[m[2] ?? ''] : undefined;
  if (!m || factor === undefined) throw new Error(`unsupported quantity ${JSON.stringify(q)}`);
  return Math.round(Number(m[1]) * factor);
}

/** resource.NewQuantity(bytes, BinarySI).String(): the largest binary suffix that divides exactly. */
export function binaryQuantity(bytes: number): string {
  for (const s of ['Pi', 'Ti', 'Gi', 'Mi', 'Ki'])
    if (bytes > 0 && bytes % SUFFIXES[s]! === 0) return `${bytes / SUFFIXES[s]!}${s}`;
  return String(bytes);
}
