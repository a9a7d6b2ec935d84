/**
 * ObjectKeeper routing. Keeper events start (or, on a deletion the workflow did not make, signal)
 * one workflow per keeper.
 * For follow modes the route also watches the followed kind, and turns "followed object deleted
 * or replaced" into a `followedObjectChanged` signal within moments; the workflow verifies with
 * a fresh GET, so a signal is only ever a hint.
 */
import type { KubernetesObject } from '@kubernetes/client-node';
import type { ObjectKeeper } from '../../api/objectkeeper.js';
import { ObjectKeeperKind } from '../../api/objectkeeper.js';
import { followsObject, keeperDeletionIsNews, objectKeeperWorkflowId } from '../../domain/objectkeeper.js';
import { K8sKind, K8sName, K8sUID } from '../../temporal/search-attributes.js';
import {
  followedObjectChangedSignal,
  keeperDeletedSignal,
  objectKeeperWorkflow,
  type ObjectKeeperWorkflowInput,
} from '../../workflows/objectkeeper/contract.js';
import { cacheKeyOf, cacheKeyOfObject, type InformerEvent, type ResourceInformer } from '../informer.js';
import type { Route, WatcherContext } from '../watcher.js';

interface Follower {
  keeperName: string;
  keeperUid: string;
  followedUid: string;
}

/** `<apiVersion>/<kind>` of the followed object → `<ns>/<name>` → keepers following it. */
type FollowIndex = Map<string, Map<string, Map<string, Follower>>>;

export interface ObjectKeeperRouteOptions {
  verifyIntervalMs: number;
}

export class ObjectKeeperRoute implements Route {
  readonly name = 'objectkeeper';
  private readonly index: FollowIndex = new Map();
  private readonly followedInformers = new Map<string, ResourceInformer>();
  /** Keepers being deleted whose workflow was told (a foreground deletion updates a keeper more than once). */
  private readonly toldDeleted = new Set<string>();
  private ctx!: WatcherContext;

  constructor(private readonly opts: ObjectKeeperRouteOptions) {}

  register(ctx: WatcherContext): void {
    this.ctx = ctx;
    ctx.watch<ObjectKeeper>(ObjectKeeperKind.apiVersion, ObjectKeeperKind.kind, (ev) => this.onKeeper(ev));
  }

  private onKeeper(ev: InformerEvent<ObjectKeeper>): void {
    const keeper = ev.object;
    const name = keeper.metadata!.name!;
    const uid = keeper.metadata!.uid!;
    const workflowId = objectKeeperWorkflowId(name, uid);
    const { dispatcher } = this.ctx;

    if (ev.type === 'DELETED' || keeper.metadata?.deletionTimestamp) {
      // Told once, and only when the workflow did not delete the keeper itself: that hint would
      // only race the run's last task.
      const news = !this.toldDeleted.has(workflowId) && this.deletionIsNews(keeper);
      this.unindex(keeper);
      if (ev.type === 'DELETED') this.toldDeleted.delete(workflowId);
      else if (news) this.toldDeleted.add(workflowId);
      this.ctx.enqueue(workflowId, async () => {
        if (news) await dispatcher.signal(workflowId, keeperDeletedSignal);
        if (ev.type === 'DELETED') dispatcher.forget(workflowId);
      });
      return;
    }

    const ref = keeper.spec.followObjectRef;

    const input: ObjectKeeperWorkflowInput = {
      name,
      uid,
      spec: keeper.spec,
      creationTimestamp: new Date(keeper.metadata!.creationTimestamp!).toISOString(),
      verifyIntervalMs: this.opts.verifyIntervalMs,
    };
    const target = ref ? ` ${ref.kind} ${ref.namespace ? `${ref.namespace}/` : ''}${ref.name}` : '';
    this.ctx.enqueue(workflowId, async () => {
      await dispatcher.start({
        workflow: objectKeeperWorkflow,
        workflowId,
        args: [input],
        kind: ObjectKeeperKind.kind,
        receivedAt: ev.receivedAt,
        searchAttributes: [
          { key: K8sKind, value: ObjectKeeperKind.kind },
          { key: K8sName, value: name },
          { key: K8sUID, value: uid },
        ],
        summary: `ObjectKeeper ${name}: ${keeper.spec.mode}${target}${keeper.spec.ttl ? ` ttl ${keeper.spec.ttl}` : ''}`,
        details: `Keeps objects owned by ObjectKeeper \`${name}\` alive.\n\n\`\`\`json\n${JSON.stringify(keeper.spec, null, 2)}\n\`\`\``,
      });
    });
    // After the start is queued, so any hint this produces reaches a started workflow.
    if (followsObject(keeper.spec.mode) && ref) this.indexFollower(keeper);
  }

  private indexFollower(keeper: ObjectKeeper): void {
    const ref = keeper.spec.followObjectRef!;
    const kindKey = `${ref.apiVersion}/${ref.kind}`;
    const objKey = cacheKeyOf(ref.namespace, ref.name);
    let byObject = this.index.get(kindKey);
    if (!byObject) this.index.set(kindKey, (byObject = new Map()));
    let followers = byObject.get(objKey);
    if (!followers) byObject.set(objKey, (followers = new Map()));
    const isNew = !followers.has(keeper.metadata!.name!);
    followers.set(keeper.metadata!.name!, {
      keeperName: keeper.metadata!.name!,
      keeperUid: keeper.metadata!.uid!,
      followedUid: ref.uid,
    });

    let informer = this.followedInformers.get(kindKey);
    if (!informer) {
      informer = this.ctx.watch(ref.apiVersion, ref.kind, (ev) => this.onFollowed(kindKey, ev));
      this.followedInformers.set(kindKey, informer);
      // After every (re)list, anything indexed but not listed was deleted while we were not looking.
      informer.onSync(() => this.checkAbsent(kindKey));
    }
    // The informer may already be synced: shared with another route (requests), or long running.
    if (isNew && informer.synced) {
      // A keeper created after its object was already gone (or replaced): tell it now.
      const live = informer.get(objKey);
      if (!live || live.metadata?.uid !== ref.uid)
        this.hint(keeper.metadata!.name!, keeper.metadata!.uid!, 'absent-at-index');
    }
  }

  /** src/domain/objectkeeper.ts's rule, with what this route's informers know of the followed object. */
  private deletionIsNews(keeper: ObjectKeeper): boolean {
    const ref = keeper.spec.followObjectRef;
    const informer = ref && this.followedInformers.get(`${ref.apiVersion}/${ref.kind}`);
    const live = informer?.synced ? informer.get(cacheKeyOf(ref!.namespace, ref!.name)) : undefined;
    const followedLost = !!informer?.synced && live?.metadata?.uid !== ref!.uid;
    return keeperDeletionIsNews(
      { mode: keeper.spec.mode, expiresAt: keeper.status?.expiresAt, followedLost },
      Date.now(),
    );
  }

  private unindex(keeper: ObjectKeeper): void {
    const ref = keeper.spec.followObjectRef;
    if (!ref) return;
    const byObject = this.index.get(`${ref.apiVersion}/${ref.kind}`);
    const objKey = cacheKeyOf(ref.namespace, ref.name);
    const followers = byObject?.get(objKey);
    followers?.delete(keeper.metadata!.name!);
    if (followers?.size === 0) byObject!.delete(objKey);
  }

  private onFollowed(kindKey: string, ev: InformerEvent<KubernetesObject>): void {
    const obj = ev.object;
    const objKey = cacheKeyOfObject(obj);
    const followers = this.index.get(kindKey)?.get(objKey);
    if (!followers) return;
    for (const f of followers.values()) {
      const gone = ev.type === 'DELETED' && obj.metadata?.uid === f.followedUid;
      const replaced = obj.metadata?.uid !== f.followedUid && ev.type !== 'DELETED';
      if (gone || replaced) this.hint(f.keeperName, f.keeperUid, gone ? 'deleted' : 'replaced', obj.metadata?.uid);
    }
  }

  private checkAbsent(kindKey: string): void {
    const informer = this.followedInformers.get(kindKey);
    const byObject = this.index.get(kindKey);
    if (!informer || !byObject) return;
    for (const [objKey, followers] of byObject) {
      const live = informer.get(objKey);
      for (const f of followers.values()) {
        if (!live || live.metadata?.uid !== f.followedUid) this.hint(f.keeperName, f.keeperUid, 'absent-after-list');
      }
    }
  }

  private hint(keeperName: string, keeperUid: string, event: string, uid?: string): void {
    const workflowId = objectKeeperWorkflowId(keeperName, keeperUid);
    this.ctx.enqueue(workflowId, async () => {
      await this.ctx.dispatcher.signal(workflowId, followedObjectChangedSignal, { event, uid });
    });
  }
}
