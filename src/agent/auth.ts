/**
 * The agent's bearer token: from a file (the Secret mounted in the agent Pod) or the
 * environment, compared in constant time. The token is never logged.
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import { readFileSync } from 'node:fs';

export interface TokenSource {
  tokenFile?: string;
  token?: string;
}

/** The token, trimmed; the file wins over the literal. Throws when there is none. */
export function loadAgentToken(src: TokenSource): string {
  let token: string | undefined;
  if (src.tokenFile) {
    try {
      token = readFileSync(src.tokenFile, 'utf8').trim();
    } catch (err) {
      throw new Error(`cannot read the agent token file ${src.tokenFile}: ${(err as Error).message}`, { cause: err });
    }
    if (!token) throw new Error(`the agent token file ${src.tokenFile} is empty`);
  } else token = src.token?.trim();
  if (!token) throw new Error('no agent token: set DO_AGENT_TOKEN_FILE (or --token-file) or DO_AGENT_TOKEN');
  return token;
}

const digest = (s: string) => createHash('sha256').update(s).digest();

/**
 * A checker for `Authorization: Bearer <token>` headers. Both sides are hashed first, so
 * timingSafeEqual compares equal lengths and the time does not depend on the token's length.
 */
export function bearerChecker(token: string): (authorization: string | undefined) => boolean {
  const expected = digest(token);
  return (authorization) => {
    const m = /^Bearer\s+(.+)$/i.exec(authorization ?? '');
    const given = digest(m ? m[1]!.trim() : '');
    return timingSafeEqual(given, expected) && m !== null;
  };
}
