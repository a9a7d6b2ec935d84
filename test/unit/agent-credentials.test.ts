/**
 * Each pool's agent token (src/fastpath/agent-credentials.ts), and the rule that the fast path's
 * agent client sends a request — and so a token — only to an admitted agent address.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { agentPod, agentTokenSecretName, AGENT_TOKEN_DIR } from '../../src/domain/sandbox-pool.js';
import { AgentClient } from '../../src/fastpath/agent-client.js';
import { AgentCredentials } from '../../src/fastpath/agent-credentials.js';

const pool = { namespace: 'team-a', name: 'gpu', uid: '6b1d0c1e-0000-4000-8000-000000000001' };

describe('a pool’s agent token', () => {
  it('is derived from the key and the pool: the same for the same pool, different for any other', () => {
    const c = new AgentCredentials('key-1');
    const t = c.tokenOf(pool);
    expect(t).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(new AgentCredentials('key-1').tokenOf({ ...pool })).toBe(t);
    const others = [
      new AgentCredentials('key-2').tokenOf(pool),
      c.tokenOf({ ...pool, namespace: 'team-b' }),
      c.tokenOf({ ...pool, name: 'cpu' }),
      c.tokenOf({ ...pool, uid: '6b1d0c1e-0000-4000-8000-000000000002' }), // recreated under the same name
    ];
    expect(new Set([t, ...others]).size).toBe(5);
    expect(t).not.toContain('key-1');
  });

  it('its Secret is named after the pool and its UID, and the pool’s Pods mount it as the agent’s token file', () => {
    expect(agentTokenSecretName('gpu', pool.uid)).toBe('gpu-agent-token-6b1d0c1e');
    expect(agentTokenSecretName('x'.repeat(253), pool.uid).length).toBeLessThanOrEqual(253);
    const pod = agentPod({
      namespace: 'team-a',
      pool: 'gpu',
      poolUid: pool.uid,
      name: 'gpu-agent-1',
      perPod: 2,
      // A template that names another token: the pool's own wins.
      template: {
        spec: {
          containers: [
            {
              name: 'agent',
              env: [{ name: 'DO_AGENT_TOKEN_FILE', value: '/etc/shared/token' }],
              volumeMounts: [{ name: 'shared', mountPath: '/etc/shared' }],
            },
          ],
          volumes: [{ name: 'shared', secret: { secretName: 'sandbox-agent-token' } }],
        },
      },
    }) as {
      spec: {
        volumes: { name: string; secret?: { secretName: string } }[];
        containers: { env: { name: string; value?: string }[]; volumeMounts: { name: string; mountPath: string }[] }[];
      };
    };
    const agent = pod.spec.containers[0]!;
    expect(agent.env.filter((e) => e.name === 'DO_AGENT_TOKEN_FILE')).toEqual([
      { name: 'DO_AGENT_TOKEN_FILE', value: `${AGENT_TOKEN_DIR}/token` },
    ]);
    const mount = agent.volumeMounts.find((m) => m.mountPath === AGENT_TOKEN_DIR)!;
    expect(pod.spec.volumes.find((v) => v.name === mount.name)?.secret?.secretName).toBe('gpu-agent-token-6b1d0c1e');
  });
});

describe('the agent client', () => {
  let server: http.Server;
  let url: string;
  const seen: (string | undefined)[] = [];
  beforeAll(async () => {
    server = http.createServer((req, res) => {
      seen.push(req.headers.authorization);
      res.writeHead(200, { 'content-type': 'application/json' }).end('{"sandboxStatuses":[]}');
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(() => server.close());

  it('calls only admitted agents, each with its pool’s token; a forgotten one is not called again', async () => {
    const c = new AgentCredentials('key-1');
    const client = new AgentClient((u) => c.targetFor(u), { insecurePlainHttp: true });
    await expect(client.status(url)).rejects.toThrow(/not an agent of any SandboxPool: not called/);
    expect(seen).toEqual([]);
    c.admit(url, pool);
    await client.status(url);
    expect(seen).toEqual([`Bearer ${c.tokenOf(pool)}`]);
    c.retain(new Set());
    await expect(client.status(url)).rejects.toThrow(/not called/);
    expect(seen).toHaveLength(1);
  });
});
