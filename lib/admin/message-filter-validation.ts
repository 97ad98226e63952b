import { MessageFilter } from '../engine/state-table';
import { OutboxAdminFilterError } from '../errors';
import { AMQP_SHORT_STRING_MAX_BYTES, TEXT_COLUMN_MAX_CHARACTERS } from '../message/message-limits';
import { MessageStatus } from '../message/message-status';
import { malformedTextReason } from '../message/message-text';
import { isTransportName, TRANSPORT_NAME_RULE } from '../options/transport-lanes';

/** Which table a filter selects from: each has one field of its own. */
export type FilteredTable = 'outbox' | 'inbox';

/** Characters of the inbox's `consumer` column. */
const CONSUMER_MAX_CHARACTERS = 200;
/** The most `last_error` ever keeps (the highest `lastErrorMaxLength`): a longer text is no row's. */
const ERROR_TEXT_MAX_CHARACTERS = 10_000;
/** The years every database's time columns hold (MySQL's DATETIME: 1000 to 9999). */
const FIRST_YEAR = 1000;
const LAST_YEAR = 9999;

const COMMON_FIELDS = ['status', 'type', 'bizKey', 'errorContains', 'createdAfter', 'createdBefore'];
const OWN_FIELD: Record<FilteredTable, 'transport' | 'consumer'> = { outbox: 'transport', inbox: 'consumer' };
const STATUSES = Object.values(MessageStatus) as string[];

/**
 * An operator's filter, checked field by field as `publish()` checks a message, in the form the
 * state tables take. A field it does not know is refused rather than ignored: a misspelt field
 * would otherwise widen the filter, and with it a requeue or a purge.
 */
export function checkedFilter(table: FilteredTable, input: unknown): MessageFilter {
  const known = [...COMMON_FIELDS, OWN_FIELD[table]];
  if (input === null || typeof input !== 'object' || Array.isArray(input) || input instanceof Date) {
    throw new OutboxAdminFilterError(`the filter must be an object of fields (${known.join(', ')}), got ${shownValue(input)}`);
  }
  const fields = input as Record<string, unknown>;
  const other: FilteredTable = table === 'outbox' ? 'inbox' : 'outbox';
  for (const field of Object.keys(fields)) {
    if (!known.includes(field)) {
      const elsewhere = field === OWN_FIELD[other] ? `; it filters the ${other}` : '';
      throw new OutboxAdminFilterError(`unknown field ${JSON.stringify(field)}${elsewhere}; a ${table} filter has ${known.join(', ')}`, field);
    }
  }
  const filter: MessageFilter = {};
  if (fields.status !== undefined) filter.statuses = statuses(fields.status);
  if (fields.type !== undefined) {
    filter.type = table === 'outbox' ? text('type', fields.type, { maxBytes: AMQP_SHORT_STRING_MAX_BYTES }) : text('type', fields.type, { allowEmpty: true });
  }
  if (fields.bizKey !== undefined) filter.bizKey = text('bizKey', fields.bizKey, {});
  if (fields.errorContains !== undefined) filter.errorContains = text('errorContains', fields.errorContains, { maxCharacters: ERROR_TEXT_MAX_CHARACTERS });
  if (table === 'outbox' && fields.transport !== undefined) {
    if (!isTransportName(fields.transport))
      throw new OutboxAdminFilterError(`transport must be a transport name (${TRANSPORT_NAME_RULE}), got ${shownValue(fields.transport)}`, 'transport');
    filter.transport = fields.transport;
  }
  if (table === 'inbox' && fields.consumer !== undefined) filter.consumer = text('consumer', fields.consumer, { maxCharacters: CONSUMER_MAX_CHARACTERS });
  if (fields.createdAfter !== undefined) filter.createdAfter = instant('createdAfter', fields.createdAfter);
  if (fields.createdBefore !== undefined) filter.createdBefore = instant('createdBefore', fields.createdBefore);
  if (filter.createdAfter && filter.createdBefore && filter.createdAfter >= filter.createdBefore) {
    throw new OutboxAdminFilterError(
      `createdAfter (${filter.createdAfter.toISOString()}) must be earlier than createdBefore (${filter.createdBefore.toISOString()}): no row is created in between`,
      'createdAfter',
    );
  }
  return filter;
}

function statuses(value: unknown): MessageStatus[] {
  const list = Array.isArray(value) ? value : [value];
  if (list.length === 0) throw new OutboxAdminFilterError('status must name at least one status; leave it out to match every status', 'status');
  for (const status of list) {
    if (typeof status !== 'string' || !STATUSES.includes(status)) {
      throw new OutboxAdminFilterError(`status must be a MessageStatus (${STATUSES.join(', ')}) or an array of them, got ${shownValue(status)}`, 'status');
    }
  }
  return [...new Set(list as MessageStatus[])];
}

interface TextLimits {
  allowEmpty?: boolean;
  /** Bytes of UTF-8 (an AMQP short string); otherwise `maxCharacters`. */
  maxBytes?: number;
  /** Code points, as the databases count a column's characters. Default: a key column's 255. */
  maxCharacters?: number;
}

/** Text that can be in a column: no NUL, no lone surrogate, not longer than the column. */
function text(field: string, value: unknown, limits: TextLimits): string {
  if (typeof value !== 'string' || (!limits.allowEmpty && value.length === 0)) {
    throw new OutboxAdminFilterError(`${field} must be a${limits.allowEmpty ? '' : ' non-empty'} string, got ${shownValue(value)}`, field);
  }
  const nul = value.indexOf('\u0000');
  if (nul !== -1) throw new OutboxAdminFilterError(`${field} contains a NUL character (U+0000) at index ${nul}, which no stored text has`, field);
  const malformed = malformedTextReason(value);
  if (malformed) throw new OutboxAdminFilterError(`${field} ${malformed}`, field);
  if (limits.maxBytes !== undefined) {
    const bytes = Buffer.byteLength(value);
    if (bytes > limits.maxBytes)
      throw new OutboxAdminFilterError(`${field} is ${bytes} bytes in UTF-8, more than any stored ${field} (${limits.maxBytes})`, field);
    return value;
  }
  const max = limits.maxCharacters ?? TEXT_COLUMN_MAX_CHARACTERS;
  const characters = [...value].length;
  if (characters > max) throw new OutboxAdminFilterError(`${field} is ${characters} characters, more than any stored ${field} (${max})`, field);
  return value;
}

function instant(field: string, value: unknown): Date {
  if (!(value instanceof Date) || Number.isNaN(value.getTime()))
    throw new OutboxAdminFilterError(`${field} must be a valid Date, got ${shownValue(value)}`, field);
  const year = value.getUTCFullYear();
  if (year < FIRST_YEAR || year > LAST_YEAR) {
    throw new OutboxAdminFilterError(
      `${field} must fall in the years ${FIRST_YEAR} to ${LAST_YEAR} (UTC), which every database stores; got ${value.toISOString()}`,
      field,
    );
  }
  return value;
}

/** A value for an error message: short, and never the whole of a long text. */
export function shownValue(value: unknown): string {
  if (value instanceof Date) return Number.isNaN(value.getTime()) ? 'an invalid Date' : value.toISOString();
  if (typeof value === 'string') return value.length > 40 ? `a ${value.length}-character string` : JSON.stringify(value);
  if (value === null || typeof value !== 'object') return String(value);
  return Array.isArray(value) ? 'an array' : 'an object';
}
