/**
 * A CloudflareSyncState's `spec.packedConfigs`: the sources' configurations, keyed by source, as
 * base64 of gzip'd JSON — used once they pass 256 KiB as plain `sources[].config`. Node-only
 * (zlib), hence here and not in src/domain. Configurations of many rules repeat themselves
 * (hostnames, services, origin settings), so gzip keeps them an order of magnitude smaller.
 */
import { Buffer } from 'node:buffer';
import { gunzipSync, gzipSync } from 'node:zlib';

export function packConfigs(configs: Readonly<Record<string, unknown>>): string {
  return gzipSync(JSON.stringify(configs)).toString('base64');
}

/** The configurations packed by `packConfigs`; an unreadable value (edited by hand) gives none. */
export function unpackConfigs(packed: string): Record<string, unknown> {
  try {
    const parsed = JSON.parse(gunzipSync(Buffer.from(packed, 'base64')).toString()) as unknown;
    return parsed && typeof parsed === 'object' && !Array.isArray(parsed) ? (parsed as Record<string, unknown>) : {};
  } catch {
    return {};
  }
}
