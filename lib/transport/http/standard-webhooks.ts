import { createHmac, timingSafeEqual } from 'node:crypto';
import { WebhookOptionsError } from '../../errors/options.errors';

/** The headers of a Standard Webhooks request (https://www.standardwebhooks.com/). */
export const WEBHOOK_HEADERS = { id: 'webhook-id', timestamp: 'webhook-timestamp', signature: 'webhook-signature' } as const;

/** How far a timestamp may lie from the receiver's clock, either way: the spec's 5 minutes against replays. */
export const DEFAULT_WEBHOOK_TOLERANCE_SECONDS = 5 * 60;

/** Signing secrets as the spec serializes them, `whsec_` then the base64 key (the prefix may be left off); several while one is rotated out. */
export type WebhookSecrets = string | readonly string[];

/** The body exactly as sent: its bytes, or the string those bytes encode in UTF-8. Never a parsed and re-serialized object. */
export type WebhookBody = Buffer | Uint8Array | string;

/** Request headers as Node gives them (a header may come as an array), looked up case-insensitively. */
export type WebhookHeaders = Readonly<Record<string, string | readonly string[] | undefined>>;

/** Why a request was refused. None of them says which secret or signature came close. */
export type WebhookRejection = 'missing-headers' | 'malformed' | 'expired' | 'future' | 'no-matching-signature';

/** The outcome of `verifyWebhook`: the authenticated id (an idempotency key) and timestamp, or why not. */
export type WebhookVerification =
  | {
      /** The request is authentic. */
      ok: true;
      /** The authenticated `webhook-id`: the same for every retry of one event. */
      id: string;
      /** The authenticated `webhook-timestamp`, in seconds since the epoch. */
      timestamp: number;
    }
  | {
      /** The request was refused. */
      ok: false;
      /** Why it was refused. */
      reason: WebhookRejection;
    };

/** What {@link signWebhook} signs, and with which secret. */
export interface SignWebhookInput {
  /** The `webhook-id`: the same for every retry of one event. Visible ASCII without `.`. */
  id: string;
  /** The `webhook-timestamp` of this attempt, in whole seconds since the epoch. */
  timestamp: number;
  /** The body exactly as it will be sent. */
  body: WebhookBody;
  /** The signing secret, `whsec_` then the base64 key (the prefix may be left off). */
  secret: string;
}

/** A received request, as {@link verifyWebhook} checks it, and the secrets that may have signed it. */
export interface VerifyWebhookInput {
  /** The request's headers; `webhook-id`, `webhook-timestamp` and `webhook-signature` are read. */
  headers: WebhookHeaders;
  /** The body exactly as received (the raw body, not a parsed object). */
  body: WebhookBody;
  /** Any of them may have signed the request. */
  secrets: WebhookSecrets;
  /** Defaults to `DEFAULT_WEBHOOK_TOLERANCE_SECONDS`. */
  toleranceSeconds?: number;
  /** The receiver's clock, for tests; defaults to the current time. */
  now?: Date;
}

const SECRET_PREFIX = 'whsec_';
/** Standard base64, padded or not (as the reference libraries accept secrets). */
const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}(?:==)?|[A-Za-z0-9+/]{3}=?)?$/;
/** Whole seconds as one canonical decimal, so the signed text is the header's text; 12 digits outlast any clock. */
const TIMESTAMP = /^(?:0|[1-9][0-9]{0,11})$/;
/**
 * Visible ASCII without `.`: the full stop delimits `id.timestamp.body`, and an id holding one lets
 * the same signed text be split differently. ASCII keeps the header's bytes and the signed bytes one.
 */
const ID = /^[\x21-\x2d\x2f-\x7e]+$/;
/** The inbox's message id column holds 255 characters: a longer id would pass here and be refused there. */
const MAX_ID_LENGTH = 255;
/** Room for dozens of signatures; it bounds the work one request can cause (one HMAC per secret, whatever the header). */
const MAX_SIGNATURE_HEADER_LENGTH = 4096;

/**
 * The `webhook-signature` value for one attempt: `v1,` and the base64 HMAC-SHA256, under the
 * secret's key, of `${id}.${timestamp}.${body}`. Throws `WebhookOptionsError` for an unusable
 * secret, id, timestamp or body: these are the sender's mistakes, not the network's.
 */
export function signWebhook(input: SignWebhookInput): string {
  const key = decodeSecret(input.secret, 'secret');
  const { id, timestamp, body } = input;
  const problems = typeof key === 'string' ? [key] : [];
  if (typeof id !== 'string' || id.length > MAX_ID_LENGTH || !ID.test(id)) {
    problems.push(`id must be 1 to ${MAX_ID_LENGTH} visible ASCII characters other than "."`);
  }
  if (!Number.isSafeInteger(timestamp) || !TIMESTAMP.test(String(timestamp))) {
    problems.push(`timestamp must be whole seconds since the epoch (got ${String(timestamp)})`);
  }
  problems.push(...bodyProblems(body));
  if (problems.length > 0 || typeof key === 'string') throw new WebhookOptionsError(problems);
  return `v1,${hmac(key, id, String(timestamp), body).toString('base64')}`;
}

/**
 * Checks a received request: its three headers are present and well formed, its timestamp lies
 * within the tolerance of `now` either way, and one of its `v1` signatures was made by one of the
 * secrets over these exact body bytes. Compares in constant time. Never throws on what the request
 * holds; throws `WebhookOptionsError` only for bad secrets, tolerance or body type (the caller's).
 */
export function verifyWebhook(input: VerifyWebhookInput): WebhookVerification {
  const { keys, problems } = decodeSecrets(input.secrets, 'secrets');
  const tolerance = input.toleranceSeconds ?? DEFAULT_WEBHOOK_TOLERANCE_SECONDS;
  problems.push(...webhookToleranceProblems(tolerance), ...bodyProblems(input.body));
  if (input.now !== undefined && !(input.now instanceof Date && Number.isFinite(input.now.getTime()))) problems.push('now must be a valid Date');
  if (problems.length > 0) throw new WebhookOptionsError(problems);

  const headers = typeof input.headers === 'object' && input.headers !== null ? input.headers : {};
  const [id, timestamp, signature] = [WEBHOOK_HEADERS.id, WEBHOOK_HEADERS.timestamp, WEBHOOK_HEADERS.signature].map((name) => header(headers, name));
  if (id === null || timestamp === null || signature === null) return rejected('malformed');
  if (!id || !timestamp || !signature) return rejected('missing-headers');
  if (id.length > MAX_ID_LENGTH || !ID.test(id) || !TIMESTAMP.test(timestamp) || signature.length > MAX_SIGNATURE_HEADER_LENGTH) {
    return rejected('malformed');
  }

  const sentAt = Number(timestamp);
  const now = Math.floor((input.now ?? new Date()).getTime() / 1000);
  if (now - sentAt > tolerance) return rejected('expired');
  if (sentAt - now > tolerance) return rejected('future');

  const expected = keys.map((key) => hmac(key, id, timestamp, input.body));
  for (const entry of signature.split(' ')) {
    // Other versions (v1a, future ones) are for other verifiers: skipped, as the spec asks.
    if (!entry.startsWith('v1,') || !BASE64.test(entry.slice(3))) continue;
    const candidate = Buffer.from(entry.slice(3), 'base64');
    if (expected.some((mac) => mac.length === candidate.length && timingSafeEqual(mac, candidate))) {
      return { ok: true, id, timestamp: sentAt };
    }
  }
  return rejected('no-matching-signature');
}

function hmac(key: Buffer, id: string, timestamp: string, body: WebhookBody): Buffer {
  return createHmac('sha256', key).update(`${id}.${timestamp}.`).update(body).digest();
}

function rejected(reason: WebhookRejection): WebhookVerification {
  return { ok: false, reason };
}

/** The header's one value; `null` when it is repeated with different values, which no honest sender does. */
function header(headers: WebhookHeaders, name: string): string | undefined | null {
  let found: string | undefined;
  for (const key of Object.keys(headers)) {
    if (key.length !== name.length || key.toLowerCase() !== name) continue;
    const raw: unknown = headers[key];
    for (const value of Array.isArray(raw) ? raw : [raw]) {
      if (value === undefined) continue;
      if (typeof value !== 'string' || (found !== undefined && value !== found)) return null;
      found = value;
    }
  }
  return found;
}

/** What makes these secrets unusable, naming each (`secrets[1]`) and never quoting one. */
export function webhookSecretsProblems(secrets: unknown): string[] {
  return decodeSecrets(secrets, 'secrets').problems;
}

function decodeSecrets(secrets: unknown, option: string): { keys: Buffer[]; problems: string[] } {
  const list: unknown[] = typeof secrets === 'string' ? [secrets] : Array.isArray(secrets) ? secrets : [];
  if (list.length === 0) return { keys: [], problems: [`${option} must be a "whsec_…" secret or a non-empty list of them`] };
  const decoded = list.map((secret, i) => decodeSecret(secret, typeof secrets === 'string' ? option : `${option}[${i}]`));
  return {
    keys: decoded.filter((key): key is Buffer => typeof key !== 'string'),
    problems: decoded.filter((key): key is string => typeof key === 'string'),
  };
}

/** The key bytes, or the problem with the secret (which it never quotes). */
function decodeSecret(secret: unknown, name: string): Buffer | string {
  if (typeof secret !== 'string') return `${name} must be a string: "whsec_" followed by base64`;
  if (/^wh(?:sk|pk)_/.test(secret)) return `${name} is an asymmetric (v1a) key; only symmetric "whsec_" secrets (v1) are supported`;
  const encoded = secret.startsWith(SECRET_PREFIX) ? secret.slice(SECRET_PREFIX.length) : secret;
  if (encoded === '') return `${name} is empty`;
  if (!BASE64.test(encoded)) return `${name} is not base64 after its optional "whsec_" prefix (check for stray spaces or quotes)`;
  return Buffer.from(encoded, 'base64');
}

/** What makes this tolerance unusable: it must be a positive, finite number of seconds. */
export function webhookToleranceProblems(toleranceSeconds: unknown): string[] {
  const valid = typeof toleranceSeconds === 'number' && Number.isFinite(toleranceSeconds) && toleranceSeconds > 0;
  return valid ? [] : [`toleranceSeconds must be a positive number of seconds (got ${String(toleranceSeconds)})`];
}

function bodyProblems(body: unknown): string[] {
  return typeof body === 'string' || body instanceof Uint8Array ? [] : ['body must be the bytes as sent (a Buffer or string), not a parsed object'];
}
