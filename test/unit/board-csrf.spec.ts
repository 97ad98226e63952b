import { CsrfTokens, crossSiteReason, nonceOf } from '../../lib/board/csrf';

const request = (headers: Record<string, string>) => ({ headers: { host: 'ops.example:8080', ...headers } });

describe('the board’s CSRF checks', () => {
  it('takes a token only with the nonce it signs, under the secret that signed it', () => {
    const tokens = new CsrfTokens(Buffer.alloc(32, 1));
    const nonce = CsrfTokens.nonce();
    expect(tokens.verifies(nonce, tokens.tokenFor(nonce))).toBe(true);
    expect(tokens.verifies(CsrfTokens.nonce(), tokens.tokenFor(nonce))).toBe(false);
    expect(new CsrfTokens(Buffer.alloc(32, 2)).verifies(nonce, tokens.tokenFor(nonce))).toBe(false);
    expect(tokens.verifies(undefined, tokens.tokenFor(nonce))).toBe(false);
    expect(tokens.verifies(nonce, undefined)).toBe(false);
  });

  it('reads the nonce only from a well-formed cookie of its own name', () => {
    const nonce = CsrfTokens.nonce();
    expect(nonceOf(request({ cookie: `a=b; outbox_board_csrf=${nonce}; c=d` }))).toBe(nonce);
    expect(nonceOf(request({ cookie: 'outbox_board_csrf=short' }))).toBeUndefined();
    expect(nonceOf(request({}))).toBeUndefined();
  });

  it('refuses what a browser says came from another site, and leaves Origin: null to the token', () => {
    expect(crossSiteReason(request({ 'sec-fetch-site': 'same-origin', origin: 'null' }))).toBeNull();
    expect(crossSiteReason(request({ 'sec-fetch-site': 'same-site' }))).toMatch(/another site/);
    expect(crossSiteReason(request({ 'sec-fetch-site': 'cross-site' }))).toMatch(/another site/);
    expect(crossSiteReason(request({ origin: 'http://ops.example:8080' }))).toBeNull();
    expect(crossSiteReason(request({ origin: 'https://evil.example' }))).toMatch(/another origin/);
    expect(crossSiteReason(request({ origin: 'not a url' }))).toMatch(/another origin/);
    expect(crossSiteReason(request({ origin: 'null' }))).toBeNull();
    expect(crossSiteReason(request({}))).toBeNull();
  });
});
