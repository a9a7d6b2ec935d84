/**
 * `durable-operators codec-server`: the Web UI's remote codec for the encrypted payloads
 * (src/temporal/codec-server.ts), with the roles' payload keys.
 */
import { Option, type CommandUnknownOpts } from '@commander-js/extra-typings';
import { logger } from '../log.js';
import { startCodecServer } from '../temporal/codec-server.js';
import { payloadKeysFromEnv } from '../temporal/payload-encryption.js';
import { portNumber } from './options.js';
import { untilShutdownSignal } from './signals.js';

/** The codec server's preferred local port (the samples' codec servers use 8888 too). */
export const DEFAULT_CODEC_SERVER_PORT = 8888;

const list = (s: string | undefined) =>
  (s ?? '')
    .split(',')
    .map((v) => v.trim())
    .filter(Boolean);

export function registerCodecServerCommand(program: CommandUnknownOpts): void {
  program
    .command('codec-server')
    .description(
      'Serve /decode and /encode for the Temporal Web UI and CLI (--codec-endpoint): payloads decrypted with DO_PAYLOAD_KEYS_DIR, for a bearer token of the tokens file or, with --oidc-issuer, an access token granting the namespace.',
    )
    .addOption(new Option('--host <host>', 'listen address').env('DO_CODEC_SERVER_HOST').default('0.0.0.0'))
    .addOption(
      new Option('--port <port>', 'listen port (0 = any free port)')
        .env('DO_CODEC_SERVER_PORT')
        .argParser(portNumber)
        .default(DEFAULT_CODEC_SERVER_PORT),
    )
    .addOption(
      new Option('--tokens-file <path>', 'accepted bearer tokens, one a line (any namespace)').env(
        'DO_CODEC_SERVER_TOKENS_FILE',
      ),
    )
    .addOption(
      new Option(
        '--path-tokens',
        "also accept a token as the endpoint's first path segment (/<token>/decode), for a Web UI that sends none: it lands in access logs",
      ).env('DO_CODEC_SERVER_PATH_TOKENS'),
    )
    .addOption(
      new Option('--tls-cert-file <path>', 'serve HTTPS with this certificate').env('DO_CODEC_SERVER_TLS_CERT_FILE'),
    )
    .addOption(new Option('--tls-key-file <path>', "the certificate's key").env('DO_CODEC_SERVER_TLS_KEY_FILE'))
    .addOption(
      new Option('--oidc-issuer <url>', "accept the Web UI's forwarded access tokens of this issuer").env(
        'DO_CODEC_SERVER_OIDC_ISSUER',
      ),
    )
    .addOption(
      new Option('--oidc-jwks-url <url>', "the issuer's signing keys (JWKS)").env('DO_CODEC_SERVER_OIDC_JWKS_URL'),
    )
    .addOption(new Option('--oidc-audience <aud>', "the tokens' audience").env('DO_CODEC_SERVER_OIDC_AUDIENCE'))
    .addOption(
      new Option('--oidc-permissions-claim <claim>', 'the claim listing <namespace>:<role> grants')
        .env('DO_CODEC_SERVER_OIDC_PERMISSIONS_CLAIM')
        .default('permissions'),
    )
    .addOption(
      new Option('--oidc-roles <roles>', 'the roles that may decode and encode a namespace, comma-separated')
        .env('DO_CODEC_SERVER_OIDC_ROLES')
        .default('read,write,worker,admin'),
    )
    .addOption(
      new Option(
        '--cors-origins <origins>',
        "the Web UI's origins, comma-separated (e.g. https://temporal.example)",
      ).env('DO_CODEC_SERVER_CORS_ORIGINS'),
    )
    .action(async (flags) => {
      const keys = payloadKeysFromEnv(process.env);
      if (!keys) throw new Error('the codec server needs the payload keys: set DO_PAYLOAD_KEYS_DIR');
      const log = logger.child({ role: 'codec-server' });
      const corsOrigins = list(flags.corsOrigins);
      if (Boolean(flags.tlsCertFile) !== Boolean(flags.tlsKeyFile))
        throw new Error('--tls-cert-file and --tls-key-file go together');
      if (flags.oidcIssuer && !flags.oidcJwksUrl) throw new Error('--oidc-issuer needs --oidc-jwks-url');
      const running = await startCodecServer({
        keys,
        ...(flags.tokensFile ? { tokensFile: flags.tokensFile } : {}),
        pathTokens: flags.pathTokens === true,
        ...(flags.oidcIssuer
          ? {
              oidc: {
                issuer: flags.oidcIssuer,
                jwksUrl: flags.oidcJwksUrl!,
                ...(flags.oidcAudience ? { audience: flags.oidcAudience } : {}),
                permissionsClaim: flags.oidcPermissionsClaim,
                roles: list(flags.oidcRoles),
              },
            }
          : {}),
        ...(flags.tlsCertFile ? { tls: { certFile: flags.tlsCertFile, keyFile: flags.tlsKeyFile! } } : {}),
        corsOrigins,
        port: flags.port,
        host: flags.host,
        log,
      });
      log.info(
        { port: running.port, url: running.url, corsOrigins, keyIds: keys.keyIds, oidc: flags.oidcIssuer ?? null },
        'codec server running',
      );
      await untilShutdownSignal();
      await running.close();
      log.info('codec server stopped');
    });
}
