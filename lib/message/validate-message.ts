import { randomUUID } from 'node:crypto';
import { OutboxMessageInvalidError } from '../errors';
import { OutboxMessage } from './outbox-message';

/** The row values of a validated message, ready to insert. */
export interface NewOutboxRow {
  messageId: string;
  type: string;
  bizKey: string | null;
  orderingKey: string | null;
  exchange: string;
  routingKey: string;
  payload: string;
  headers: string;
  maxAttempts: number;
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const SHORT_TEXT_MAX = 255;

/**
 * Checks a message before anything touches the database, so a bad message fails the caller's
 * transaction with a clear error instead of becoming a poison row.
 */
export function toNewOutboxRow(message: OutboxMessage, defaultMaxAttempts: number): NewOutboxRow {
  if (message === null || typeof message !== 'object') throw new OutboxMessageInvalidError('message must be an object');
  const type = requiredText('type', message.type);
  const exchange = text('exchange', message.exchange, true);
  const routingKey = text('routingKey', message.routingKey, true);
  const bizKey = optionalText('bizKey', message.bizKey);
  const orderingKey = optionalText('orderingKey', message.orderingKey);
  const messageId = message.messageId ?? randomUUID();
  if (typeof messageId !== 'string' || !UUID.test(messageId)) {
    throw new OutboxMessageInvalidError(`messageId must be a UUID, got ${JSON.stringify(messageId)}`);
  }
  const maxAttempts = message.maxAttempts ?? defaultMaxAttempts;
  if (!Number.isInteger(maxAttempts) || maxAttempts < 1) {
    throw new OutboxMessageInvalidError('maxAttempts must be a positive integer');
  }
  if (message.headers !== undefined && (message.headers === null || typeof message.headers !== 'object' || Array.isArray(message.headers))) {
    throw new OutboxMessageInvalidError('headers must be an object');
  }
  return {
    messageId: messageId.toLowerCase(),
    type,
    bizKey,
    orderingKey,
    exchange,
    routingKey,
    payload: json('payload', message.payload),
    headers: json('headers', message.headers ?? {}),
    maxAttempts,
  };
}

function json(field: string, value: unknown): string {
  let serialised: string | undefined;
  try {
    serialised = JSON.stringify(value);
  } catch (error) {
    throw new OutboxMessageInvalidError(`${field} is not JSON-serialisable: ${(error as Error).message}`);
  }
  if (serialised === undefined) throw new OutboxMessageInvalidError(`${field} is not JSON-serialisable`);
  return serialised;
}

function text(field: string, value: unknown, allowEmpty: boolean): string {
  if (typeof value !== 'string' || (!allowEmpty && value.length === 0)) {
    throw new OutboxMessageInvalidError(`${field} must be a${allowEmpty ? '' : ' non-empty'} string`);
  }
  if (value.length > SHORT_TEXT_MAX) throw new OutboxMessageInvalidError(`${field} is longer than ${SHORT_TEXT_MAX} characters`);
  return value;
}

function requiredText(field: string, value: unknown): string {
  return text(field, value, false);
}

function optionalText(field: string, value: unknown): string | null {
  return value === undefined || value === null ? null : requiredText(field, value);
}
