import { NonRetryableError, RetryLaterError } from '../../errors';
import { printable } from '../../message/printable';

/** How much of an error response's body `last_error` quotes. */
export const QUOTED_BODY_CHARACTERS = 200;

/** Statuses that say "not now" rather than "never": the attempt is retried with backoff. */
const RETRYABLE_CLIENT_STATUSES = new Set([408, 425, 429]);

/**
 * What an endpoint's answer means for the message: undefined when it was delivered (2xx), else the
 * error its attempt fails with. 408, 425, 429 and 5xx are retried, no sooner than a
 * `Retry-After` says; any other status (a redirect, which is not followed, or a 4xx) will not
 * change by retrying and goes to MANUAL_REQUIRED, with the status and the start of the body.
 */
export function responseOutcome(status: number, retryAfter: string | null, bodyStart: string, endpoint: string, now = Date.now()): Error | undefined {
  if (status >= 200 && status <= 299) return undefined;
  const quoted = bodyStart ? `: ${printable(bodyStart, QUOTED_BODY_CHARACTERS)}` : '';
  const description = `endpoint "${endpoint}" answered HTTP ${status}${quoted}`;
  if (status >= 500 || RETRYABLE_CLIENT_STATUSES.has(status)) {
    const waitMs = retryAfterMs(retryAfter, now);
    return waitMs === undefined ? new Error(description) : new RetryLaterError(`${description} (Retry-After: ${printable(retryAfter, 40)})`, waitMs);
  }
  const hint = status >= 300 && status <= 399 ? ' (redirects are not followed: configure the final URL)' : '';
  return new NonRetryableError(`${description}${hint}`);
}

/** A `Retry-After` value (delay-seconds or an HTTP date) as milliseconds from `now`, undefined when absent or unreadable. */
export function retryAfterMs(value: string | null, now: number): number | undefined {
  if (value === null) return undefined;
  const text = value.trim();
  if (/^\d{1,10}$/.test(text)) return Number(text) * 1_000;
  const at = parseHttpDate(text);
  return Number.isNaN(at) ? undefined : Math.max(0, at - now);
}

const DAY = '(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun)';
const MONTH = '(?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec)';
const TIME = '\\d{2}:\\d{2}:\\d{2}';
/** The three date forms HTTP defines (RFC 9110 5.6.7), all in GMT: IMF-fixdate, RFC 850, asctime. */
const HTTP_DATES = [
  new RegExp(`^${DAY}, \\d{2} ${MONTH} \\d{4} ${TIME} GMT$`),
  new RegExp(`^(?:Monday|Tuesday|Wednesday|Thursday|Friday|Saturday|Sunday), \\d{2}-${MONTH}-\\d{2} ${TIME} GMT$`),
  new RegExp(`^${DAY} ${MONTH} [ \\d]\\d ${TIME} \\d{4}$`),
];

/** An HTTP date as epoch milliseconds, NaN for any other text. */
function parseHttpDate(text: string): number {
  const form = HTTP_DATES.findIndex((pattern) => pattern.test(text));
  if (form === -1) return NaN;
  // asctime carries no zone; HTTP means GMT.
  return Date.parse(form === 2 ? `${text} GMT` : text);
}
