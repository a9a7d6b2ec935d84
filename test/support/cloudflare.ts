/**
 * The Cloudflare side of the aggregation tests: the emulator (in the test process), an SDK
 * client on it, and the Kubernetes objects the operator reads credentials from. Tests read and
 * seed Cloudflare only through the real `cloudflare` SDK; the emulator hooks only reset, count
 * requests and inject faults.
 */
import { randomBytes } from 'node:crypto';
import Cloudflare from 'cloudflare';
import { CLOUDFLARE_API_VERSION } from '../../src/api/cloudflare.js';
import { EmulatorAdmin, startCloudflareEmulator, type RunningEmulator } from '../../src/cloudflare/emulator/index.js';
import type { KubeClient } from '../../src/kube/client.js';

export const CF_TOKEN = `cf-test-${randomBytes(6).toString('hex')}`;

export interface CloudflareFixture {
  emulator: RunningEmulator;
  admin: EmulatorAdmin;
  cf: Cloudflare;
  close(): Promise<void>;
}

export async function startCloudflare(): Promise<CloudflareFixture> {
  const emulator = await startCloudflareEmulator({ tokens: [{ token: CF_TOKEN }] });
  const admin = new EmulatorAdmin(emulator.url, emulator.adminToken);
  const cf = new Cloudflare({ apiToken: CF_TOKEN, baseURL: emulator.baseURL, maxRetries: 4 });
  return { emulator, admin, cf, close: () => emulator.close() };
}

export function hexId(): string {
  return randomBytes(16).toString('hex');
}

/** CloudflareCredentials this test file created (cluster-scoped: they outlive the file unless deleted). */
const createdCredentials = new Set<string>();

/**
 * Deletes every CloudflareCredentials this file created. Call it in `afterAll`: a default one left
 * behind would make the next file's default ambiguous.
 */
export async function deleteCreatedCredentials(kube: KubeClient): Promise<void> {
  for (const name of createdCredentials)
    await kube
      .delete({ apiVersion: CLOUDFLARE_API_VERSION, kind: 'CloudflareCredentials', name })
      .catch(() => undefined);
  createdCredentials.clear();
}

/**
 * A Secret with the token and a CloudflareCredentials for `accountId` naming it, as a user would
 * create them.
 */
export async function createCredentials(
  kube: KubeClient,
  opts: { name: string; namespace: string; accountId: string; token?: string; isDefault?: boolean },
): Promise<void> {
  await kube.apply({
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: { name: `${opts.name}-token`, namespace: opts.namespace },
    stringData: { CLOUDFLARE_API_TOKEN: opts.token ?? CF_TOKEN },
  } as never);
  createdCredentials.add(opts.name);
  await kube.apply({
    apiVersion: CLOUDFLARE_API_VERSION,
    kind: 'CloudflareCredentials',
    metadata: { name: opts.name },
    spec: {
      accountId: opts.accountId,
      authType: 'apiToken',
      secretRef: { name: `${opts.name}-token`, namespace: opts.namespace },
      isDefault: opts.isDefault ?? false,
    },
  });
}

export type Rule = {
  id: string;
  description?: string;
  expression: string;
  action: string;
  version: string;
  [k: string]: unknown;
};

/** The rules of a zone's phase entrypoint ([] before it exists). */
export async function entrypointRules(cf: Cloudflare, zoneId: string, phase: string): Promise<Rule[]> {
  try {
    const rs = (await cf.rulesets.phases.get(phase as never, { zone_id: zoneId })) as unknown as { rules?: Rule[] };
    return rs.rules ?? [];
  } catch (err) {
    if ((err as { status?: number }).status === 404) return [];
    throw err;
  }
}

export async function includeList(
  cf: Cloudflare,
  accountId: string,
): Promise<{ address?: string; host?: string; description?: string }[]> {
  return (await cf.zeroTrust.devices.policies.default.includes.get({ account_id: accountId })).result as never;
}

/** The emulator's last request sequence number: a mark to count requests after (0 when none yet). */
export async function requestMark(admin: EmulatorAdmin): Promise<number> {
  const all = await admin.requests();
  return all.length ? all[all.length - 1]!.seq : 0;
}

/** The requests the emulator answered after `mark` on paths matching `path` (a regular expression). */
export async function requestsSince(
  admin: EmulatorAdmin,
  mark: number,
  filter: { path?: string; method?: string } = {},
): Promise<Awaited<ReturnType<EmulatorAdmin['requests']>>> {
  return (await admin.requests(filter)).filter((r) => r.seq > mark);
}
