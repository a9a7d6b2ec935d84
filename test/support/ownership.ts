/**
 * Checks the ownerReferences the code actually emitted, on objects the end-to-end tests read
 * back from the apiserver: each names an owner that exists with that UID, and each is one the
 * garbage collector handles (scopes from discovery, rule from src/domain/ownership.ts) — so no
 * hand-kept list of "edges the code emits" can drift from the code.
 */
import type { KubernetesObject } from '@kubernetes/client-node';
import { expect } from 'vitest';
import { ownerReferenceProblem, type Scope } from '../../src/domain/ownership.js';
import type { KubeClient } from '../../src/kube/client.js';

async function scopeOf(k: KubeClient, apiVersion: string, kind: string): Promise<Scope> {
  const served = await k.objects.servedResource(apiVersion, kind);
  if (!served) throw new Error(`the apiserver does not serve ${apiVersion} ${kind}`);
  return served.namespaced ? 'Namespaced' : 'Cluster';
}

/** Asserts that every ownerReference of each object resolves and is legal for the garbage collector. */
export async function expectGcValidOwners(k: KubeClient, ...objects: KubernetesObject[]): Promise<void> {
  for (const obj of objects) {
    const label = `${obj.kind} ${obj.metadata?.namespace ? `${obj.metadata.namespace}/` : ''}${obj.metadata?.name}`;
    const refs = obj.metadata?.ownerReferences ?? [];
    expect(refs.length, `${label} has an owner`).toBeGreaterThan(0);
    const dependent = {
      kind: obj.kind!,
      scope: await scopeOf(k, obj.apiVersion!, obj.kind!),
      namespace: obj.metadata?.namespace,
    };
    for (const ref of refs) {
      const scope = await scopeOf(k, ref.apiVersion, ref.kind);
      // The GC resolves a namespaced owner in the dependent's namespace.
      const namespace = scope === 'Namespaced' ? obj.metadata?.namespace : undefined;
      const owner = { kind: ref.kind, scope, namespace };
      expect(ownerReferenceProblem(owner, dependent), `${label} → ${ref.kind} ${ref.name}`).toBeUndefined();
      const live = await k.get({ apiVersion: ref.apiVersion, kind: ref.kind, name: ref.name, namespace });
      expect(live?.metadata?.uid, `${label}: owner ${ref.kind} ${ref.name} exists with the referenced UID`).toBe(
        ref.uid,
      );
    }
  }
}
