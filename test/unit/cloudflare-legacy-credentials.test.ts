/** The original's inline credentials (src/domain/cloudflare/legacy-credentials.ts): never a silent fallback to the default. */
import { describe, expect, it } from 'vitest';
import { legacyCredentialsOf, legacyCredentialsRefusal } from '../../src/domain/cloudflare/legacy-credentials.js';

const defaults = { credentials: 'default-creds', accountId: 'acc-default' };
const refusal = (cloudflare: Record<string, unknown>) =>
  legacyCredentialsRefusal(legacyCredentialsOf({ cloudflare }), defaults);

describe('legacy inline credentials', () => {
  it('an inline Secret without credentialsRef is refused, naming the field and the default it would have used', () => {
    const r = refusal({ secret: 'cf-secret', accountId: 'acc-default' });
    expect(r?.reason).toBe('LegacyCredentials');
    expect(r?.message).toContain('spec.cloudflare.secret');
    expect(r?.message).toContain('credentialsRef');
    expect(r?.message).toContain('default-creds');
  });

  it("an accountId other than the default's is refused; the default's own is honoured", () => {
    expect(refusal({ accountId: 'acc-other' })?.message).toContain('spec.cloudflare.accountId: acc-other');
    expect(refusal({ accountId: 'acc-default', accountName: 'whatever', email: 'a@b.c' })).toBeUndefined();
    expect(refusal({ accountName: 'Some Account' })?.message).toContain('spec.cloudflare.accountName');
  });

  it('with a credentialsRef the inline fields are ignored, as the original ignored them; none set is fine', () => {
    expect(legacyCredentialsOf({ cloudflare: { credentialsRef: { name: 'x' }, secret: 's', accountId: 'o' } })).toBe(
      undefined,
    );
    expect(legacyCredentialsOf({ cloudflare: { domain: 'example.com' } })).toBeUndefined();
    expect(legacyCredentialsOf({})).toBeUndefined();
    expect(legacyCredentialsRefusal(undefined, defaults)).toBeUndefined();
  });
});
