/**
 * The local Cloudflare API emulator as a process: `npm run cloudflare-emulator -- [flags]`
 * (`dev` starts it so). A test tool: it lives under test/, out of src/ and the image.
 *
 * Tokens come from --tokens-file (JSON `[{token, id?, status?, accounts?, email?}]` — with
 * `email`, a Global API Key — or `{tokens:[…]}`, or one token per line) and/or DO_CF_EMULATOR_TOKENS (comma-separated);
 * with neither, one token is generated and printed. The seed file is JSON
 * `{accounts:[{id,name}], zones:[{id?,name,account_id}]}`.
 */
import { randomBytes } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { pathToFileURL } from 'node:url';
import { Command, Option } from 'commander';
import { untilShutdownSignal } from '../../../src/cli/signals.js';
import { logger } from '../../../src/log.js';
import { CLOUDFLARE_DEFAULT_BUDGET, startCloudflareEmulator, type SeedDocument, type TokenSpec } from './index.js';

/** The emulator's preferred local port (`wrangler dev` uses 8787; this one stays clear of it). */
const DEFAULT_PORT = 28787;

interface EmulatorFlags {
  host: string;
  port: string;
  tokensFile?: string;
  tokens?: string;
  adminToken?: string;
  seed?: string;
  rateLimit?: string;
}

/** Parses a tokens file: a JSON array, `{tokens:[…]}`, or one token per line (`#` comments). */
export function parseTokensFile(text: string): TokenSpec[] {
  const trimmed = text.trim();
  if (trimmed.startsWith('[') || trimmed.startsWith('{')) {
    const parsed = JSON.parse(trimmed) as unknown;
    const list = Array.isArray(parsed) ? parsed : (parsed as { tokens?: unknown }).tokens;
    if (!Array.isArray(list)) throw new Error('tokens file: expected an array or {tokens:[…]}');
    return list.map((t): TokenSpec => {
      if (typeof t === 'string') return { token: t };
      if (t && typeof t === 'object' && typeof (t as TokenSpec).token === 'string') return t as TokenSpec;
      throw new Error(`tokens file: not a token: ${JSON.stringify(t)}`);
    });
  }
  return trimmed
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l && !l.startsWith('#'))
    .map((token) => ({ token }));
}

/** `<requests>/<seconds>`, e.g. `1200/300` (Cloudflare's default). */
export function parseRateLimit(text: string): { requests: number; windowSeconds: number } {
  const m = /^(\d+)\/(\d+(?:\.\d+)?)$/.exec(text.trim());
  const requests = Number(m?.[1]);
  const windowSeconds = Number(m?.[2]);
  if (!m || requests < 1 || !(windowSeconds > 0))
    throw new Error(`--rate-limit: expected <requests>/<seconds>, got ${text}`);
  return { requests, windowSeconds };
}

export function emulatorCommand(): Command {
  return new Command('cloudflare-emulator')
    .description('Run the local Cloudflare API emulator (point the cloudflare SDK at the printed base URL).')
    .addOption(new Option('--host <host>', 'listen address').env('DO_CF_EMULATOR_HOST').default('127.0.0.1'))
    .addOption(
      new Option('--port <port>', 'listen port (0 = any free port)')
        .env('DO_CF_EMULATOR_PORT')
        .default(String(DEFAULT_PORT)),
    )
    .addOption(new Option('--tokens-file <path>', 'API tokens: JSON [{token,accounts?}] or one per line'))
    .addOption(new Option('--tokens <list>', 'API tokens, comma-separated').env('DO_CF_EMULATOR_TOKENS'))
    .addOption(
      new Option('--admin-token <token>', 'token of the /__emulator test hooks').env('DO_CF_EMULATOR_ADMIN_TOKEN'),
    )
    .addOption(new Option('--seed <path>', 'JSON {accounts:[{id,name}], zones:[{id?,name,account_id}]}'))
    .addOption(
      new Option('--rate-limit <n/seconds>', 'per-token request budget').default(
        `${CLOUDFLARE_DEFAULT_BUDGET.requests}/${CLOUDFLARE_DEFAULT_BUDGET.windowSeconds}`,
      ),
    )
    .action(async (flags: EmulatorFlags) => {
      const tokens: TokenSpec[] = [];
      if (flags.tokensFile) tokens.push(...parseTokensFile(await readFile(flags.tokensFile, 'utf8')));
      if (flags.tokens)
        tokens.push(
          ...flags.tokens
            .split(',')
            .filter(Boolean)
            .map((token) => ({ token: token.trim() })),
        );
      const generated = tokens.length === 0;
      if (generated) tokens.push({ token: randomBytes(24).toString('base64url') });
      const seed = flags.seed ? (JSON.parse(await readFile(flags.seed, 'utf8')) as SeedDocument) : undefined;
      const emulator = await startCloudflareEmulator({
        host: flags.host,
        port: Number(flags.port),
        tokens,
        ...(flags.adminToken ? { adminToken: flags.adminToken } : {}),
        ...(flags.rateLimit ? { rateLimit: parseRateLimit(flags.rateLimit) } : {}),
        ...(seed ? { seed } : {}),
      });
      logger.info({ baseURL: emulator.baseURL, tokens: tokens.length }, 'cloudflare emulator running');
      // Printed for people and for tests that start the CLI (one line each, stable prefixes).
      console.log(`CLOUDFLARE_BASE_URL=${emulator.baseURL}`);
      if (generated) console.log(`CLOUDFLARE_API_TOKEN=${tokens[0]?.token}`);
      if (!flags.adminToken) console.log(`CF_EMULATOR_ADMIN_TOKEN=${emulator.adminToken}`);
      await untilShutdownSignal();
      await emulator.close();
      logger.info('cloudflare emulator stopped');
    });
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) await emulatorCommand().parseAsync();
