/**
 * A Kubernetes kind defined once: group/version/names/scope, the TypeBox spec and status
 * schemas, printer columns. `crdOf(kind)` renders the CustomResourceDefinition.
 */
import type { TSchema } from '@sinclair/typebox';

export interface PrinterColumn {
  name: string;
  type: 'string' | 'integer' | 'number' | 'boolean' | 'date';
  jsonPath: string;
  description?: string;
  priority?: number;
}

export interface KindDefinition<Spec extends TSchema = TSchema, Status extends TSchema = TSchema> {
  group: string;
  version: string;
  kind: string;
  plural: string;
  singular: string;
  shortNames?: string[];
  categories?: string[];
  scope: 'Namespaced' | 'Cluster';
  description: string;
  spec: Spec;
  status: Status;
  printerColumns: PrinterColumn[];
  /** CEL rules on the whole object (e.g. spec immutability once status says terminal). */
  rootValidations?: { rule: string; message: string }[];
  /**
   * Fields at the top level of the object next to spec and status, for kinds whose original keeps
   * them there (TunnelBinding: `subjects`, `tunnelRef`).
   */
  rootProperties?: Record<string, TSchema>;
  /** The required top-level fields; `['spec']` unless given. */
  rootRequired?: string[];
  /** Marks the version deprecated: the apiserver returns this warning with every request for it. */
  deprecationWarning?: string;
  /**
   * Older versions still served with the same schema (no conversion: the apiserver only rewrites
   * `apiVersion`), for manifests written against them; each deprecated with its warning.
   */
  olderVersions?: { name: string; deprecationWarning: string }[];
}

export function defineKind<Spec extends TSchema, Status extends TSchema>(
  def: KindDefinition<Spec, Status>,
): KindDefinition<Spec, Status> & { apiVersion: string } {
  return { ...def, apiVersion: `${def.group}/${def.version}` };
}

/** Strips TypeBox's symbol keys and returns a plain JSON schema. */
function plain(schema: unknown): Record<string, unknown> {
  return JSON.parse(JSON.stringify(schema)) as Record<string, unknown>;
}

export function crdOf(def: KindDefinition): Record<string, unknown> {
  const openAPIV3Schema: Record<string, unknown> = {
    type: 'object',
    description: def.description,
    required: def.rootRequired ?? ['spec'],
    properties: {
      apiVersion: { type: 'string' },
      kind: { type: 'string' },
      metadata: { type: 'object' },
      ...Object.fromEntries(Object.entries(def.rootProperties ?? {}).map(([name, schema]) => [name, plain(schema)])),
      spec: plain(def.spec),
      status: plain(def.status),
    },
  };
  if (def.rootValidations?.length) openAPIV3Schema['x-kubernetes-validations'] = def.rootValidations;
  return {
    apiVersion: 'apiextensions.k8s.io/v1',
    kind: 'CustomResourceDefinition',
    metadata: { name: `${def.plural}.${def.group}` },
    spec: {
      group: def.group,
      scope: def.scope,
      names: {
        kind: def.kind,
        listKind: `${def.kind}List`,
        plural: def.plural,
        singular: def.singular,
        ...(def.shortNames ? { shortNames: def.shortNames } : {}),
        ...(def.categories ? { categories: def.categories } : {}),
      },
      versions: [
        ...(def.olderVersions ?? []).map((v) => ({
          name: v.name,
          served: true,
          storage: false,
          deprecated: true,
          deprecationWarning: v.deprecationWarning,
          subresources: { status: {} },
          additionalPrinterColumns: [
            ...def.printerColumns,
            { name: 'Age', type: 'date', jsonPath: '.metadata.creationTimestamp' },
          ],
          schema: { openAPIV3Schema },
        })),
        {
          name: def.version,
          served: true,
          storage: true,
          ...(def.deprecationWarning ? { deprecated: true, deprecationWarning: def.deprecationWarning } : {}),
          subresources: { status: {} },
          additionalPrinterColumns: [
            ...def.printerColumns,
            { name: 'Age', type: 'date', jsonPath: '.metadata.creationTimestamp' },
          ],
          schema: { openAPIV3Schema },
        },
      ],
    },
  };
}
