/**
 * The agent's HTTP API bodies (the original fast-sandbox agent's JSON field names), validated
 * with TypeBox. Pure: no I/O, so the messages are unit-tested. Each schema is its route's schema
 * (src/agent/server.ts); `agentRequestValidator` checks a request part with the schema's parser,
 * which names the first thing wrong more precisely than a schema error would.
 */
import { createHash } from 'node:crypto';
import { Type, type Static, type TSchema } from '@sinclair/typebox';
import { TypeCompiler } from '@sinclair/typebox/compiler';

export const AGENT_API_PREFIX = '/api/v1/agent';

/** The original's agent phases, plus `terminating` while a delete waits for the process to go. */
export const AGENT_PHASES = ['creating', 'running', 'terminating', 'stopped', 'failed'] as const;
export type AgentPhase = (typeof AGENT_PHASES)[number];

export const AgentSandboxSpec = Type.Object({
  sandboxId: Type.String(),
  claimUid: Type.Optional(Type.String()),
  claimName: Type.Optional(Type.String()),
  image: Type.String(),
  cpu: Type.Optional(Type.String()),
  memory: Type.Optional(Type.String()),
  command: Type.Optional(Type.Array(Type.String())),
  args: Type.Optional(Type.Array(Type.String())),
  env: Type.Optional(Type.Record(Type.String(), Type.String())),
  workingDir: Type.Optional(Type.String()),
  exposedPorts: Type.Optional(Type.Array(Type.Integer())),
});
export type AgentSandboxSpec = Static<typeof AgentSandboxSpec>;

export const CreateSandboxRequest = Type.Object({ sandbox: AgentSandboxSpec });
export type CreateSandboxRequest = Static<typeof CreateSandboxRequest>;

/** The longest `waitMs` a delete may ask for: under the fast path's 5 s per agent call. */
export const MAX_DELETE_WAIT_MS = 4_000;

export const DeleteSandboxRequest = Type.Object({
  sandboxId: Type.String(),
  /**
   * Extension: answer once the sandbox is gone from this agent (its processes and what they were
   * made of), or after this many ms, with `gone` saying which: one call instead of a delete and a
   * status poll until it is gone. An agent without it ignores the field and answers at once.
   */
  waitMs: Type.Optional(Type.Integer({ minimum: 0, maximum: MAX_DELETE_WAIT_MS })),
});
export type DeleteSandboxRequest = Static<typeof DeleteSandboxRequest>;

export interface DeleteSandboxResponse {
  success: boolean;
  message?: string;
  /** Extension, with `waitMs`: the sandbox is gone from this agent (false: still terminating). */
  gone?: boolean;
}

export interface CreateSandboxResponse {
  success: boolean;
  message?: string;
  /** Why a create was refused: `CapacityExceeded`, `PortInUse`, `SandboxIdConflict`. */
  reason?: string;
  sandboxId: string;
  /** Unix seconds, stamped when the agent first accepted the sandbox; a replay returns the same. */
  createdAt: number;
}

export interface SandboxStatusReport {
  sandboxId: string;
  claimUid: string;
  /**
   * Extensions to the original's report (JSON readers of the original ignore them): the Sandbox
   * name the sandbox was created for (the agent's namespace is the Sandbox's) and its exposed
   * ports, so the fast path can rebuild its registry and route phase changes from reports alone.
   */
  claimName: string;
  exposedPorts: number[];
  phase: AgentPhase;
  message: string;
  /** Extension: why a failed sandbox ended, when the runtime knows (`OOMKilled`, `EphemeralStorageExceeded`). */
  reason?: string;
  createdAt: number;
}

export interface AgentStatusReport {
  agentId: string;
  nodeName: string;
  capacity: number;
  allocated: number;
  /**
   * Extension: the agent refuses new sandboxes (POST /api/v1/agent/drain), because its pool is
   * about to remove it. Absent from agents that predate it (read as false).
   */
  draining?: boolean;
  images: string[];
  /**
   * Extension: how this agent runs sandboxes — `containerd/runc`, `containerd/gvisor`, or
   * `process` (isolates nothing). Absent from agents that predate it.
   */
  runtime?: string;
  /**
   * Extension: why this agent cannot run sandboxes as its pool asks (e.g. `runtimeType: gvisor`
   * on a node without runsc); every create is refused with reason `RuntimeUnsupported`.
   */
  runtimeUnsupported?: string;
  /** Extension: warm containers ready to become sandboxes, by image (the pool's warmImages). */
  warm?: Record<string, number>;
  /**
   * Extension: a random ID of this agent process, new at every start. A sandbox missing from an
   * agent whose boot ID changed since its placement went with the agent's restart (a container
   * restart, an OOM kill): its agent was lost, not the sandbox alone. Absent from older agents.
   */
  bootId?: string;
  sandboxStatuses: SandboxStatusReport[];
}

const createCheck = TypeCompiler.Compile(CreateSandboxRequest);
const deleteCheck = TypeCompiler.Compile(DeleteSandboxRequest);

type Parsed<T> = { ok: true; value: T } | { ok: false; message: string };

function firstError(check: typeof createCheck | typeof deleteCheck, body: unknown): string {
  const e = check.Errors(body).First();
  if (!e) return 'invalid body';
  const where = e.path === '' ? 'body' : e.path.slice(1).replaceAll('/', '.');
  return `${where}: ${e.message}`;
}

export const DrainRequest = Type.Object({ drain: Type.Optional(Type.Boolean()) });
export type DrainRequest = Static<typeof DrainRequest>;
const drainCheck = TypeCompiler.Compile(DrainRequest);

/** A drain body: `{}` or `{"drain":true}` drains, `{"drain":false}` undrains. */
export function parseDrainRequest(body: unknown): Parsed<DrainRequest> {
  if (typeof body !== 'object' || body === null || Array.isArray(body) || !drainCheck.Check(body))
    return { ok: false, message: 'body must be a JSON object {"drain": true|false}' };
  return { ok: true, value: body };
}

/**
 * Which agent Pods of the agent's namespace exist (their UIDs, from a listing `listedMsAgo`
 * milliseconds before the call was sent): the agent removes its node's containers of the
 * namespace's other agents, those not among them (POST /api/v1/agent/reap, review N4).
 */
export const ReapRequest = Type.Object({
  liveAgentUids: Type.Array(Type.String({ minLength: 1 }), { maxItems: 100_000 }),
  listedMsAgo: Type.Integer({ minimum: 0 }),
});
export type ReapRequest = Static<typeof ReapRequest>;
const reapCheck = TypeCompiler.Compile(ReapRequest);

/** A container the agent removed because its agent Pod is gone. */
export interface ReapedContainer {
  containerId: string;
  agentName: string;
  agentUid: string;
  /** The sandbox it ran (absent for a warm container nobody took). */
  sandboxId?: string;
}

export interface ReapResponse {
  removed: ReapedContainer[];
  /** Why nothing could be checked (the agent does not know its own Pod's UID or namespace). */
  skipped?: string;
}

export function parseReapRequest(body: unknown): Parsed<ReapRequest> {
  if (typeof body !== 'object' || body === null || Array.isArray(body) || !reapCheck.Check(body))
    return { ok: false, message: 'body must be a JSON object {"liveAgentUids":["<uid>",...],"listedMsAgo":<ms>}' };
  return { ok: true, value: body };
}

/** A create body, or the first thing wrong with it, named precisely. */
export function parseCreateRequest(body: unknown): Parsed<CreateSandboxRequest> {
  if (typeof body !== 'object' || body === null || Array.isArray(body))
    return { ok: false, message: 'body must be a JSON object {"sandbox":{...}}' };
  const sb = (body as { sandbox?: unknown }).sandbox;
  if (typeof sb !== 'object' || sb === null || Array.isArray(sb))
    return { ok: false, message: 'sandbox is required (an object)' };
  const s = sb as Record<string, unknown>;
  if (s.sandboxId === undefined || s.sandboxId === '') return { ok: false, message: 'sandbox.sandboxId is required' };
  if (s.image === undefined || s.image === '') return { ok: false, message: 'sandbox.image is required' };
  if (s.exposedPorts !== undefined) {
    if (!Array.isArray(s.exposedPorts)) return { ok: false, message: 'sandbox.exposedPorts must be an array of ports' };
    const seen = new Set<unknown>();
    for (const p of s.exposedPorts) {
      if (typeof p !== 'number' || !Number.isInteger(p) || p < 1 || p > 65535)
        return { ok: false, message: `sandbox.exposedPorts: ${JSON.stringify(p)} is not a port (an integer 1–65535)` };
      if (seen.has(p)) return { ok: false, message: `sandbox.exposedPorts: port ${p} is listed twice` };
      seen.add(p);
    }
  }
  if (!createCheck.Check(body)) return { ok: false, message: firstError(createCheck, body) };
  return { ok: true, value: body };
}

export function parseDeleteRequest(body: unknown): Parsed<DeleteSandboxRequest> {
  if (typeof body !== 'object' || body === null || Array.isArray(body))
    return { ok: false, message: 'body must be a JSON object {"sandboxId":"..."}' };
  const id = (body as { sandboxId?: unknown }).sandboxId;
  if (id === undefined || id === '') return { ok: false, message: 'sandboxId is required' };
  if (!deleteCheck.Check(body)) return { ok: false, message: firstError(deleteCheck, body) };
  return { ok: true, value: body };
}

/** The most stdin an exec takes (raw bytes): it is held in memory until the command has read it. */
export const MAX_EXEC_STDIN_BYTES = 1024 * 1024;

/**
 * Standard padded base64 (RFC 4648 §4) as bytes, or undefined when it is not: Buffer.from skips
 * what it cannot read, and a user's input must arrive as sent or be refused. (Checked by encoding
 * back, not by a regular expression: one over a megabyte overflows V8's backtracking stack.)
 */
export function decodeBase64(text: string): Buffer | undefined {
  const bytes = Buffer.from(text, 'base64');
  return bytes.toString('base64') === text ? bytes : undefined;
}

/** An exec: the command, and what it reads on stdin (base64 on the wire, bytes once parsed), then EOF; absent: EOF at once. */
export const ExecRequest = Type.Object({
  sandboxId: Type.String({ minLength: 1 }),
  command: Type.Array(Type.String(), { minItems: 1 }),
  stdin: Type.Optional(Type.Unsafe<Buffer>(Type.String({ contentEncoding: 'base64' }))),
});
export type ExecRequest = Static<typeof ExecRequest>;

/** An exec body `{sandboxId, command[], stdin?}` (stdin base64, at most MAX_EXEC_STDIN_BYTES decoded). */
export function parseExecRequest(body: unknown): Parsed<ExecRequest> {
  if (typeof body !== 'object' || body === null || Array.isArray(body))
    return { ok: false, message: 'body must be a JSON object {"sandboxId":"...","command":[...]}' };
  const b = body as { sandboxId?: unknown; command?: unknown; stdin?: unknown };
  if (typeof b.sandboxId !== 'string' || !b.sandboxId) return { ok: false, message: 'sandboxId is required' };
  if (!Array.isArray(b.command) || !b.command.length || !b.command.every((c) => typeof c === 'string'))
    return { ok: false, message: 'command must be a non-empty array of strings' };
  const value: ExecRequest = { sandboxId: b.sandboxId, command: b.command as string[] };
  if (b.stdin !== undefined) {
    if (typeof b.stdin !== 'string') return { ok: false, message: 'stdin must be a base64 string' };
    const stdin = decodeBase64(b.stdin);
    if (!stdin) return { ok: false, message: 'stdin is not base64 (standard alphabet, padded)' };
    if (stdin.length > MAX_EXEC_STDIN_BYTES)
      return { ok: false, message: `stdin is ${stdin.length} bytes; at most ${MAX_EXEC_STDIN_BYTES} are accepted` };
    if (stdin.length) value.stdin = stdin;
  }
  return { ok: true, value };
}

/** `GET …/logs?sandboxId=&follow=true`: follow is on for `true`, `1` or `yes`. */
export const LogsQuery = Type.Object({
  sandboxId: Type.String({ minLength: 1 }),
  follow: Type.Optional(Type.Unsafe<boolean>(Type.String())),
});
export type LogsQuery = Static<typeof LogsQuery>;

export function parseLogsQuery(query: unknown): Parsed<LogsQuery> {
  const first = (v: unknown) => (Array.isArray(v) ? (v[0] as unknown) : v);
  const q = (query ?? {}) as { sandboxId?: unknown; follow?: unknown };
  const sandboxId = first(q.sandboxId);
  if (typeof sandboxId !== 'string' || !sandboxId)
    return { ok: false, message: 'sandboxId is required (query parameter)' };
  const follow = first(q.follow);
  return {
    ok: true,
    value: { sandboxId, follow: ['true', '1', 'yes'].includes(typeof follow === 'string' ? follow.toLowerCase() : '') },
  };
}

const PARSERS = new Map<TSchema, (part: unknown) => Parsed<unknown>>([
  [CreateSandboxRequest, parseCreateRequest],
  [DeleteSandboxRequest, parseDeleteRequest],
  [DrainRequest, parseDrainRequest],
  [ReapRequest, parseReapRequest],
  [ExecRequest, parseExecRequest],
  [LogsQuery, parseLogsQuery],
]);

/**
 * The routes' validator (fastify's validator compiler shape): a request part checked by its
 * schema's parser, replaced by the parsed value (stdin as bytes), or `invalid(message)`.
 */
export function agentRequestValidator<E extends Error>(
  schema: TSchema,
  invalid: (message: string) => E,
): (part: unknown) => { value: unknown } | { error: E } {
  const parse = PARSERS.get(schema);
  if (!parse) throw new Error('an agent route schema without its parser');
  return (part) => {
    const parsed = parse(part);
    return parsed.ok ? { value: parsed.value } : { error: invalid(parsed.message) };
  };
}

/**
 * The spec fields that make two creates with one sandboxId the same request (order-insensitive
 * env), hashed: the runtime keeps it beside the sandbox (container labels), where env values must
 * not appear.
 */
export function specFingerprint(s: AgentSandboxSpec): string {
  const env = Object.entries(s.env ?? {}).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  const fields = JSON.stringify([
    s.image,
    s.claimUid ?? '',
    s.command ?? [],
    s.args ?? [],
    env,
    s.workingDir ?? '',
    [...(s.exposedPorts ?? [])].sort((a, b) => a - b),
    s.cpu ?? '',
    s.memory ?? '',
  ]);
  return createHash('sha256').update(fields).digest('hex');
}
