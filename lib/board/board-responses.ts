import { AbstractHttpAdapter } from '@nestjs/core';

/**
 * Headers on every answer of the board. The policy lets the page load only the board's own
 * stylesheet, run no script at all (the board has none), post forms only to itself, and be framed
 * by no one; nothing stored in a message can widen it.
 */
export const SECURITY_HEADERS: readonly [string, string][] = [
  [
    'Content-Security-Policy',
    "default-src 'none'; style-src 'self'; img-src 'self'; script-src 'none'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
  ],
  ['X-Content-Type-Options', 'nosniff'],
  ['Referrer-Policy', 'no-referrer'],
  ['X-Frame-Options', 'DENY'],
  ['Cross-Origin-Opener-Policy', 'same-origin'],
  ['Cross-Origin-Resource-Policy', 'same-origin'],
  // Pages show live rows and carry a CSRF token: never from a cache.
  ['Cache-Control', 'no-store'],
];

/** Sends `body` with the board's headers, through whichever HTTP adapter the app runs (Express or Fastify). */
export function sendBoardResponse(
  adapter: AbstractHttpAdapter,
  response: unknown,
  status: number,
  body: string,
  contentType = 'text/html; charset=utf-8',
): void {
  for (const [name, value] of SECURITY_HEADERS) adapter.setHeader(response, name, value);
  adapter.setHeader(response, 'Content-Type', contentType);
  adapter.reply(response, body, status);
}
