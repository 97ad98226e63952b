import { isWellFormed, toWellFormed } from '../message/message-text';

/**
 * Text every inbox dialect stores as given. PostgreSQL text cannot hold NUL at all, and a lone
 * surrogate has no UTF-8 encoding (the drivers write U+FFFD instead, so two different keys
 * would meet). The inbox holds every database to that common ground, so that what it accepts
 * does not depend on the database.
 */

/** Why `text` cannot be an identity (message id, type, business or ordering key), or undefined. */
export function unstorableReason(text: string): string | undefined {
  if (text.includes('\u0000')) return 'contains a NUL character (U+0000), which the inbox cannot store';
  if (!isWellFormed(text)) return 'is not well-formed Unicode (a lone surrogate), which the inbox cannot store';
  return undefined;
}

/** `text` with NUL characters and lone surrogates replaced by U+FFFD, for columns that are not an identity. */
export function storableText(text: string): string {
  // Fast path: received text almost never needs it.
  if (!text.includes('\u0000') && isWellFormed(text)) return text;
  return toWellFormed(text).replace(/\u0000/g, '\uFFFD');
}
