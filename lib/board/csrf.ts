import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import { BoardRequest, headerOf } from './board-request';

/** The cookie holding the browser's nonce; the form carries the nonce signed with the board's secret. */
export const CSRF_COOKIE = 'outbox_board_csrf';
/** The form field carrying the signed nonce. */
export const CSRF_FIELD = '_csrf';

/**
 * Signed double-submit tokens. Each browser gets a random nonce in an HttpOnly, SameSite=Strict
 * cookie scoped to the board's path; every form carries HMAC(secret, nonce). A POST is taken only
 * when the form's token is the signature of the cookie's nonce. Another site can make a browser
 * send the cookie (not with SameSite=Strict, but older browsers ignore it), yet cannot read a page
 * to learn the token, nor forge one without the secret, nor plant a nonce of its own that matches
 * a token it knows.
 */
export class CsrfTokens {
  constructor(private readonly secret: Buffer) {}

  /** A fresh nonce for a browser that has none. */
  static nonce(): string {
    return randomBytes(24).toString('base64url');
  }

  /** The token a form carries for `nonce`. */
  tokenFor(nonce: string): string {
    return createHmac('sha256', this.secret).update(nonce).digest('base64url');
  }

  /** Whether `token` (from the form) signs `nonce` (from the cookie). */
  verifies(nonce: string | undefined, token: unknown): boolean {
    if (!nonce || typeof token !== 'string') return false;
    const expected = Buffer.from(this.tokenFor(nonce));
    const given = Buffer.from(token);
    return expected.length === given.length && timingSafeEqual(expected, given);
  }
}

/** The board's nonce from the request's cookies, when it has a well-formed one. */
export function nonceOf(request: BoardRequest): string | undefined {
  const header = headerOf(request, 'cookie') ?? '';
  for (const part of header.split(';')) {
    const [name, ...value] = part.trim().split('=');
    if (name === CSRF_COOKIE && /^[A-Za-z0-9_-]{32}$/.test(value.join('='))) return value.join('=');
  }
  return undefined;
}

/** The Set-Cookie value giving a browser `nonce`, scoped to the board's path. */
export function nonceCookie(nonce: string, path: string, secure: boolean): string {
  return `${CSRF_COOKIE}=${nonce}; Path=${path}; HttpOnly; SameSite=Strict${secure ? '; Secure' : ''}`;
}

/**
 * Why a POST is refused as coming from another site, or null when nothing says it does. Browsers
 * say where a request comes from in `Sec-Fetch-Site`; older ones only in `Origin`. Under the
 * board's `Referrer-Policy: no-referrer` a browser sends `Origin: null` even for the board's own
 * forms, so `null` (like a request with neither header: a script, curl) proves nothing either way
 * and is left to the token, which every POST needs anyway.
 */
export function crossSiteReason(request: BoardRequest): string | null {
  const site = headerOf(request, 'sec-fetch-site');
  if (site !== undefined) return site === 'same-origin' ? null : `the request came from another site (Sec-Fetch-Site: ${site})`;
  const origin = headerOf(request, 'origin');
  if (origin === undefined || origin === 'null') return null;
  let originHost: string | null = null;
  try {
    originHost = new URL(origin).host;
  } catch {
    originHost = null;
  }
  return originHost !== null && originHost === headerOf(request, 'host') ? null : `the request came from another origin (Origin: ${origin})`;
}
