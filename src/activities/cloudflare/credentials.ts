/**
 * CloudflareCredentials → an SDK client, at call time. The token is read from its Secret by the
 * activity that needs it, every time: it never enters a workflow input, history, log or status,
 * and a rotated token is used from the next call on. The SDK's own retries are off (Temporal's
 * retry policy owns retries, src/activities/cloudflare/errors.ts classifies).
 */
import { hkdfSync } from 'node:crypto';
import { Context } from '@temporalio/activity';
import { ApplicationFailure } from '@temporalio/common';
import type { V1Secret } from '@kubernetes/client-node';
import Cloudflare from 'cloudflare';
import {
  CloudflareCredentialsKind,
  DEFAULT_CREDENTIALS_NAMESPACE,
  type CloudflareCredentials,
} from '../../api/cloudflare.js';
import type { CredentialsUsePolicy } from '../../domain/cloudflare/credentials-use.js';
import type { KubeClient } from '../../kube/client.js';
import { getObject, listAll } from '../kubernetes/calls.js';
import type { CallBudget, CallPriority } from './call-budget.js';
import { retryAfterMs } from './errors.js';

/** Failure types a source shows as its reason (non-retryable: the user must fix something). */
export const CREDENTIALS_FAILURES = {
  notFound: 'CredentialsNotFound',
  noDefault: 'NoDefaultCredentials',
  ambiguousDefault: 'AmbiguousDefaultCredentials',
  secret: 'CredentialsSecretInvalid',
} as const;

const credentialsRef = (name: string) => ({
  apiVersion: CloudflareCredentialsKind.apiVersion,
  kind: CloudflareCredentialsKind.kind,
  name,
});

/** The named CloudflareCredentials, or the one marked `isDefault` when no name is given. */
export async function findCredentials(kube: KubeClient, name?: string): Promise<CloudflareCredentials> {
  if (name) {
    const creds = await getObject<CloudflareCredentials>(kube, credentialsRef(name));
    if (!creds)
      throw ApplicationFailure.nonRetryable(
        `CloudflareCredentials ${name} does not exist`,
        CREDENTIALS_FAILURES.notFound,
      );
    return creds;
  }
  const all = await listAll<CloudflareCredentials>(
    kube,
    CloudflareCredentialsKind.apiVersion,
    CloudflareCredentialsKind.kind,
  );
  const defaults = all
    .filter((c) => c.spec?.isDefault)
    .sort((a, b) => a.metadata!.name!.localeCompare(b.metadata!.name!));
  if (defaults.length === 0)
    throw ApplicationFailure.nonRetryable(
      'no credentialsRef given and no CloudflareCredentials has isDefault: true',
      CREDENTIALS_FAILURES.noDefault,
    );
  // Two defaults is a misconfiguration: picking one would write with an account the user may not mean.
  if (defaults.length > 1)
    throw ApplicationFailure.nonRetryable(
      `no credentialsRef given and ${defaults.length} CloudflareCredentials have isDefault: true (${defaults
        .map((c) => c.metadata!.name)
        .join(', ')}): name one in credentialsRef, or keep one default`,
      CREDENTIALS_FAILURES.ambiguousDefault,
    );
  return defaults[0]!;
}

/** Who may use the credentials, as src/domain/cloudflare/credentials-use.ts reads it. */
export function credentialsUsePolicy(creds: CloudflareCredentials): CredentialsUsePolicy {
  const { isDefault, allowedNamespaces, allowedZones, priorityNamespaces, adoptNamespaces } = creds.spec;
  return {
    name: creds.metadata!.name!,
    ...(isDefault ? { isDefault } : {}),
    ...(allowedNamespaces ? { allowedNamespaces } : {}),
    ...(allowedZones ? { allowedZones } : {}),
    ...(priorityNamespaces ? { priorityNamespaces } : {}),
    ...(adoptNamespaces ? { adoptNamespaces } : {}),
  };
}

/**
 * A Secret, read now (`namespace` defaults to the original's operator namespace), and a reader of
 * its keys. A missing Secret or key is permanent (`failureType`): the user must fix the reference.
 */
async function secretKeys(
  kube: KubeClient,
  ref: { namespace?: string; name: string },
  failureType: string,
  owner = '',
): Promise<(key: string) => string> {
  const namespace = ref.namespace || DEFAULT_CREDENTIALS_NAMESPACE;
  const secret = await getObject<V1Secret>(kube, { apiVersion: 'v1', kind: 'Secret', namespace, name: ref.name });
  const where = `Secret ${namespace}/${ref.name}${owner}`;
  if (!secret) throw ApplicationFailure.nonRetryable(`${where} does not exist`, failureType);
  return (key) => {
    const raw = secret.data?.[key];
    if (!raw) throw ApplicationFailure.nonRetryable(`${where} has no key ${key}`, failureType);
    return Buffer.from(raw, 'base64').toString('utf8').trim();
  };
}

/** A Secret a source names (not the credentials' one) is missing or lacks the key. */
export const SECRET_INVALID = 'SecretInvalid';

/** One key of a Secret a source names (an identity provider's client secret), read now. */
export async function readSecretKey(
  kube: KubeClient,
  ref: { namespace?: string; name: string; key: string },
): Promise<string> {
  return (await secretKeys(kube, ref, SECRET_INVALID))(ref.key);
}

/**
 * The running activity's cancellation signal (undefined outside an activity). Every call of a
 * client made in an activity stops when the activity is cancelled or times out (issue 23, D8):
 * an attempt Temporal gave up on never keeps writing next to its retry.
 */
export function activitySignal(): AbortSignal | undefined {
  try {
    return Context.current().cancellationSignal;
  } catch {
    return undefined;
  }
}

/** A budget the calls of a client spend (call-budget.ts): whose, and how urgent. */
export interface ClientBudget {
  budget: CallBudget;
  key: string;
  priority: CallPriority;
}

/**
 * An SDK client with the given secret, its calls bound to the activity's cancellation and, when
 * given, paced by the budget of the credentials' owner: every request waits for the budget first
 * (the SDK makes every call through this `fetch`), and a 429 holds the owner's other calls too.
 */
export function cloudflareClient(
  auth: { apiToken: string } | { apiKey: string; apiEmail: string },
  baseURL?: string,
  signal: AbortSignal | undefined = activitySignal(),
  paced?: ClientBudget,
): Cloudflare {
  const send = async (url: string | URL | Request, init?: RequestInit): Promise<Response> => {
    const bound = signal ? withSignal(init, signal) : init;
    if (!paced) return fetch(url, bound);
    await paced.budget.take(paced.key, paced.priority, bound?.signal ?? undefined);
    const response = await fetch(url, bound);
    if (response.status === 429)
      paced.budget.block(paced.key, retryAfterMs(response.headers) ?? RATE_LIMITED_DEFAULT_MS);
    return response;
  };
  return new Cloudflare({
    baseURL: baseURL ?? null,
    maxRetries: 0,
    timeout: 30_000,
    // The SDK fills every scheme left out from CLOUDFLARE_API_TOKEN/_KEY/_EMAIL in the worker's
    // environment and sends them all: the credentials' one scheme only, the others explicitly none.
    apiToken: null,
    apiKey: null,
    apiEmail: null,
    ...auth,
    // The SDK aborts its own signal on its timeout; either one stops the request.
    ...(signal || paced ? { fetch: send } : {}),
  });
}

/** A 429 without Retry-After: Cloudflare blocks a user who broke the limit for 5 minutes. */
const RATE_LIMITED_DEFAULT_MS = 300_000;

function withSignal(init: RequestInit | undefined, signal: AbortSignal): RequestInit {
  return { ...init, signal: init?.signal ? AbortSignal.any([init.signal, signal]) : signal };
}

/**
 * Whose budget credentials spend. Cloudflare's limit is per user, but neither an API token nor
 * `/user/tokens/verify` says which user owns it (the verify answer is the token's id only), so
 * the credentials say it: `spec.user` names the owner (credentials naming the same user share one
 * budget, whatever their accounts); without it, a Global API Key's email is its user; otherwise
 * the account — credentials of one account share a budget (too careful when they are several
 * users' tokens, too generous when one user's tokens reach several accounts: name the user then).
 */
export function budgetKeyOf(creds: CloudflareCredentials, email?: string): string {
  if (creds.spec.user) return `user:${creds.spec.user.toLowerCase()}`;
  if (email) return `user:${email.toLowerCase()}`;
  return `account:${creds.spec.accountId}`;
}

/** The credentials' API token (or Global API Key and its email), read from their Secret now. */
async function credentialsAuth(
  kube: KubeClient,
  credentialsName: string,
): Promise<{ creds: CloudflareCredentials; auth: { apiToken: string } | { apiKey: string; apiEmail: string } }> {
  const creds = await findCredentials(kube, credentialsName);
  const ref = creds.spec.secretRef;
  const read = await secretKeys(kube, ref, CREDENTIALS_FAILURES.secret, ` (CloudflareCredentials ${credentialsName})`);
  if (creds.spec.authType === 'globalAPIKey')
    return {
      creds,
      auth: { apiKey: read(ref.apiKeyKey ?? 'CLOUDFLARE_API_KEY'), apiEmail: read(ref.emailKey ?? 'CLOUDFLARE_EMAIL') },
    };
  return { creds, auth: { apiToken: read(ref.apiTokenKey ?? 'CLOUDFLARE_API_TOKEN') } };
}

/**
 * An SDK client for the credentials, with the API token (or key) read from the Secret now; its
 * calls spend the budget of the credentials' owner when one is given.
 */
export async function clientFor(
  kube: KubeClient,
  credentialsName: string,
  baseURL?: string,
  pacing?: { budget: CallBudget; priority: CallPriority },
): Promise<Cloudflare> {
  const { creds, auth } = await credentialsAuth(kube, credentialsName);
  const email = 'apiEmail' in auth ? auth.apiEmail : undefined;
  return cloudflareClient(auth, baseURL, activitySignal(), pacing && { ...pacing, key: budgetKeyOf(creds, email) });
}

/**
 * The key of digests of secrets kept where many may read them (a SyncState, issue 23 D25):
 * derived (HKDF-SHA256) from the credentials' API token or key, which the worker reads and those
 * readers do not — the same on every replica and after every restart, changed only when the
 * token is rotated. Never leaves the activity.
 */
export async function digestKeyOf(kube: KubeClient, credentialsName: string): Promise<Buffer> {
  const { auth } = await credentialsAuth(kube, credentialsName);
  const material = 'apiToken' in auth ? auth.apiToken : auth.apiKey;
  return Buffer.from(hkdfSync('sha256', material, '', 'durable-operators/cloudflare-secret-digest', 32));
}
