/**
 * Whose a tunnel is (issue 33, N1), the connector's selector (N11), and the emulator's tunnel
 * preconditions (E14, M6) through the real SDK: a tunnel with connections is not deleted (1022),
 * a connector still running reconnects after a connections DELETE, and a tunnel's run token needs
 * Cloudflare Tunnel Edit.
 */
import Cloudflare from 'cloudflare';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { changedTunnelRecord } from '../../src/admission/cloudflare-id.js';
import type { AdmissionRequest } from '../../src/admission/review.js';
import { CLOUDFLARE_ID_ANNOTATION } from '../../src/api/cloudflare.js';
import {
  TOKEN_CHECKSUM_ANNOTATION,
  connectorDeployment,
  connectorLabels,
  selectorDiffers,
} from '../../src/domain/cloudflare/connector.js';
import { CLOUDFLARE_ID_PROOF_ANNOTATION, otherNamespaceManager } from '../../src/domain/cloudflare/tunnel-ownership.js';
import { tokenChecksum, tunnelProof, tunnelProofHolds } from '../../src/activities/cloudflare/tunnel-proof.js';
import { EmulatorAdmin } from '../emulators/cloudflare/admin-client.js';
import { startCloudflareEmulator, type RunningEmulator } from '../emulators/cloudflare/index.js';
import { requiredPermission } from '../emulators/cloudflare/permissions.js';

const account = 'a'.repeat(32);
const owner = { kind: 'Tunnel', namespace: 'team-a', name: 'edge', uid: 'uid-1' };

describe("the worker's proof that an object made a tunnel", () => {
  const proof = tunnelProof('token-a', account, 'tunnel-1', owner);
  it('holds for that object and tunnel under the key it was made with', () => {
    expect(tunnelProofHolds(proof, 'token-a', account, 'tunnel-1', owner)).toBe(true);
  });
  it('holds for no fresh object (another UID), no other namespace or name, no other tunnel, no other key', () => {
    expect(tunnelProofHolds(proof, 'token-a', account, 'tunnel-1', { ...owner, uid: 'uid-2' })).toBe(false);
    expect(tunnelProofHolds(proof, 'token-a', account, 'tunnel-1', { ...owner, namespace: 'team-b' })).toBe(false);
    expect(tunnelProofHolds(proof, 'token-a', account, 'tunnel-1', { ...owner, name: 'other' })).toBe(false);
    expect(tunnelProofHolds(proof, 'token-a', account, 'tunnel-2', owner)).toBe(false);
    expect(tunnelProofHolds(proof, 'token-b', account, 'tunnel-1', owner)).toBe(false);
    expect(tunnelProofHolds(undefined, 'token-a', account, 'tunnel-1', owner)).toBe(false);
    expect(tunnelProofHolds('v1.forged', 'token-a', account, 'tunnel-1', owner)).toBe(false);
  });
});

describe('who manages a tunnel (its configuration SyncState lists the Tunnel)', () => {
  const a = { kind: 'Tunnel', namespace: 'team-a', name: 'edge' };
  it('a Tunnel or ClusterTunnel of another namespace; never a binding, an orphaned source, or the same namespace', () => {
    expect(otherNamespaceManager([{ ref: a }], { kind: 'Tunnel', namespace: 'team-b', name: 'edge' })).toEqual(a);
    expect(otherNamespaceManager([{ ref: a }], { kind: 'ClusterTunnel', name: 'shared' })).toEqual(a);
    const cluster = { kind: 'ClusterTunnel', name: 'shared' };
    expect(otherNamespaceManager([{ ref: cluster }], { kind: 'Tunnel', namespace: 'team-b', name: 'x' })).toEqual(
      cluster,
    );
    expect(otherNamespaceManager([{ ref: a }], a)).toBeUndefined();
    expect(otherNamespaceManager([{ ref: a }], { ...a, name: 'other' })).toBeUndefined();
    expect(otherNamespaceManager([{ ref: a, orphaned: true }], { ...a, namespace: 'team-b' })).toBeUndefined();
    expect(
      otherNamespaceManager([{ ref: { kind: 'TunnelBinding', namespace: 'team-a', name: 'b' } }], {
        ...a,
        namespace: 'team-b',
      }),
    ).toBeUndefined();
  });
});

describe("the admission webhook sees a change of the worker's tunnel record", () => {
  const request = (
    operation: string,
    now: Record<string, string>,
    before?: Record<string, string>,
    kind = 'Tunnel',
  ): AdmissionRequest => ({
    uid: 'u',
    kind: { group: 'networking.cloudflare-operator.io', version: 'v1alpha2', kind },
    namespace: 'team-b',
    operation,
    userInfo: { username: 'bob' },
    object: { metadata: { name: 'x', annotations: now } },
    ...(before ? { oldObject: { metadata: { annotations: before } } } : {}),
  });
  it('set on create, changed or removed on update; an update that keeps it (a label, a finalizer) is not a change', () => {
    expect(changedTunnelRecord(request('CREATE', { [CLOUDFLARE_ID_ANNOTATION]: 't' }))).toEqual([
      CLOUDFLARE_ID_ANNOTATION,
    ]);
    expect(
      changedTunnelRecord(
        request('UPDATE', { [CLOUDFLARE_ID_PROOF_ANNOTATION]: 'p2' }, { [CLOUDFLARE_ID_PROOF_ANNOTATION]: 'p1' }),
      ),
    ).toEqual([CLOUDFLARE_ID_PROOF_ANNOTATION]);
    expect(changedTunnelRecord(request('UPDATE', {}, { [CLOUDFLARE_ID_ANNOTATION]: 't' }))).toEqual([
      CLOUDFLARE_ID_ANNOTATION,
    ]);
    expect(
      changedTunnelRecord(
        request('UPDATE', { [CLOUDFLARE_ID_ANNOTATION]: 't', x: '1' }, { [CLOUDFLARE_ID_ANNOTATION]: 't' }),
      ),
    ).toEqual([]);
    expect(
      changedTunnelRecord(request('CREATE', { [CLOUDFLARE_ID_ANNOTATION]: 't' }, undefined, 'ClusterTunnel')),
    ).toHaveLength(1);
    expect(
      changedTunnelRecord(request('CREATE', { [CLOUDFLARE_ID_ANNOTATION]: 't' }, undefined, 'AccessGroup')),
    ).toEqual([]);
  });
});

describe("the connector's selector", () => {
  const tunnel = { kind: 'Tunnel' as const, name: 'edge' };
  it("the original operator's differs (replaced); the connector's own does not", () => {
    const original = {
      spec: {
        selector: {
          matchLabels: {
            'cloudflare-operator.io/tunnel': 'edge',
            'cloudflare-operator.io/app': 'cloudflared',
            'cloudflare-operator.io/id': 'tunnel-1',
            'cloudflare-operator.io/name': 'cf-edge',
            'cloudflare-operator.io/domain': 'example.com',
            'cloudflare-operator.io/is-cluster-tunnel': 'false',
          },
        },
      },
    };
    expect(selectorDiffers(original, tunnel)).toBe(true);
    expect(selectorDiffers({ spec: { selector: { matchLabels: connectorLabels(tunnel) } } }, tunnel)).toBe(false);
  });
});

describe("the run token's checksum on the connector's Pod template", () => {
  it('is there beside what deployPatch adds, and changes with the token', () => {
    const template = (checksum: string) => {
      const built = connectorDeployment(
        {
          apiVersion: 'networking.cloudflare-operator.io/v1alpha2',
          kind: 'Tunnel',
          name: 'edge',
          uid: 'u',
          spec: {
            newTunnel: { name: 'x' },
            cloudflare: {},
            deployPatch: '{"spec":{"template":{"metadata":{"annotations":{"team":"edge"}}}}}',
          } as never,
        },
        { namespace: 'ns', secretName: 'edge', defaultImage: 'img', tokenChecksum: checksum },
      );
      if ('problem' in built) throw new Error(built.problem);
      return (built.deployment as { spec: { template: { metadata: { annotations: Record<string, string> } } } }).spec
        .template.metadata.annotations;
    };
    expect(template(tokenChecksum('t1'))).toEqual({ team: 'edge', [TOKEN_CHECKSUM_ANNOTATION]: tokenChecksum('t1') });
    expect(tokenChecksum('t1')).not.toBe(tokenChecksum('t2'));
    expect(tokenChecksum('t1')).not.toContain('t1');
  });
});

describe('emulator: tunnel connections and the run token', () => {
  let emulator: RunningEmulator;
  let admin: EmulatorAdmin;
  const client = (apiToken: string) => new Cloudflare({ apiToken, baseURL: emulator.baseURL, maxRetries: 0 });
  beforeAll(async () => {
    emulator = await startCloudflareEmulator({
      tokens: [
        { token: 'all' },
        { token: 'tunnel-reader', permissions: ['cloudflare_tunnel:read'] },
        { token: 'read-only', readOnly: true },
      ],
      seed: { accounts: [{ id: account, name: 'a' }] },
    });
    admin = new EmulatorAdmin(emulator.url, emulator.adminToken);
  });
  afterAll(() => emulator?.close());

  it('a tunnel with a connection is not deleted (400/1022); a connector still running reconnects after the connections DELETE; once it stops, the delete goes through', async () => {
    const cf = client('all').zeroTrust.tunnels.cloudflared;
    const t = (await cf.create({ account_id: account, name: 'busy', config_src: 'cloudflare' })) as { id: string };
    await admin.startConnector(t.id);
    await expect(cf.delete(t.id, { account_id: account })).rejects.toMatchObject({
      status: 400,
      errors: [{ code: 1022 }],
    });
    await cf.connections.delete(t.id, { account_id: account });
    expect(((await cf.get(t.id, { account_id: account })) as { connections: unknown[] }).connections).toHaveLength(1);
    await expect(cf.delete(t.id, { account_id: account })).rejects.toMatchObject({ status: 400 });

    await admin.stopConnectors(t.id);
    expect(((await cf.delete(t.id, { account_id: account })) as { deleted_at?: string }).deleted_at).toBeTruthy();
  });

  it('the run token needs Cloudflare Tunnel Edit: a Tunnel Read or read-only token gets 403/10000, and reads the tunnel itself', async () => {
    const t = (await client('all').zeroTrust.tunnels.cloudflared.create({ account_id: account, name: 'tok' })) as {
      id: string;
    };
    expect(requiredPermission('GET', `/accounts/${account}/cfd_tunnel/${t.id}/token`)).toBe('cloudflare_tunnel:edit');
    for (const token of ['tunnel-reader', 'read-only']) {
      const cf = client(token).zeroTrust.tunnels.cloudflared;
      expect(((await cf.get(t.id, { account_id: account })) as { id: string }).id).toBe(t.id);
      await expect(cf.token.get(t.id, { account_id: account })).rejects.toMatchObject({
        status: 403,
        errors: [{ code: 10000 }],
      });
    }
    expect(typeof (await client('all').zeroTrust.tunnels.cloudflared.token.get(t.id, { account_id: account }))).toBe(
      'string',
    );
  });
});
