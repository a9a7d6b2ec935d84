/**
 * Typed search attributes shared by clients (watcher, CLI) and workflows. Workflow-safe: imports
 * only @temporalio/common. The dev server registers them from SEARCH_ATTRIBUTE_DEFINITIONS; any
 * other namespace needs each registered once (docs/operations.md, "Search attributes").
 */
import { defineSearchAttributeKey, SearchAttributeType } from '@temporalio/common';

/** Kubernetes kind of the object the workflow operates on, e.g. `ObjectKeeper`. */
export const K8sKind = defineSearchAttributeKey('K8sKind', SearchAttributeType.KEYWORD);
/** Namespace of that object; empty for cluster-scoped objects. */
export const K8sNamespace = defineSearchAttributeKey('K8sNamespace', SearchAttributeType.KEYWORD);
/** Name of that object. */
export const K8sName = defineSearchAttributeKey('K8sName', SearchAttributeType.KEYWORD);
/** UID of that object, so a recreated object is told apart from its predecessor. */
export const K8sUID = defineSearchAttributeKey('K8sUID', SearchAttributeType.KEYWORD);
/** What the workflow is doing now, e.g. `Tracking`, `WaitingTTL`, `Deleting` (kept current). */
export const OperationPhase = defineSearchAttributeKey('OperationPhase', SearchAttributeType.KEYWORD);
/** Tenant the operation belongs to, where one applies. */
export const Tenant = defineSearchAttributeKey('Tenant', SearchAttributeType.KEYWORD);

/** Cloudflare targets (`ZoneRuleset/<zone>/<phase>`, `DeviceSettingsPolicy/<account>/<list>`) a workflow writes or feeds. */
export const CloudflareTarget = defineSearchAttributeKey('CloudflareTarget', SearchAttributeType.KEYWORD_LIST);
/** Sources (`Kind/Namespace/Name`) a Cloudflare sync workflow aggregates. */
export const CloudflareSources = defineSearchAttributeKey('CloudflareSources', SearchAttributeType.KEYWORD_LIST);
/** Cloudflare account a workflow writes to. */
export const CloudflareAccount = defineSearchAttributeKey('CloudflareAccount', SearchAttributeType.KEYWORD);

export const SEARCH_ATTRIBUTE_DEFINITIONS = [
  { name: K8sKind.name, cliType: 'Keyword' },
  { name: K8sNamespace.name, cliType: 'Keyword' },
  { name: K8sName.name, cliType: 'Keyword' },
  { name: K8sUID.name, cliType: 'Keyword' },
  { name: OperationPhase.name, cliType: 'Keyword' },
  { name: Tenant.name, cliType: 'Keyword' },
  { name: CloudflareTarget.name, cliType: 'KeywordList' },
  { name: CloudflareSources.name, cliType: 'KeywordList' },
  { name: CloudflareAccount.name, cliType: 'Keyword' },
] as const;
