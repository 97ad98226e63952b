/** Longest untrusted text a log line quotes; the rest is cut and counted. */
const MAX_QUOTED = 300;

/**
 * Characters that would let text from the wire forge or hide log lines: C0 and C1 controls
 * (line breaks, escape sequences, NUL), DEL, the Unicode line and paragraph separators, bidi
 * overrides and isolates, and lone surrogates.
 */
const UNSAFE = /[\u0000-\u001f\u007f-\u009f\u2028\u2029\u202a-\u202e\u2066-\u2069]|[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g;

/**
 * Text from a delivery (message id, type, routing key, header names) made safe to put in a log
 * line or a `last_error`: unsafe characters become `\uXXXX` escapes (a backslash becomes `\\`, so
 * an escape in the original cannot pass for one of ours), and long text is cut.
 */
export function printable(text: unknown, maxLength = MAX_QUOTED): string {
  if (text === undefined || text === null) return String(text);
  const raw = typeof text === 'string' ? text : String(text);
  const cut = raw.length > maxLength ? raw.slice(0, maxLength) : raw;
  const escaped = cut.replace(/\\/g, '\\\\').replace(UNSAFE, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
  return cut === raw ? escaped : `${escaped}…(${raw.length - maxLength} more characters)`;
}
