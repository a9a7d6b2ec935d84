/**
 * Calling agents as the fast path does, for tests that talk to an agent directly: HTTPS with the
 * fast path's client certificate derived from the agent key (src/fastpath/agent-pki.ts), the
 * agent's certificate verified against the derived CA. `agentFetch(key)` answers with a standard
 * Response, so a test's `fetch(url, init)` becomes `agentFetch(key)(url, init)`. The pool check
 * is the fast path's (AgentClient); tests that need it use AgentClient.
 */
import https from 'node:https';
import { Readable } from 'node:stream';
import { AgentPki } from '../../src/fastpath/agent-pki.js';

export type AgentFetch = (
  url: string,
  init?: { method?: string; headers?: Record<string, string>; body?: string; signal?: AbortSignal },
) => Promise<Response>;

export function agentFetch(agentKey: string): AgentFetch {
  const pki = new AgentPki(agentKey);
  return async (url, init = {}) => {
    const tls = await pki.fastPathTls();
    return new Promise<Response>((resolve, reject) => {
      const req = https.request(
        url,
        {
          method: init.method ?? 'GET',
          headers: init.headers,
          ca: tls.ca,
          cert: tls.cert,
          key: tls.key,
          agent: false,
          ...(init.signal && { signal: init.signal }),
          checkServerIdentity: () => undefined,
        },
        (res) =>
          resolve(
            new Response(Readable.toWeb(res) as ReadableStream, {
              status: res.statusCode,
              headers: res.headers as Record<string, string>,
            }),
          ),
      );
      req.once('error', reject);
      req.end(init.body);
    });
  };
}
