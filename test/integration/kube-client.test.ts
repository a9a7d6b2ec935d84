/**
 * The one Kubernetes client against the real apiserver: requests share kept-alive connections
 * (client-node 2.0 alone opens a new TLS connection for every request).
 */
import diagnostics from 'node:diagnostics_channel';
import { expect, it } from 'vitest';
import { kube } from '../support/env.js';

it('sequential requests reuse one kept-alive connection instead of a TLS handshake each', async () => {
  const client = kube();
  await client.core.readNamespace({ name: 'default' }); // the first one connects
  let connections = 0;
  const count = () => void connections++;
  diagnostics.subscribe('undici:client:connected', count);
  try {
    for (let i = 0; i < 20; i++) {
      await client.core.readNamespace({ name: 'default' });
      await client.get({ apiVersion: 'v1', kind: 'Namespace', name: 'kube-system' });
    }
  } finally {
    diagnostics.unsubscribe('undici:client:connected', count);
  }
  expect(connections).toBe(0);
});
