/**
 * Tenant configuration on etcd, and which tenant a request belongs to.
 *
 * ```ts
 * const tenants = await TenantProvider.start({ endpoints: 'http://127.0.0.1:22379', cacheFile: '/var/cache/do/tenants.json' });
 * server.on('request', (req, res) => tenantMiddleware(tenants)(req, res, () => handle(req as TenantRequest, res)));
 * tenants.getDatabaseConfig(7, 'evidence-command');
 * ```
 *
 * @module
 */
export * from './model.js';
export { validateResolverConfig, type SkippedItem } from './parse.js';
export {
  TenantSnapshot,
  EMPTY_SNAPSHOT,
  applyChanges,
  buildSnapshot,
  snapshotEntries,
  type KeyChange,
  type IndexConflict,
  type RejectedValue,
  type TenantEntry,
} from './snapshot.js';
export * from './resolve.js';
export * from './middleware.js';
export {
  TenantProvider,
  WATCH_STATES,
  RELOAD_REASONS,
  type TenantProviderOptions,
  type WatchState,
  type ReloadReason,
} from './provider.js';
export { registerTenancyMetrics, type TenancyMetrics } from './metrics.js';
export { TenantPublisher, TenantValidationError, type PublishResult, type ResolverReading } from './publisher.js';
export { validateTenantDocument, documentEntries, type TenantDocument, type TenantView } from './document.js';
export { createEtcdClient } from './etcd.js';
