/**
 * The Cloudflare v4 envelope and the error bodies the emulator answers with. Every response is
 * `{success, errors:[{code,message}], messages:[], result}` (+ `result_info` on lists); errors carry
 * `result: null`. Status codes and error codes are the ones the real API sends for the same case,
 * except where an entry below says its code is guessed.
 */

export interface CfErrorData {
  code: number;
  message: string;
  error_chain?: CfErrorData[];
  /** Where in the body the problem is (ruleset errors: `{pointer: '/rules/0/action'}`). */
  source?: { pointer: string };
}

export interface ResultInfo {
  page?: number;
  per_page: number;
  count: number;
  total_count?: number;
  total_pages?: number;
  cursor?: string;
}

export interface Envelope {
  success: boolean;
  errors: CfErrorData[];
  messages: CfErrorData[];
  result: unknown;
  result_info?: ResultInfo;
}

/** A failure answered as an error envelope with this HTTP status (and extra headers). */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly errors: CfErrorData[],
    readonly headers: Record<string, string> = {},
  ) {
    super(errors.map((e) => `${e.code} ${e.message}`).join('; '));
  }
}

export function success(result: unknown, resultInfo?: ResultInfo): Envelope {
  const body: Envelope = { success: true, errors: [], messages: [], result };
  if (resultInfo) body.result_info = resultInfo;
  return body;
}

export function failure(errors: CfErrorData[]): Envelope {
  return { success: false, errors, messages: [], result: null };
}

/** The error cases the emulator reproduces, by the real API's status and code. */
export const CfErrors = {
  /** A token that is unknown, disabled or has no access to the object (code 10000, 403). */
  authentication: () => new ApiError(403, [{ code: 10000, message: 'Authentication error' }]),
  /** `/user/tokens/verify` with a token that does not verify (code 1000, 401). */
  invalidToken: () => new ApiError(401, [{ code: 1000, message: 'Invalid API Token' }]),
  /** A malformed `Authorization` header (6003 with 6111 in the chain, 400). */
  malformedAuthorization: () =>
    new ApiError(400, [
      {
        code: 6003,
        message: 'Invalid request headers',
        error_chain: [{ code: 6111, message: 'Invalid format for Authorization header' }],
      },
    ]),
  /**
   * Neither an Authorization header nor X-Auth-Key with X-Auth-Email (9106, 400; as Cloudflare
   * answers a request without credentials, and a Global API Key sent without its email).
   */
  missingAuthHeaders: () =>
    new ApiError(400, [{ code: 9106, message: 'Missing X-Auth-Key, X-Auth-Email or Authorization headers' }]),
  /** An X-Auth-Email without an X-Auth-Key (9107, 400; the message is guessed). */
  missingAuthKey: () => new ApiError(400, [{ code: 9107, message: 'Missing X-Auth-Key header' }]),
  /** An X-Auth-Key (6103) or X-Auth-Email (6102) of the wrong format, under 6003 (400; real). */
  malformedAuthHeader: (code: 6102 | 6103, header: 'X-Auth-Key' | 'X-Auth-Email') =>
    new ApiError(400, [
      {
        code: 6003,
        message: 'Invalid request headers',
        error_chain: [{ code, message: `Invalid format for ${header} header` }],
      },
    ]),
  /** A Global API Key and email that are not a pair, or a revoked key (9103, 403; real). */
  unknownAuthKey: () => new ApiError(403, [{ code: 9103, message: 'Unknown X-Auth-Key or X-Auth-Email' }]),
  /** An unknown path (7000, 404). */
  noRoute: () => new ApiError(404, [{ code: 7000, message: 'No route for that URI' }]),
  /** A path whose object identifier (zone, account) does not exist (7003 + 7000). */
  invalidIdentifier: (path: string) =>
    new ApiError(404, [
      { code: 7003, message: `Could not route to ${path}, perhaps your object identifier is invalid?` },
      { code: 7000, message: 'No route for that URI' },
    ]),
  /** GET of a phase entrypoint that was never written (10003, 404). */
  entrypointNotFound: (phase: string) =>
    new ApiError(404, [{ code: 10003, message: `could not find entrypoint ruleset in the ${phase} phase` }]),
  /** A method the path does not support (10405, 405). */
  methodNotAllowed: (method: string) =>
    new ApiError(405, [{ code: 10405, message: `Method ${method} not allowed for this endpoint` }]),
  /** A body that is not JSON (6007, 400). */
  malformedJson: () => new ApiError(400, [{ code: 6007, message: 'Malformed JSON in request body' }]),
  /** A JSON body of the wrong shape (9207, 400), with the first problems in the chain. */
  invalidBody: (details: string[]) =>
    new ApiError(400, [
      {
        code: 9207,
        message: 'Request body is invalid.',
        ...(details.length ? { error_chain: details.map((message) => ({ code: 9207, message })) } : {}),
      },
    ]),
  /**
   * A rule expression the Rules language parser refuses (400). The code is guessed: the real API
   * answers a bad expression with a `filter parsing error (line:column): …` message under a
   * ruleset-validation code we have not seen documented; 20021 is our stand-in.
   */
  filterParsing: (line: number, column: number, detail: string) =>
    new ApiError(400, [{ code: 20021, message: `filter parsing error (${line}:${column}): ${detail}` }]),
  /**
   * A phase entrypoint Cloudflare's Ruleset Engine refuses (400) with the offending field's
   * pointer, as its errors come (e.g. 20217 with `source.pointer: "/kind"`). Code 20200 is
   * guessed: an action the phase does not take, a duplicate rule ref, more rules than the plan allows.
   */
  rulesetInvalid: (pointer: string, message: string) =>
    new ApiError(400, [{ code: 20200, message, source: { pointer } }]),
  /** DNS: a record with the same type, name and content exists (81058, 400; real). */
  dnsIdentical: () => new ApiError(400, [{ code: 81058, message: 'An identical record already exists.' }]),
  /** DNS: a CNAME and another record on one name (81053, 400; real). */
  dnsCnameConflict: () =>
    new ApiError(400, [{ code: 81053, message: 'An A, AAAA, or CNAME record with that host already exists.' }]),
  /** DNS: unknown record id (81044, 404; real). */
  dnsNotFound: () => new ApiError(404, [{ code: 81044, message: 'Record does not exist.' }]),
  /**
   * DNS: a record field the API refuses (400). Codes: 9004 not proxiable, 9005/9006 bad A/AAAA
   * content, 9021 bad TTL are from memory of real answers (unverified); 9100 (comment with a
   * newline), 9101 (comment longer than the zone's plan allows) and 9104 (tags on a Free zone)
   * are guessed.
   */
  dnsInvalid: (code: number, message: string) => new ApiError(400, [{ code, message }]),
  /** Zone settings: an unknown setting id (404; code 1006 guessed). */
  settingNotFound: (id: string) =>
    new ApiError(404, [{ code: 1006, message: `Unrecognized zone setting name: ${id}` }]),
  /**
   * Zone settings: a setting the zone's plan does not let it change (code 1015 and message as
   * real answers show them; the status, 400, is assumed).
   */
  settingNotAllowed: (id: string) =>
    new ApiError(400, [{ code: 1015, message: `Not allowed to edit setting for ${id}` }]),
  /** Zone settings: a value the setting does not take (400; code 1007 from memory, unverified). */
  settingInvalidValue: (id: string, detail: string) =>
    new ApiError(400, [{ code: 1007, message: `Invalid value for zone setting ${id}: ${detail}` }]),
  /**
   * Tunnels and virtual networks (400/404/409). Codes guessed except 1013 (a tunnel name in use,
   * 409, as cloudflared's client and users' logs show it): 1002 vnet not found, 1003 tunnel not found, 1005 bad tunnel secret, 1010 vnet
   * name in use, 1011 default vnet rule, 1056 bad ingress.
   */
  teamnet: (status: number, code: number, message: string) => new ApiError(status, [{ code, message }]),
  /** Access groups and identity providers: unknown id (404; code 12119 guessed). */
  accessNotFound: (what: string) => new ApiError(404, [{ code: 12119, message: `${what} not found` }]),
  /** Access: a group whose rules are not Cloudflare's schema (400; code 12130 guessed). */
  accessInvalid: (detail: string) =>
    new ApiError(400, [{ code: 12130, message: `access.api.error.invalid_request: ${detail}` }]),
  /** Access: a group or IdP name already used in the account or zone (400; code 12130 guessed). */
  accessConflict: (what: string, name: string) =>
    new ApiError(400, [
      { code: 12130, message: `access.api.error.conflict: ${what} ${JSON.stringify(name)} already exists` },
    ]),
  /** Over the token's request budget (971, 429, with Retry-After in seconds). */
  rateLimited: (retryAfterSeconds: number, headers: Record<string, string> = {}) =>
    new ApiError(429, [{ code: 971, message: 'Please wait and consider throttling your request speed' }], {
      'retry-after': String(retryAfterSeconds),
      ...headers,
    }),
  /** A fault injected by a test: any status, with a generic code unless one is given. */
  injected: (status: number, code?: number, message?: string) =>
    new ApiError(status, [
      { code: code ?? (status === 429 ? 971 : 10001), message: message ?? `Injected fault (HTTP ${status})` },
    ]),
} as const;
