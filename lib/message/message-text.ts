import { OutboxMessageInvalidError } from '../errors';
import { AMQP_SHORT_STRING_MAX_BYTES, TEXT_COLUMN_MAX_CHARACTERS } from './message-limits';

const LINE_BREAK = /[\r\n]/;

/** In unicode mode a surrogate pair is one code point, so only an unpaired half matches. */
const LONE_SURROGATE = /\p{Cs}/u;

/** The longest text whose UTF-8 form surely fits a short string: a UTF-16 code unit is at most 3 bytes of UTF-8. */
const SURELY_SHORT = Math.floor(AMQP_SHORT_STRING_MAX_BYTES / 3);

/**
 * Why `text` would not arrive as given: a lone surrogate has no UTF-8 form, so the drivers and
 * amqplib write U+FFFD in its place. Undefined when it would.
 */
export function malformedTextReason(text: string): string | undefined {
  if (isWellFormed(text)) return undefined;
  const at = text.search(LONE_SURROGATE);
  return `contains a lone surrogate (${codeUnit(text, at)} at index ${at}), which has no UTF-8 form and would be stored and sent as U+FFFD; fix the text's encoding`;
}

/**
 * Text sent as an AMQP short string (exchange, routing key, `type`) and stored in a varchar(255)
 * column: its UTF-8 bytes must fit the short string, which also keeps it within the column.
 */
export function shortStringText(field: string, value: unknown, allowEmpty: boolean): string {
  const text = storableText(field, value, allowEmpty);
  if (text.length > SURELY_SHORT) {
    const bytes = Buffer.byteLength(text);
    if (bytes > AMQP_SHORT_STRING_MAX_BYTES) {
      throw new OutboxMessageInvalidError(`${field} is ${bytes} bytes in UTF-8, more than AMQP's ${AMQP_SHORT_STRING_MAX_BYTES}-byte short string`, field);
    }
  }
  return text;
}

/**
 * Refuses CR and LF in a name the broker must find (an exchange; a queue, named by the routing key
 * of a publication to the default exchange): RabbitMQ removes them from the names of the exchanges
 * and queues it declares, but not from those a publication names, so no such exchange or queue can
 * exist and every attempt would fail.
 */
export function refuseLineBreaks(field: string, name: string, names: 'exchange' | 'queue'): void {
  const at = name.search(LINE_BREAK);
  if (at === -1) return;
  throw new OutboxMessageInvalidError(
    `${field} contains a line break (${codeUnit(name, at)} at index ${at}): RabbitMQ removes CR and LF from the names of the ${names}s it declares, so no ${names} of this name can exist; remove it`,
    field,
  );
}

/** Text stored in a varchar(255) column only (business and ordering keys): counted in code points, as the databases count. */
export function columnText(field: string, value: unknown): string {
  const text = storableText(field, value, false);
  if (text.length > TEXT_COLUMN_MAX_CHARACTERS) {
    const characters = codePoints(text);
    if (characters > TEXT_COLUMN_MAX_CHARACTERS) {
      throw new OutboxMessageInvalidError(`${field} is ${characters} characters, more than its ${TEXT_COLUMN_MAX_CHARACTERS}-character column`, field);
    }
  }
  return text;
}

/**
 * A string every database stores as given. NUL is refused everywhere, not only where PostgreSQL
 * rejects it, so that a message valid on one database stays valid after moving to another.
 */
function storableText(field: string, value: unknown, allowEmpty: boolean): string {
  if (typeof value !== 'string' || (!allowEmpty && value.length === 0)) {
    throw new OutboxMessageInvalidError(`${field} must be a${allowEmpty ? '' : ' non-empty'} string`, field);
  }
  const nul = value.indexOf('\u0000');
  if (nul !== -1) {
    throw new OutboxMessageInvalidError(
      `${field} contains a NUL character (U+0000) at index ${nul}, which PostgreSQL cannot store in a text column (refused on every database); remove it`,
      field,
    );
  }
  const malformed = malformedTextReason(value);
  if (malformed) throw new OutboxMessageInvalidError(`${field} ${malformed}`, field);
  return value;
}

function codePoints(text: string): number {
  let count = 0;
  for (let i = 0; i < text.length; i++) {
    const unit = text.charCodeAt(i);
    // The high half of a pair counts for both (text is well-formed here).
    if (unit < 0xdc00 || unit > 0xdfff) count++;
  }
  return count;
}

function codeUnit(text: string, at: number): string {
  return `U+${text.charCodeAt(at).toString(16).toUpperCase().padStart(4, '0')}`;
}

/**
 * `String.prototype.isWellFormed` and `toWellFormed` (ES2024, in every Node the library supports),
 * not yet in the compiler's ES2022 library. A string is well-formed when it has no lone surrogate
 * (an unpaired half of \uD800–\uDFFF), which has no UTF-8 form: the drivers and amqplib write
 * U+FFFD in its place.
 */
type WellFormed = { isWellFormed(): boolean; toWellFormed(): string };

/** Whether `text` has no lone surrogate. */
export function isWellFormed(text: string): boolean {
  return (text as unknown as WellFormed).isWellFormed();
}

/** `text` with every lone surrogate replaced by U+FFFD. */
export function toWellFormed(text: string): string {
  return (text as unknown as WellFormed).toWellFormed();
}
