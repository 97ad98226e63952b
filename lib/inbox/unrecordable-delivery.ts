import type { ConsumeMessage } from 'amqplib';
import { createHash, randomUUID } from 'node:crypto';
import { InboxRow } from '../dialects/inbox-dialect';
import { printable } from '../message/printable';

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
 * the column); then without body and headers, should those be what the database refuses; then,
 * for a delivery with an ordering key, without that key too. Whichever is stored is
 * MANUAL_REQUIRED: `note` says what the row lacks.
 *
 * The ordering key is kept while the database takes it (identification let only storable keys
 * through): a MANUAL_REQUIRED row of the key parks it, so later deliveries of the key wait for an
 * operator instead of running ahead of this one.
 */
export function reducedForms(row: InboxRow, message: ConsumeMessage): { row: InboxRow; note: string }[] {
  const identity = `received as messageId "${printable(message.properties?.messageId)}", type "${printable(message.properties?.type)}"`;
  const reduced: InboxRow = {
    consumer: row.consumer,
    messageId: `unrecordable:${randomUUID()}`,
    type: printable(row.type, KEY_MAX).slice(0, KEY_MAX),
    bizKey: null,
    orderingKey: row.orderingKey,
    exchange: printable(message.fields?.exchange ?? '', KEY_MAX).slice(0, KEY_MAX),
    routingKey: printable(message.fields?.routingKey ?? '', KEY_MAX).slice(0, KEY_MAX),
    payload: row.payload,
    headers: row.headers,
    maxAttempts: row.maxAttempts,
  };
  const body = message.content ?? Buffer.alloc(0);
  const withoutBody = `without its body (${body.length} bytes, sha256 ${bodyHash(message)}) and headers, which could not be stored either; the dead-lettered message has them`;
  const forms = [
    { row: reduced, note: `recorded in a reduced form (${identity})` },
    { row: { ...reduced, payload: '', headers: '{}' }, note: `recorded in a reduced form ${withoutBody} (${identity})` },
  ];
  if (row.orderingKey === null) return forms;
  return [
    ...forms,
    {
      row: { ...reduced, payload: '', headers: '{}', orderingKey: null },
      note: `recorded in a reduced form ${withoutBody}, and without its ordering key "${printable(row.orderingKey)}", which could not be stored either: later messages of that key are not held back behind it (${identity})`,
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
