/**
 * What Cloudflare answers differently from what was written, through the real SDK: the tunnel
 * configuration without `warp-routing`, identity providers with server-filled config, split-tunnel
 * addresses in CIDR form, and the default profile's lists pre-populated with Cloudflare's defaults.
 */
import { describe, expect, it } from 'vitest';
import { emulatorThroughSdk } from '../support/emulator-unit.js';
import { DEFAULT_DEVICE_LISTS } from '../emulators/cloudflare/store.js';

const account = 'a'.repeat(32);
const sdk = emulatorThroughSdk(account);

describe('tunnel configuration', () => {
  it('keeps ingress and originRequest; warp-routing (gone from the schema) is neither stored nor answered (E1)', async () => {
    const tunnel = await sdk.cf.zeroTrust.tunnels.cloudflared.create({
      account_id: account,
      name: 'warp',
      config_src: 'cloudflare',
    });
    const config = {
      ingress: [{ hostname: 'a.example.com', service: 'http://a:80' }, { service: 'http_status:404' }],
      originRequest: { noTLSVerify: true },
      'warp-routing': { enabled: true },
    };
    const put = await sdk.cf.zeroTrust.tunnels.cloudflared.configurations.update(tunnel.id!, {
      account_id: account,
      config: config as never,
    });
    const { 'warp-routing': _dropped, ...kept } = config;
    expect(put.config).toEqual(kept);
    const got = await sdk.cf.zeroTrust.tunnels.cloudflared.configurations.get(tunnel.id!, { account_id: account });
    expect(got.config).toEqual(kept);
  });
});

describe('identity providers', () => {
  it('answer the config fields Cloudflare fills in, never the client secret (E7)', async () => {
    const idp = await sdk.cf.zeroTrust.identityProviders.create({
      account_id: account,
      name: 'entra',
      type: 'azureAD',
      config: { client_id: 'id', client_secret: 's3cret', directory_id: 'dir' },
    });
    expect(idp.config).toEqual({
      client_id: 'id',
      directory_id: 'dir',
      claims: [],
      conditional_access_enabled: false,
      support_groups: false,
      pkce_enabled: false,
    });
    const pin = await sdk.cf.zeroTrust.identityProviders.create({
      account_id: account,
      name: 'pin',
      type: 'onetimepin',
      config: {},
    });
    expect(pin.config).toEqual({ redirect_url: 'https://emulator.cloudflareaccess.com/cdn-cgi/access/callback' });
  });
});

describe('split tunnel addresses (E11)', () => {
  it('a bare IP is stored as its one-host CIDR block; a non-address is refused with 400', async () => {
    const includes = sdk.cf.zeroTrust.devices.policies.default.includes;
    const put = await includes.update({
      account_id: account,
      body: [
        { address: '192.0.2.7', description: 'one host' },
        { address: '2001:db8::1', description: 'v6 host' },
        { address: '10.0.0.0/8', description: 'block' },
      ],
    });
    expect(put.result.map((e) => (e as { address: string }).address)).toEqual([
      '192.0.2.7/32',
      '2001:db8::1/128',
      '10.0.0.0/8',
    ]);
    await expect(
      includes.update({ account_id: account, body: [{ address: 'not-an-ip', description: 'x' }] }),
    ).rejects.toMatchObject({ status: 400, errors: [expect.objectContaining({ code: 9207 })] });
  });
});

describe("the default profile's lists (E13)", () => {
  it("start with Cloudflare's default exclude ranges and fallback suffixes; include starts empty", async () => {
    const other = 'b'.repeat(32);
    sdk.emulator.store.addAccount(other);
    const excludes = await sdk.cf.zeroTrust.devices.policies.default.excludes.get({ account_id: other });
    expect(excludes.result).toEqual(DEFAULT_DEVICE_LISTS.exclude);
    expect(excludes.result).toContainEqual({ address: '10.0.0.0/8' });
    const fallback = await sdk.cf.zeroTrust.devices.policies.default.fallbackDomains.get({ account_id: other });
    expect(fallback.result).toContainEqual({ suffix: 'home.arpa' });
    expect((await sdk.cf.zeroTrust.devices.policies.default.includes.get({ account_id: other })).result).toEqual([]);
  });
});
