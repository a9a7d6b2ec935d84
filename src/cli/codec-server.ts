/**
 * `durable-operators codec-server`: the Web UI's remote codec for the encrypted payloads
 * (src/temporal/codec-server.ts), with the roles' payload keys.
 */
import { Command, Option } from 'commander';
import { logger } from '../log.js';
import { startCodecServer } from '../temporal/codec-server.js';
import { payloadKeysFromEnv } from '../temporal/payload-encryption.js';
import { untilShutdownSignal } from './signals.js';

/** The codec server's preferred local port (the samples' codec servers use 8888 too). */
export const DEFAULT_CODEC_SERVER_PORT = 8888;

interface CodecServerFlags {
  host: string;
  port: string;
  tokensFile: string;
  corsOrigins?: string;
}

export function registerCodecServerCommand(program: Command): void {
  program
    .command('codec-server')
    .description(
      'Serve /decode and /encode for the Temporal Web UI and CLI (--codec-endpoint): payloads decrypted with DO_PAYLOAD_KEYS_DIR, for holders of a token.',
    )
    .addOption(new Option('--host <host>', 'listen address').env('DO_CODEC_SERVER_HOST').default('0.0.0.0'))
    .addOption(
      new Option('--port <port>', 'listen port (0 = any free port)')
        .env('DO_CODEC_SERVER_PORT')
        .default(String(DEFAULT_CODEC_SERVER_PORT)),
    )
    .addOption(
      new Option('--tokens-file <path>', 'accepted tokens, one a line (required)')
        .env('DO_CODEC_SERVER_TOKENS_FILE')
        .makeOptionMandatory(),
    )
    .addOption(
      new Option(
        '--cors-origins <origins>',
        "the Web UI's origins, comma-separated (e.g. https://temporal.example)",
      ).env('DO_CODEC_SERVER_CORS_ORIGINS'),
    )
    .action(async (flags: CodecServerFlags) => {
      const keys = payloadKeysFromEnv(process.env);
      if (!keys) throw new Error('the codec server needs the payload keys: set DO_PAYLOAD_KEYS_DIR');
      const log = logger.child({ role: 'codec-server' });
      const corsOrigins = (flags.corsOrigins ?? '')
        .split(',')
        .map((s) => s.trim())
        .filter(Boolean);
      const running = await startCodecServer({
        keys,
        tokensFile: flags.tokensFile,
        corsOrigins,
        port: Number(flags.port),
        host: flags.host,
        log,
      });
      log.info({ port: running.port, corsOrigins, keyIds: keys.keyIds }, 'codec server running');
      await untilShutdownSignal();
      await running.close();
      log.info('codec server stopped');
    });
}
