/**
 * A Tunnel's (or ClusterTunnel's) own tunnel: created (`newTunnel`) or adopted
 * (`existingTunnel`) before the Tunnel registers its settings with the tunnel's configuration,
 * deleted on removal when the operator created it. Run on the account's task queue.
 *
 * Create is idempotent across crashes: the intent (`status.state: creating` with the name) is
 * recorded on the Tunnel before the POST, the ID right after it — before the credentials Secret,
 * whose failure then leaves a tunnel the next attempt and a deletion know. A retry that finds a
 * live tunnel of that name with the intent recorded takes it as the one it made; without the
 * intent, a tunnel of that name is someone else's and is never taken (use existingTunnel to adopt
 * it). A create Cloudflare refuses with 409 (the name taken meanwhile) clears the intent.
 * The ID is recorded in the annotation `cloudflare-operator.io/cloudflare-id` too, before the
 * status, with the worker's proof that this object (its UID) made it
 * (src/domain/cloudflare/tunnel-ownership.ts): a Tunnel whose status was lost knows its tunnel
 * again by them. The annotation alone — which a user could write were the webhook bypassed — makes
 * no tunnel anyone's, and only a tunnel this object made is ever deleted with it.
 *
 * A tunnel another namespace's Tunnel or ClusterTunnel manages (its configuration's SyncState
 * lists it) is never bound, run or deleted from here (`TunnelInUse`), checked on each resolve;
 * binding an unmanaged one (`existingTunnel`) needs the credentials' adoptNamespaces grant,
 * checked before this runs (src/domain/cloudflare/credentials-use.ts).
 *
 * Deleting: Cloudflare refuses to delete a tunnel that still has connections (1022); the connector
 * is stopped before (src/activities/kubernetes/connector.ts) and a refusal is retried, as is an
 * authentication failure (a revoked token), with the reason on the Tunnel's status — never a
 * failed workflow. The deletion-policy annotation Orphan releases it without deleting the tunnel.
 *
 * Credentials go into a Secret named after the Tunnel (in its namespace; a ClusterTunnel's in
 * the operator's Cloudflare namespace) with the keys cloudflared reads: `credentials.json`
 * (AccountTag, TunnelID, TunnelSecret) and `token` (for `cloudflared tunnel run --token`). They
 * are read from Cloudflare's token endpoint inside this activity and never leave it: the result
 * carries the ID only. The Secret is owned by the Tunnel (garbage-collected with it), and an
 * existing Secret of that name that is not is never overwritten. The worker creates and patches
 * Secrets but never reads one outside its own namespace (deploy/rbac/worker.yaml).
 */
import { ApplicationFailure } from '@temporalio/common';
import { PatchStrategy, setHeaderOptions, type KubernetesObject } from '@kubernetes/client-node';
import type Cloudflare from 'cloudflare';
import {
  CLOUDFLARE_DELETION_POLICY_ANNOTATION,
  CLOUDFLARE_ID_ANNOTATION,
  CloudflareSyncStateKind,
  DEFAULT_CREDENTIALS_NAMESPACE,
  ORIGINAL_SECRET_FINALIZER_PREFIX,
  type CloudflareSyncState,
} from '../../api/cloudflare.js';
import { ClusterTunnelKind, TunnelKind, type TunnelSpec, type TunnelStatus } from '../../api/cloudflare-tunnels.js';
import type { CloudflareConfig } from '../../config.js';
import type { SourceRef } from '../../domain/cloudflare/markers.js';
import { TOKEN_CHECKSUM_ANNOTATION } from '../../domain/cloudflare/connector.js';
import { permissionFor } from '../../domain/cloudflare/permissions.js';
import { syncStateName } from '../../domain/cloudflare/targets.js';
import {
  CLOUDFLARE_ID_PROOF_ANNOTATION,
  otherNamespaceManager,
  tunnelInUse,
} from '../../domain/cloudflare/tunnel-ownership.js';
import { failedWith, ok, type Outcome } from '../../domain/results.js';
import { statusCode, type KubeClient } from '../../kube/client.js';
import { faultPoint } from '../fault-points.js';
import { getObject, heartbeat } from '../kubernetes/calls.js';
import { kubeFailure } from '../kubernetes/errors.js';
import type { CallBudget } from './call-budget.js';
import { clientFor } from './credentials.js';
import { tokenChecksum, tunnelProof, tunnelProofHolds } from './tunnel-proof.js';
import { cloudflareFailure, isCloudflareNameTaken, isCloudflareTunnelBusy, unlessNotFound } from './errors.js';

export interface TunnelRequest {
  ref: SourceRef;
  uid: string;
  credentials: string;
  accountId: string;
}

export interface EnsuredTunnel {
  tunnelId: string;
  tunnelName: string;
  /** The Secret holding its credentials (`namespace/name`). */
  secret: string;
}

type TunnelObject = KubernetesObject & { spec: TunnelSpec; status?: TunnelStatus };
interface CfTunnel {
  id: string;
  name: string;
  deleted_at?: string | null;
}

/** The permission every tunnel call here needs (src/domain/cloudflare/permissions.ts names it). */
const TUNNEL_EDIT = permissionFor({ resourceType: 'TunnelConfiguration', accountId: '', tunnelId: '' }, 'Edit')!;

/** The ID the Tunnel's annotation records (src/api/cloudflare.ts CLOUDFLARE_ID_ANNOTATION). */
function claimedTunnelId(obj: TunnelObject): string | undefined {
  return obj.metadata?.annotations?.[CLOUDFLARE_ID_ANNOTATION] || undefined;
}

/** The key of the worker's proofs: the credentials' secret, which no namespace user reads. */
function proofKey(cf: Cloudflare): string {
  return cf.apiToken ?? cf.apiKey ?? '';
}

const ownerOf = (req: TunnelRequest) => ({
  kind: req.ref.kind,
  ...(req.ref.namespace ? { namespace: req.ref.namespace } : {}),
  name: req.ref.name,
  uid: req.uid,
});

/**
 * The tunnel this object made, as the worker recorded it: the annotation's ID, when the worker's
 * status agrees with it or the worker's proof for this object holds. Never the annotation alone.
 */
function madeTunnelId(cf: Cloudflare, req: TunnelRequest, obj: TunnelObject): string | undefined {
  const claimed = claimedTunnelId(obj);
  if (!claimed) return undefined;
  if (obj.status?.tunnelId === claimed) return claimed;
  const proof = obj.metadata?.annotations?.[CLOUDFLARE_ID_PROOF_ANNOTATION];
  return tunnelProofHolds(proof, proofKey(cf), req.accountId, claimed, ownerOf(req)) ? claimed : undefined;
}

/** The Tunnel's deletion policy says Orphan: its tunnel stays in Cloudflare as it is. */
const orphaned = (obj: TunnelObject) =>
  obj.metadata?.annotations?.[CLOUDFLARE_DELETION_POLICY_ANNOTATION]?.toLowerCase() === 'orphan';

export function createTunnelActivities(
  kube: KubeClient,
  config: Pick<CloudflareConfig, 'baseURL'>,
  budget?: CallBudget,
) {
  const pacing = budget ? { budget, priority: 'change' as const } : undefined;
  function objectRef(ref: SourceRef) {
    const def = ref.kind === 'ClusterTunnel' ? ClusterTunnelKind : TunnelKind;
    return { apiVersion: def.apiVersion, kind: def.kind, plural: def.plural, namespace: ref.namespace, name: ref.name };
  }

  async function patchStatus(ref: SourceRef, uid: string, status: Partial<TunnelStatus>): Promise<void> {
    try {
      await kube.patchCustomStatus(objectRef(ref), status, uid);
    } catch (err) {
      throw kubeFailure(err, `status of ${ref.kind} ${ref.name}`);
    }
  }

  /** Records the tunnel's ID and the proof this object made it on the Tunnel itself, where a lost status does not take them. */
  async function claimTunnel(cf: Cloudflare, req: TunnelRequest, tunnelId: string): Promise<void> {
    const proof = tunnelProof(proofKey(cf), req.accountId, tunnelId, ownerOf(req));
    try {
      await kube.mergePatch(
        objectRef(req.ref),
        {
          metadata: { annotations: { [CLOUDFLARE_ID_ANNOTATION]: tunnelId, [CLOUDFLARE_ID_PROOF_ANNOTATION]: proof } },
        },
        {
          uid: req.uid,
        },
      );
    } catch (err) {
      throw kubeFailure(err, `annotate ${req.ref.kind} ${req.ref.name}`);
    }
  }

  async function findByName(cf: Cloudflare, accountId: string, name: string): Promise<CfTunnel | undefined> {
    for await (const t of cf.zeroTrust.tunnels.cloudflared.list({ account_id: accountId, name, is_deleted: false }))
      if ((t as CfTunnel).name === name && !(t as CfTunnel).deleted_at) return t as CfTunnel;
    return undefined;
  }

  /**
   * Refused when a Tunnel or ClusterTunnel of another namespace manages the tunnel (its
   * configuration's SyncState lists it as a source).
   */
  async function inUseElsewhere(
    req: TunnelRequest,
    tunnelId: string,
    field: string,
  ): Promise<{ reason: string; message: string } | undefined> {
    const state = await getObject<CloudflareSyncState>(kube, {
      apiVersion: CloudflareSyncStateKind.apiVersion,
      kind: CloudflareSyncStateKind.kind,
      name: syncStateName({ resourceType: 'TunnelConfiguration', accountId: req.accountId, tunnelId }),
    });
    const other = otherNamespaceManager(state?.spec.sources ?? [], req.ref);
    return other ? tunnelInUse(tunnelId, field) : undefined;
  }

  async function getLive(cf: Cloudflare, accountId: string, id: string): Promise<CfTunnel | undefined> {
    const t = (await unlessNotFound(cf.zeroTrust.tunnels.cloudflared.get(id, { account_id: accountId }))) as
      CfTunnel | undefined;
    return t?.deleted_at ? undefined : t;
  }

  /** The tunnel this Tunnel runs: found, or created with the intent recorded first. */
  async function tunnelOf(
    cf: Cloudflare,
    req: TunnelRequest,
    obj: TunnelObject,
  ): Promise<Outcome<CfTunnel, { reason: string; message: string }>> {
    const { spec, status } = obj;
    const existing = spec.existingTunnel;
    if (existing) {
      const byId = existing.id ? await getLive(cf, req.accountId, existing.id) : undefined;
      const found = byId ?? (existing.name ? await findByName(cf, req.accountId, existing.name) : undefined);
      if (found) {
        const refused = await inUseElsewhere(req, found.id, 'spec.existingTunnel');
        return refused ? failedWith(refused) : ok(found);
      }
      return failedWith({
        reason: 'TunnelNotFound',
        message: `spec.existingTunnel: no live tunnel ${existing.id ? `with id ${existing.id}` : ''}${existing.id && existing.name ? ' or ' : ''}${existing.name ? `named ${JSON.stringify(existing.name)}` : ''} in account ${req.accountId}`,
      });
    }
    const name = spec.newTunnel!.name;
    // The one it made, as the worker recorded it (a status lost is made good by the proof).
    const made = madeTunnelId(cf, req, obj);
    if (made) {
      const mine = await getLive(cf, req.accountId, made);
      if (mine) return ok(mine);
      // Deleted outside the operator: made again below, under the same name.
    }
    const sameName = await findByName(cf, req.accountId, name);
    if (sameName) {
      // Another namespace's, whatever the name or an annotation says.
      const refused = await inUseElsewhere(req, sameName.id, 'spec.newTunnel.name');
      if (refused) return failedWith(refused);
      if (status?.state === 'creating' && status.tunnelName === name) return ok(sameName); // our crashed create
      return failedWith({
        reason: 'TunnelNameTaken',
        message: `a tunnel named ${JSON.stringify(name)} already exists in account ${req.accountId} and was not created by this ${req.ref.kind}; to use it, set spec.existingTunnel.name instead of spec.newTunnel`,
      });
    }
    await patchStatus(req.ref, req.uid, { state: 'creating', tunnelName: name, accountId: req.accountId });
    let created: CfTunnel;
    try {
      created = (await cf.zeroTrust.tunnels.cloudflared.create({
        account_id: req.accountId,
        name,
        config_src: 'cloudflare',
      })) as CfTunnel;
    } catch (err) {
      if (!isCloudflareNameTaken(err)) throw err;
      // Made by someone else since the lookup above: not ours, and the intent must not make a
      // later attempt take it for our crashed create.
      await patchStatus(req.ref, req.uid, { state: 'error' });
      return failedWith({
        reason: 'TunnelNameTaken',
        message: `a tunnel named ${JSON.stringify(name)} was created in account ${req.accountId} by someone else while this ${req.ref.kind} created its own (Cloudflare answered 409); to use it, set spec.existingTunnel.name instead of spec.newTunnel`,
      });
    }
    faultPoint('cloudflare-created');
    // The ID before anything else can fail (the credentials Secret): a later attempt finds its
    // tunnel by it, and a deletion deletes it — never a leak, never a TunnelNameTaken of our own.
    await claimTunnel(cf, req, created.id);
    await patchStatus(req.ref, req.uid, { tunnelId: created.id, tunnelName: name, accountId: req.accountId });
    return ok(created);
  }

  /** The credentials Secret: created, or updated when it is ours and its content changed. */
  async function writeCredentials(cf: Cloudflare, req: TunnelRequest, obj: TunnelObject, tunnel: CfTunnel) {
    // The token runs the tunnel: Cloudflare answers it only to a token with Tunnel Edit, a read-only
    // token gets 403 here — the status names the permission.
    const token = (await cf.zeroTrust.tunnels.cloudflared.token
      .get(tunnel.id, { account_id: req.accountId })
      .catch((err: unknown) => {
        throw cloudflareFailure(
          err,
          `read the run token of tunnel ${tunnel.id}`,
          `${TUNNEL_EDIT} (a tunnel's run token is read with Edit, not Read)`,
        );
      })) as unknown as string;
    const decoded = JSON.parse(Buffer.from(token, 'base64').toString('utf8')) as { a: string; t: string; s: string };
    const credentials = JSON.stringify({ AccountTag: decoded.a, TunnelID: decoded.t, TunnelSecret: decoded.s });
    const namespace = req.ref.namespace ?? DEFAULT_CREDENTIALS_NAMESPACE;
    const name = req.ref.name;
    const data = {
      'credentials.json': Buffer.from(credentials).toString('base64'),
      token: Buffer.from(token).toString('base64'),
    };
    const owner = {
      apiVersion: obj.apiVersion!,
      kind: obj.kind!,
      name: obj.metadata!.name!,
      uid: req.uid,
      controller: true,
      blockOwnerDeletion: false,
    };
    try {
      await kube.core.createNamespacedSecret({
        namespace,
        body: {
          apiVersion: 'v1',
          kind: 'Secret',
          metadata: {
            name,
            namespace,
            labels: { 'app.kubernetes.io/managed-by': 'durable-operators' },
            ownerReferences: [owner],
          },
          type: 'Opaque',
          data,
        },
      });
    } catch (err) {
      if (statusCode(err) !== 409) throw kubeFailure(err, `create Secret ${namespace}/${name}`);
      // It exists: update it only if it is ours. The `test` makes the patch fail unless the
      // Secret's owner is this Tunnel — without the worker ever reading a Secret (no `get`).
      try {
        await kube.core.patchNamespacedSecret(
          {
            namespace,
            name,
            body: [
              { op: 'test', path: '/metadata/ownerReferences/0/uid', value: req.uid },
              { op: 'replace', path: '/data', value: data },
            ],
          },
          setHeaderOptions('Content-Type', PatchStrategy.JsonPatch),
        );
      } catch (patchErr) {
        const code = statusCode(patchErr);
        if (code === 422 || code === 409 || code === 404)
          throw ApplicationFailure.nonRetryable(
            `Secret ${namespace}/${name} exists and is not owned by this ${req.ref.kind}: it is never overwritten (delete or rename it)`,
            'SecretConflict',
          );
        throw kubeFailure(patchErr, `update Secret ${namespace}/${name}`);
      }
      // Ours, made by the original operator: its finalizer (named after the tunnel) goes, or the
      // Secret's deletion would hang. A strategic merge patch removes that one entry unread.
      try {
        await kube.core.patchNamespacedSecret(
          {
            namespace,
            name,
            body: {
              metadata: { '$deleteFromPrimitiveList/finalizers': [`${ORIGINAL_SECRET_FINALIZER_PREFIX}${name}`] },
            },
          },
          setHeaderOptions('Content-Type', PatchStrategy.StrategicMergePatch),
        );
      } catch (err) {
        if (statusCode(err) !== 404)
          throw kubeFailure(err, `release the original's finalizer of Secret ${namespace}/${name}`);
      }
    }
    // The token's digest on the Tunnel: the connector's Pod template carries it, so a rotation rolls the Pods.
    const checksum = tokenChecksum(token);
    if (obj.metadata?.annotations?.[TOKEN_CHECKSUM_ANNOTATION] !== checksum)
      try {
        await kube.mergePatch(
          objectRef(req.ref),
          { metadata: { annotations: { [TOKEN_CHECKSUM_ANNOTATION]: checksum } } },
          { uid: req.uid },
        );
      } catch (err) {
        throw kubeFailure(err, `annotate ${req.ref.kind} ${req.ref.name}`);
      }
    return `${namespace}/${name}`;
  }

  async function ensureTunnel(
    req: TunnelRequest,
  ): Promise<Outcome<EnsuredTunnel, { reason: string; message: string }>> {
    const obj = await getObject<TunnelObject>(kube, objectRef(req.ref));
    if (!obj || obj.metadata?.uid !== req.uid)
      return failedWith({ reason: 'Gone', message: `${req.ref.kind} ${req.ref.name} no longer exists` });
    if (obj.metadata.deletionTimestamp) {
      // Being deleted: only say which tunnel it has, never make one.
      const id = obj.status?.tunnelId;
      if (!id) return failedWith({ reason: 'Deleting', message: 'being deleted before it had a tunnel' });
      return ok({ tunnelId: id, tunnelName: obj.status?.tunnelName ?? '', secret: '' });
    }
    try {
      const cf = await clientFor(kube, req.credentials, config.baseURL, pacing);
      const found = await tunnelOf(cf, req, obj);
      if (found.status === 'failed') return found;
      const tunnel = found;
      heartbeat();
      // Found after a crash before its record, or recorded under other credentials: recorded now.
      if (
        obj.spec.newTunnel &&
        (claimedTunnelId(obj) !== tunnel.id ||
          obj.metadata.annotations?.[CLOUDFLARE_ID_PROOF_ANNOTATION] !==
            tunnelProof(proofKey(cf), req.accountId, tunnel.id, ownerOf(req)))
      )
        await claimTunnel(cf, req, tunnel.id);
      const secret = await writeCredentials(cf, req, obj, tunnel);
      if (obj.status?.tunnelId !== tunnel.id || obj.status?.state !== 'active' || obj.status.tunnelName !== tunnel.name)
        await patchStatus(req.ref, req.uid, {
          tunnelId: tunnel.id,
          tunnelName: tunnel.name,
          accountId: req.accountId,
          state: 'active',
        });
      return ok({ tunnelId: tunnel.id, tunnelName: tunnel.name, secret });
    } catch (err) {
      const failure =
        err instanceof ApplicationFailure ? err : cloudflareFailure(err, `tunnel of ${req.ref.name}`, TUNNEL_EDIT);
      if (!failure.nonRetryable) throw failure;
      return failedWith({ reason: failure.type ?? 'CloudflareInvalid', message: failure.message });
    }
  }

  /** The reason a deletion waits, on the Tunnel's status (Ready False): its workflow waits in the retries. */
  async function reportDeletionBlocked(req: TunnelRequest, obj: TunnelObject, reason: string, message: string) {
    const generation = obj.metadata?.generation ?? 0;
    await patchStatus(req.ref, req.uid, {
      state: 'deleting',
      message,
      observedGeneration: generation,
      conditions: [
        {
          type: 'Ready',
          status: 'False',
          reason,
          message,
          observedGeneration: generation,
          lastTransitionTime: new Date().toISOString(),
        },
      ],
    } as Partial<TunnelStatus>).catch(() => undefined); // the message is a courtesy; the retry is what matters
  }

  /**
   * On removal: a tunnel this object made (the worker's record says so) is deleted, its routes and
   * connections first, as the original does and Cloudflare requires; an adopted one, one only an
   * annotation names, and one another namespace manages are left. With the Orphan deletion policy
   * nothing is deleted. A refusal Cloudflare may lift (connections still open, a revoked token) is
   * retried, its reason on the Tunnel's status.
   */
  async function removeTunnel(req: TunnelRequest): Promise<void> {
    const obj = await getObject<TunnelObject>(kube, objectRef(req.ref));
    if (!obj || obj.metadata?.uid !== req.uid) return;
    if (!obj.spec.newTunnel || orphaned(obj)) return;
    let tunnelId: string | undefined;
    try {
      const cf = await clientFor(kube, req.credentials, config.baseURL, pacing);
      tunnelId = madeTunnelId(cf, req, obj);
      if (!tunnelId || (await inUseElsewhere(req, tunnelId, 'metadata.annotations'))) return;
      // Its private network routes first (they only point at this tunnel), as the original does.
      const routes: string[] = [];
      for await (const r of cf.zeroTrust.networks.routes.list({ account_id: req.accountId, tunnel_id: tunnelId }))
        if (r.id && !r.deleted_at) routes.push(r.id);
      for (const id of routes)
        await unlessNotFound(cf.zeroTrust.networks.routes.delete(id, { account_id: req.accountId }));
      // A tunnel already gone answers 404 to both: nothing left to delete.
      await unlessNotFound(
        cf.zeroTrust.tunnels.cloudflared.connections.delete(tunnelId, { account_id: req.accountId }),
      );
      await unlessNotFound(cf.zeroTrust.tunnels.cloudflared.delete(tunnelId, { account_id: req.accountId }));
    } catch (err) {
      if (isCloudflareTunnelBusy(err)) {
        // A connector still runs it (one not ours, or Pods not yet stopped): Cloudflare takes the
        // delete once its connections are gone.
        const message = `deleting tunnel ${tunnelId}: Cloudflare refuses while connectors are connected to it (1022); retrying until they stop (stop every cloudflared running it, or set the annotation ${CLOUDFLARE_DELETION_POLICY_ANNOTATION}: Orphan to leave it)`;
        await reportDeletionBlocked(req, obj, 'TunnelHasConnections', message);
        throw ApplicationFailure.retryable(message, 'TunnelHasConnections');
      }
      const failure = err instanceof ApplicationFailure ? err : cloudflareFailure(err, `delete tunnel ${tunnelId}`);
      if (!failure.nonRetryable) throw failure;
      // Refused for good as things stand (a revoked token, a permission taken away): said on the
      // status and retried — fixing the credentials or choosing Orphan ends it, a failed workflow would not.
      const message = `${failure.message}; retrying — fix the credentials, or set the annotation ${CLOUDFLARE_DELETION_POLICY_ANNOTATION}: Orphan to release this ${req.ref.kind} and leave the tunnel in Cloudflare`;
      await reportDeletionBlocked(req, obj, failure.type ?? 'CloudflareInvalid', message);
      throw ApplicationFailure.retryable(message, failure.type ?? 'CloudflareInvalid');
    }
  }

  return { ensureTunnel, removeTunnel };
}

export type TunnelActivities = ReturnType<typeof createTunnelActivities>;
