/**
 * Each SandboxPool's agents have their own bearer token, so an agent — or a sandbox that gets
 * hold of its agent's token — can reach only its own pool's agents. The fast path holds one key
 * (DO_AGENT_TOKEN_FILE) and derives a pool's token from it:
 *
 *   HMAC-SHA256(key, "sandbox-agent-token/v1\n<namespace>\n<pool>\n<pool UID>"), base64url
 *
 * so it keeps no per-pool state and reads no Secret; the pool's workflow writes the token into
 * the pool's own Secret (agentTokenSecretName) when it creates agent Pods, and they mount it. A
 * pool deleted and recreated under the same name has a new UID, hence a new token.
 *
 * The token goes only to addresses admitted as an agent of a pool: the registry and the pool's
 * workflow admit the address of each Pod the pool controls (isPoolAgentPod); a call to any other
 * address is refused before it is made. It goes only inside mutual TLS, to an agent whose
 * certificate names that pool (src/fastpath/agent-pki.ts, src/fastpath/agent-client.ts).
 */
import { createHmac } from 'node:crypto';

import type { PoolIdentity } from '../domain/agent-identity.js';

export type { PoolIdentity };

export class AgentCredentials {
  /** Agent address (`https://ip:port`) → its pool and the pool's token. */
  private readonly admitted = new Map<string, { token: string; pool: PoolIdentity }>();

  constructor(private readonly key: string) {}

  /** The bearer token of the pool's agents. */
  tokenOf(pool: PoolIdentity): string {
    return createHmac('sha256', this.key)
      .update(`sandbox-agent-token/v1\n${pool.namespace}\n${pool.name}\n${pool.uid}`)
      .digest('base64url');
  }

  /** From now on calls to `url` carry the pool's token (its Pod is controlled by the pool). */
  admit(url: string, pool: PoolIdentity): void {
    this.admitted.set(url, { token: this.tokenOf(pool), pool: { ...pool } });
  }

  /** Forgets every address not in `urls` (their Pods are gone or no longer agents). */
  retain(urls: ReadonlySet<string>): void {
    for (const url of [...this.admitted.keys()]) if (!urls.has(url)) this.admitted.delete(url);
  }

  /** The token for a call to `url`, if it is an admitted agent. */
  tokenFor(url: string): string | undefined {
    return this.admitted.get(url)?.token;
  }

  /** The token and the pool (its certificate must name) for a call to `url`, if it is an admitted agent. */
  targetFor(url: string): { token: string; pool: PoolIdentity } | undefined {
    return this.admitted.get(url);
  }

  /** The identities of the pools some admitted agent belongs to. */
  pools(): PoolIdentity[] {
    return [...this.admitted.values()].map((a) => a.pool);
  }
}
