/**
 * The garbage collector's ownership rules, checked before we emit an ownerReference. A
 * cluster-scoped object can only be owned by a cluster-scoped one (an ownerReference to a
 * namespaced kind is unresolvable: the GC never collects it, event OwnerRefInvalidNamespace); a
 * namespaced object may be owned by a cluster-scoped object or one in its own namespace (a
 * reference across namespaces resolves as "absent" and the dependent is deleted — silent data
 * loss). This is why a request's artifacts hang off a cluster-scoped ObjectKeeper, never off the
 * namespaced request.
 */
export type Scope = 'Cluster' | 'Namespaced';

export interface ScopedObject {
  kind: string;
  scope: Scope;
  /** Namespace of a namespaced object. */
  namespace?: string;
}

/** Why `owner` may not own `dependent`, or undefined when the reference is legal. */
export function ownerReferenceProblem(owner: ScopedObject, dependent: ScopedObject): string | undefined {
  if (owner.scope === 'Cluster') return undefined;
  if (dependent.scope === 'Cluster') {
    return `cluster-scoped ${dependent.kind} cannot be owned by namespaced ${owner.kind}`;
  }
  if (owner.namespace !== dependent.namespace) {
    return `${dependent.kind} in ${dependent.namespace ?? '?'} cannot be owned by ${owner.kind} in ${owner.namespace ?? '?'}`;
  }
  return undefined;
}

export interface OwnerIdentity {
  apiVersion: string;
  kind: string;
  name: string;
  /** From the apiserver (create response or fresh GET): the UID barrier. */
  uid: string;
  scope: Scope;
  namespace?: string;
}

/**
 * The controller ownerReference of `dependent` to `owner`; throws on a reference the garbage
 * collector would mishandle, or on a missing UID, instead of emitting it.
 */
export function controllerReference(owner: OwnerIdentity, dependent: ScopedObject) {
  const problem = ownerReferenceProblem(owner, dependent);
  if (problem) throw new Error(`illegal ownerReference: ${problem}`);
  if (!owner.uid) throw new Error(`ownerReference to ${owner.kind} ${owner.name} without a UID`);
  return { apiVersion: owner.apiVersion, kind: owner.kind, name: owner.name, uid: owner.uid, controller: true };
}
