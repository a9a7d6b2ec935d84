/**
 * The kubelet stand-in for every SandboxPool of the local stack (`npm run dev`): each pool gets an
 * AgentFleet with no agents of its own whose kubelet half runs the agent Pods the pool's workflow
 * creates, so pool sizing can be tried with any pool, not only the default one. A pool that goes
 * (or is recreated under its name) has its fleet stopped.
 */
import { SandboxPoolKind } from '../api/sandbox.js';
import type { KubeClient } from '../kube/client.js';
import { AgentFleet, type AgentFleetOptions } from './agent-fleet.js';

export class PoolKubelets {
  /** By `namespace/name/uid`: the pool's fleet (started, or starting). */
  private readonly fleets = new Map<string, Promise<AgentFleet | undefined>>();
  private timer?: NodeJS.Timeout;
  private stopped = false;

  constructor(
    private readonly kube: KubeClient,
    private readonly fleet: Omit<AgentFleetOptions, 'kube' | 'namespace' | 'pool' | 'count'>,
    /** Pools served otherwise (dev's default pool has its own fleet). */
    private readonly skip: (namespace: string, pool: string) => boolean = () => false,
  ) {}

  start(intervalMs = 1000): this {
    const loop = () => {
      if (this.stopped) return;
      this.sync()
        .catch(() => undefined)
        .finally(() => {
          if (!this.stopped) this.timer = setTimeout(loop, intervalMs);
        });
    };
    loop();
    return this;
  }

  private async sync(): Promise<void> {
    const present = new Set<string>();
    for await (const p of this.kube.listAll(SandboxPoolKind.apiVersion, SandboxPoolKind.kind, {})) {
      const { namespace, name, uid } = p.metadata as { namespace: string; name: string; uid: string };
      if (this.skip(namespace, name)) continue;
      const key = `${namespace}/${name}/${uid}`;
      present.add(key);
      if (this.fleets.has(key) || this.stopped) continue;
      const started = AgentFleet.start({ ...this.fleet, kube: this.kube, namespace, pool: name, count: 0 }).then(
        (f) => (f.runKubelet(), f),
        () => undefined, // retried at the next pass
      );
      this.fleets.set(key, started);
      void started.then((f) => f ?? this.fleets.delete(key));
    }
    for (const [key, fleet] of this.fleets)
      if (!present.has(key)) {
        this.fleets.delete(key);
        void fleet.then((f) => f?.stop());
      }
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    await Promise.all([...this.fleets.values()].map(async (f) => (await f)?.stop()));
  }
}
