import type { ConsumeMessage } from 'amqplib';
import { createHash, randomUUID } from 'node:crypto';
import { InboxRow } from '../dialects/inbox-dialect';
import { printable } from './printable';

const KEY_MAX = 255;

/**
 * The key a delivery's recording failures are counted under across its redeliveries: consumer
 * and AMQP `messageId`, or a hash of the body when it has none. Only computed on failure paths,
 * and on success paths while some delivery is being tracked.
 */
export function deliveryKey(consumer: string, message: ConsumeMessage): string {
  const messageId = message.properties?.messageId;
  const identity = typeof messageId === 'string' && messageId.length > 0 ? `id:${messageId}` : `body:${bodyHash(message)}`;
  return `${consumer}\n${identity}`;
}

/**
 * The forms to record a delivery in when its own row cannot be recorded, most complete first:
 * its row as identified, with a key of its own and every text made printable (escaped, cut to
 * the column); then without body and headers, should those be what the database refuses.
 * Whichever is stored is MANUAL_REQUIRED: `note` says what the row lacks.
 */
export function reducedForms(row: InboxRow, message: ConsumeMessage): { row: InboxRow; note: string }[] {
  const identity = `received as messageId "${printable(message.properties?.messageId)}", type "${printable(message.properties?.type)}"`;
  const reduced: InboxRow = {
    consumer: row.consumer,
    messageId: `unrecordable:${randomUUID()}`,
    type: printable(row.type, KEY_MAX).slice(0, KEY_MAX),
    bizKey: null,
    orderingKey: null,
    exchange: printable(message.fields?.exchange ?? '', KEY_MAX).slice(0, KEY_MAX),
    routingKey: printable(message.fields?.routingKey ?? '', KEY_MAX).slice(0, KEY_MAX),
    payload: row.payload,
    headers: row.headers,
    maxAttempts: row.maxAttempts,
  };
  const body = message.content ?? Buffer.alloc(0);
  return [
    { row: reduced, note: `recorded in a reduced form (${identity})` },
    {
      row: { ...reduced, payload: '', headers: '{}' },
      note: `recorded in a reduced form without its body (${body.length} bytes, sha256 ${bodyHash(message)}) and headers, which could not be stored either; the dead-lettered message has them (${identity})`,
    },
  ];
}

/** What an operator needs to find a delivery that the inbox could not record at all. */
export function describeDelivery(consumer: string, message: ConsumeMessage): string {
  const body = message.content ?? Buffer.alloc(0);
  return [
    `consumer "${printable(consumer)}"`,
    `messageId "${printable(message.properties?.messageId)}"`,
    `type "${printable(message.properties?.type)}"`,
    `exchange "${printable(message.fields?.exchange)}"`,
    `routing key "${printable(message.fields?.routingKey)}"`,
    `body ${body.length} bytes, sha256 ${bodyHash(message)}`,
  ].join(', ');
}

function bodyHash(message: ConsumeMessage): string {
  return createHash('sha256')
    .update(message.content ?? Buffer.alloc(0))
    .digest('hex');
}
