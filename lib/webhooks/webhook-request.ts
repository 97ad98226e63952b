import { isUtf8 } from 'node:buffer';

/**
 * A webhook request as the inbox keeps it: what `@WebhookInbox()` extractors see when it
 * arrives, and what the method sees (`@Req()`, `@Body()`, `@RawBody()`, `@Headers()`) when it
 * runs later, rebuilt from the stored row.
 */
export interface WebhookRequest {
  /** The HTTP method, e.g. `POST`. */
  method: string;
  /** The path the request was sent to, without the query string. */
  url: string;
  /** Header names in lower case; when the request arrives all of them, when it runs the kept ones. */
  headers: Record<string, string>;
  /** The body parsed as its content type says: JSON, a form as an object of strings, or text. */
  body: unknown;
  /** The body as received. */
  rawBody: Buffer;
}

/** Why a body cannot be taken, or its parsed value. */
export type ParsedBody = { ok: true; body: unknown } | { ok: false; reason: string };

/**
 * Parses a webhook body as its content type says. The inbox stores bodies as text, so only UTF-8
 * without NUL characters is taken: that is every JSON, form and text body there is.
 */
export function parseWebhookBody(rawBody: Buffer, contentType: string | undefined): ParsedBody {
  if (!isUtf8(rawBody) || rawBody.includes(0)) return { ok: false, reason: 'the body is not UTF-8 text without NUL characters' };
  const text = rawBody.toString('utf8');
  const mediaType = (contentType ?? '').split(';')[0].trim().toLowerCase();
  if (mediaType === 'application/json' || mediaType.endsWith('+json')) {
    try {
      return { ok: true, body: JSON.parse(text) };
    } catch (error) {
      return { ok: false, reason: `the body is not valid JSON (${(error as Error).message})` };
    }
  }
  if (mediaType === 'application/x-www-form-urlencoded') return { ok: true, body: Object.fromEntries(new URLSearchParams(text)) };
  return { ok: true, body: text };
}

/** Request headers as one string each, names in lower case; a repeated header's values joined as HTTP joins them. */
export function flatHeaders(headers: Record<string, string | string[] | undefined>): Record<string, string> {
  const flat: Record<string, string> = {};
  for (const [name, value] of Object.entries(headers)) {
    if (value === undefined) continue;
    flat[name.toLowerCase()] = Array.isArray(value) ? value.join(', ') : String(value);
  }
  return flat;
}
