import { describe, expect, it } from 'vitest';
import type { Container } from '../../src/agent/containerd/client.js';
import { deadAgentContainers } from '../../src/agent/containerd/reaper.js';
import { LABEL } from '../../src/agent/containerd/runtime.js';

const T0 = 1_700_000_000_000;

function container(id: string, labels: Record<string, string>, createdAtMs = T0): Container {
  return {
    id,
    labels: { [LABEL.managed]: 'true', [LABEL.namespace]: 'ns', ...labels },
    image: 'busybox',
    snapshotter: 'overlayfs',
    snapshotKey: id,
    runtime: null,
    spec: null,
    createdAt: { seconds: Math.floor(createdAtMs / 1000), nanos: (createdAtMs % 1000) * 1e6 },
    updatedAt: null,
    extensions: {},
  };
}

describe('deadAgentContainers (review N4)', () => {
  const scope = { namespace: 'ns', ownUid: 'me', live: new Set(['me', 'alive']), createdBefore: T0 + 1000 };

  it('picks the namespace’s containers whose agent UID is not live, made before the listing', () => {
    const out = deadAgentContainers(
      [
        container('dead', { [LABEL.agentUid]: 'gone' }),
        container('mine', { [LABEL.agentUid]: 'me' }),
        container('alive', { [LABEL.agentUid]: 'alive' }),
        container('other-ns', { [LABEL.agentUid]: 'gone', [LABEL.namespace]: 'elsewhere' }),
        container('no-uid', { [LABEL.agentUid]: '' }),
        container('unmanaged', { [LABEL.agentUid]: 'gone', [LABEL.managed]: 'false' }),
        container('too-new', { [LABEL.agentUid]: 'newer' }, T0 + 1000),
      ],
      scope,
    );
    expect(out.map((c) => c.id)).toEqual(['dead']);
  });

  it('reaps nothing for an agent that does not know its own UID or namespace', () => {
    const dead = [container('dead', { [LABEL.agentUid]: 'gone' })];
    expect(deadAgentContainers(dead, { ...scope, ownUid: '' })).toEqual([]);
    expect(deadAgentContainers(dead, { ...scope, namespace: undefined })).toEqual([]);
  });

  it('spares a container whose creation time containerd does not give', () => {
    const c = container('dead', { [LABEL.agentUid]: 'gone' });
    delete (c as { createdAt?: unknown }).createdAt;
    expect(deadAgentContainers([c], scope)).toEqual([]);
  });
});
