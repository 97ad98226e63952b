import { randomUUID } from 'node:crypto';
import { OutboxMessageInvalidError } from '../errors';
import { encodedHeadersSize } from './amqp-header-table';
import { MAX_ATTEMPTS_LIMIT } from './message-limits';
import { columnText, refuseLineBreaks, shortStringText } from './message-text';
import { OutboxMessage } from './outbox-message';

/** The row values of a validated message, ready to insert. */
export interface NewOutboxRow {
  messageId: string;
  type: string;
  bizKey: string | null;
  orderingKey: string | null;
  transport: string;
  exchange: string;
  routingKey: string;
  destination: string;
  payload: string;
  headers: string;
  maxAttempts: number;
  /** Not sent before now + this, by the database's clock. */
  delayMs: number;
  /** Not sent before this instant (ISO 8601, UTC), by the database's clock; null when not given. */
  availableAt: string | null;
}

/** The longest `delayMs`: a year. A message meant for later than that belongs in a scheduler. */
export const MAX_DELAY_MS = 365 * 24 * 3_600_000;

/** The module options a message is checked against. */
export interface MessageLimits {
  /** The module's `maxAttempts`. */
  maxAttempts: number;
  /** The module's `maxPayloadBytes`. */
  maxPayloadBytes: number;
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const NO_HEADERS = '{}';

/**
 * Checks a message before anything touches the database, so a bad message fails the caller's
 * transaction with a clear error instead of becoming a poison row: everything is measured as the
 * columns of every supported database and amqplib's AMQP encoding measure it (see
 * `message-limits.ts`). The cheap checks come first, the payload last: it is serialised once and
 * its text is what gets stored.
 * @throws OutboxMessageInvalidError naming the field at fault
 */
export function toNewOutboxRow(message: OutboxMessage, transport: string, limits: MessageLimits): NewOutboxRow {
  assertMessageObject(message);
  const type = shortStringText('type', message.type, false);
  const exchange = shortStringText('exchange', message.exchange ?? '', true);
  const routingKey = shortStringText('routingKey', message.routingKey ?? '', true);
  if (exchange === '') refuseLineBreaks('routingKey', routingKey, 'queue');
  else refuseLineBreaks('exchange', exchange, 'exchange');
  const destination = shortStringText('destination', message.destination ?? '', true);
  const bizKey = optionalColumnText('bizKey', message.bizKey);
  const orderingKey = optionalColumnText('orderingKey', message.orderingKey);
  const messageId = message.messageId ?? randomUUID();
  if (typeof messageId !== 'string' || !UUID.test(messageId)) {
    throw new OutboxMessageInvalidError(`messageId must be a UUID, got ${describe(messageId)}`, 'messageId');
  }
  const maxAttempts = message.maxAttempts ?? limits.maxAttempts;
  if (!Number.isInteger(maxAttempts) || maxAttempts < 1 || maxAttempts > MAX_ATTEMPTS_LIMIT) {
    throw new OutboxMessageInvalidError(`maxAttempts must be an integer from 1 to ${MAX_ATTEMPTS_LIMIT}, got ${describe(maxAttempts)}`, 'maxAttempts');
  }
  const { delayMs, availableAt } = availability(message);
  // A flat literal: V8 adds properties that follow a spread one by one, the slow way.
  return {
    messageId: messageId.toLowerCase(),
    type,
    bizKey,
    orderingKey,
    transport,
    exchange,
    routingKey,
    destination,
    delayMs,
    availableAt,
    headers: headersJson(message.headers),
    payload: payloadJson(message.payload, limits.maxPayloadBytes),
    maxAttempts,
  };
}

/** The message must be an object: checked before anything reads its fields (`route()` included). */
export function assertMessageObject(message: unknown): asserts message is OutboxMessage {
  if (message === null || typeof message !== 'object') throw new OutboxMessageInvalidError('message must be an object');
}

/** When the message may first be sent: `delayMs` from now, or `availableAt`, or now. */
function availability(message: OutboxMessage): Pick<NewOutboxRow, 'delayMs' | 'availableAt'> {
  const { delayMs, availableAt } = message;
  if (delayMs !== undefined && availableAt !== undefined) {
    throw new OutboxMessageInvalidError('give delayMs or availableAt, not both', 'delayMs');
  }
  if (delayMs !== undefined && !(Number.isInteger(delayMs) && delayMs >= 0 && delayMs <= MAX_DELAY_MS)) {
    throw new OutboxMessageInvalidError(`delayMs must be an integer from 0 to ${MAX_DELAY_MS} (a year), got ${describe(delayMs)}`, 'delayMs');
  }
  if (availableAt !== undefined) {
    const time = availableAt instanceof Date ? availableAt.getTime() : NaN;
    // Year 9999 at most: every database's time column holds it.
    if (!(Number.isFinite(time) && time <= MAX_AVAILABLE_AT)) {
      throw new OutboxMessageInvalidError(
        `availableAt must be a valid Date before the year 10000, got ${availableAt instanceof Date ? 'an invalid Date' : describe(availableAt)}`,
        'availableAt',
      );
    }
    return { delayMs: 0, availableAt: new Date(Math.max(time, 0)).toISOString() };
  }
  return { delayMs: delayMs ?? 0, availableAt: null };
}

const MAX_AVAILABLE_AT = Date.UTC(9999, 11, 31, 23, 59, 59, 999);

function optionalColumnText(field: string, value: unknown): string | null {
  return value === undefined || value === null ? null : columnText(field, value);
}

/** Stored as JSON and sent as that JSON parsed back: what is checked is what will be sent. */
function headersJson(headers: unknown): string {
  if (headers === undefined) return NO_HEADERS;
  if (headers === null || typeof headers !== 'object' || Array.isArray(headers)) {
    throw new OutboxMessageInvalidError('headers must be an object', 'headers');
  }
  const json = serialised('headers', headers);
  if (json === NO_HEADERS) return json;
  const sent: unknown = JSON.parse(json);
  if (sent === null || typeof sent !== 'object' || Array.isArray(sent)) {
    throw new OutboxMessageInvalidError(`headers must serialise to a JSON object, not ${describe(json)}`, 'headers');
  }
  encodedHeadersSize(sent);
  return json;
}

/**
 * The payload is sent as the stored JSON text, byte for byte. JSON escapes NUL and lone
 * surrogates, so any string travels; only the size can be too large.
 */
function payloadJson(payload: unknown, maxBytes: number): string {
  const json = serialised('payload', payload);
  // A UTF-16 code unit is at most 3 bytes of UTF-8: most payloads need no count.
  if (json.length * 3 > maxBytes) {
    const bytes = Buffer.byteLength(json);
    if (bytes > maxBytes) {
      throw new OutboxMessageInvalidError(
        `payload is ${bytes} bytes of JSON in UTF-8, more than maxPayloadBytes (${maxBytes}); store large content elsewhere and send a reference`,
        'payload',
      );
    }
  }
  return json;
}

function serialised(field: 'payload' | 'headers', value: unknown): string {
  let json: string | undefined;
  try {
    json = JSON.stringify(value);
  } catch (error) {
    const reason = error instanceof RangeError && /call stack/i.test(error.message) ? 'is nested too deeply to serialise as JSON' : 'is not JSON-serialisable';
    throw new OutboxMessageInvalidError(`${field} ${reason}: ${error instanceof Error ? error.message : String(error)}`, field);
  }
  if (json === undefined) throw new OutboxMessageInvalidError(`${field} is not JSON-serialisable`, field);
  return json;
}

/** A value quoted in an error message: short, and printable whatever it holds. */
function describe(value: unknown): string {
  if (typeof value === 'string') return JSON.stringify(value.length > 60 ? `${value.slice(0, 60)}…` : value);
  if (typeof value === 'number' || typeof value === 'boolean' || typeof value === 'bigint') return String(value);
  return value === null ? 'null' : `a ${typeof value}`;
}
