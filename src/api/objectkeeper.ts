/**
 * ObjectKeeper (`deckhouse.io/v1alpha1`, cluster-scoped): the ownership anchor. Artifacts name a
 * keeper as their controller owner; the keeper lives as long as the object it follows (or its
 * TTL), and when it goes, the Kubernetes garbage collector removes the artifacts.
 * Same group, version and fields as Deckhouse's original, so existing manifests apply unchanged.
 */
import { Type, type Static } from '@sinclair/typebox';
import type { KubernetesObject } from '@kubernetes/client-node';
import { Conditions, Duration, ObjectName, NamespaceName, StringEnum, Timestamp, withCel } from './schema.js';
import { defineKind } from './kind.js';

export const OBJECT_KEEPER_MODES = ['FollowObject', 'TTL', 'FollowObjectWithTTL'] as const;
export type ObjectKeeperMode = (typeof OBJECT_KEEPER_MODES)[number];

/** Pending: not yet looked at. Tracking: following a live object. WaitingTTL: counting down to deletion. */
export const OBJECT_KEEPER_PHASES = ['Pending', 'Tracking', 'WaitingTTL'] as const;
export type ObjectKeeperPhase = (typeof OBJECT_KEEPER_PHASES)[number];

export const FollowObjectRef = Type.Object(
  {
    apiVersion: Type.String({ minLength: 1, description: 'API version of the followed object, e.g. v1 or apps/v1.' }),
    kind: Type.String({ minLength: 1, pattern: '^[A-Z][A-Za-z0-9]*$', description: 'Kind of the followed object.' }),
    namespace: Type.Optional(
      NamespaceName({ description: 'Namespace of the followed object; omit for cluster-scoped kinds.' }),
    ),
    name: ObjectName({ description: 'Name of the followed object.' }),
    uid: Type.String({
      minLength: 1,
      description: 'UID of the followed object. A recreated object with the same name but another UID counts as gone.',
    }),
  },
  { description: 'The object this keeper follows.' },
);

export const ObjectKeeperSpec = withCel(
  Type.Object({
    mode: StringEnum(OBJECT_KEEPER_MODES, {
      description:
        'FollowObject: live while the followed object exists. TTL: live for ttl after creation. ' +
        'FollowObjectWithTTL: live while the followed object exists, then for ttl after it is lost.',
    }),
    followObjectRef: Type.Optional(FollowObjectRef),
    ttl: Type.Optional(Duration({ description: 'Go duration, e.g. 30m or 168h.' })),
  }),
  [
    {
      rule: "self.mode == 'TTL' || has(self.followObjectRef)",
      message: 'followObjectRef is required when mode is FollowObject or FollowObjectWithTTL',
      reason: 'FieldValueRequired',
    },
    {
      rule: "self.mode != 'TTL' || !has(self.followObjectRef)",
      message: 'followObjectRef must not be set when mode is TTL',
      reason: 'FieldValueForbidden',
    },
    {
      rule: "self.mode == 'FollowObject' || has(self.ttl)",
      message: 'ttl is required when mode is TTL or FollowObjectWithTTL',
      reason: 'FieldValueRequired',
    },
    {
      rule: "self.mode != 'FollowObject' || !has(self.ttl)",
      message: 'ttl must not be set when mode is FollowObject',
      reason: 'FieldValueForbidden',
    },
    { rule: 'self == oldSelf', message: 'spec is immutable; create a new ObjectKeeper instead' },
  ],
);

export const ObjectKeeperStatus = Type.Object({
  phase: Type.Optional(StringEnum(OBJECT_KEEPER_PHASES)),
  conditions: Type.Optional(Conditions),
  message: Type.Optional(Type.String({ maxLength: 4096 })),
  lostAt: Type.Optional(
    Timestamp({ description: 'When the followed object was first seen gone (FollowObjectWithTTL).' }),
  ),
  expiresAt: Type.Optional(Timestamp({ description: 'When the keeper will delete itself, once that is known.' })),
});

export type ObjectKeeperSpec = Static<typeof ObjectKeeperSpec>;
export type ObjectKeeperStatus = Static<typeof ObjectKeeperStatus>;
export type FollowObjectRef = Static<typeof FollowObjectRef>;

export interface ObjectKeeper extends KubernetesObject {
  apiVersion: 'deckhouse.io/v1alpha1';
  kind: 'ObjectKeeper';
  spec: ObjectKeeperSpec;
  status?: ObjectKeeperStatus;
}

export const ObjectKeeperKind = defineKind({
  group: 'deckhouse.io',
  version: 'v1alpha1',
  kind: 'ObjectKeeper',
  plural: 'objectkeepers',
  singular: 'objectkeeper',
  shortNames: ['okeeper'],
  scope: 'Cluster',
  description:
    'ObjectKeeper anchors ownership: objects that name it as controller owner are garbage-collected when it goes. ' +
    'It deletes itself when the followed object is gone (or recreated with another UID), or when its TTL expires.',
  spec: ObjectKeeperSpec,
  status: ObjectKeeperStatus,
  printerColumns: [
    { name: 'Mode', type: 'string', jsonPath: '.spec.mode' },
    { name: 'Phase', type: 'string', jsonPath: '.status.phase' },
    { name: 'Follows', type: 'string', jsonPath: '.spec.followObjectRef.name' },
    { name: 'Kind', type: 'string', jsonPath: '.spec.followObjectRef.kind', priority: 1 },
    { name: 'TTL', type: 'string', jsonPath: '.spec.ttl' },
    { name: 'Expires', type: 'string', jsonPath: '.status.expiresAt', priority: 1 },
  ],
});

/** The reference the Kubernetes client needs to read, patch or delete a keeper by name. */
export function objectKeeperRef(name: string): { apiVersion: string; kind: string; name: string } {
  return { apiVersion: ObjectKeeperKind.apiVersion, kind: ObjectKeeperKind.kind, name };
}
