import type { ConsumeMessage } from 'amqplib';
import { createHash, randomUUID } from 'node:crypto';
import { isUtf8 } from 'node:buffer';
import { InboxRow } from '../dialects/inbox-dialect';
import { InboxHandlerDefinition } from './inbox-handler-options';
import { MalformedBody } from './malformed-body';
import { describeError } from '../retry/error-classifier';
import { printable } from '../message/printable';
import { storableText, unstorableReason } from './storable-text';

const KEY_MAX = 255;

/** A delivery as the inbox stores it, or why it cannot be processed (it is stored all the same). */
export interface IdentifiedDelivery {
  row: InboxRow;
  /** Set when the delivery can never be processed: it goes to MANUAL_REQUIRED at once. */
  rejection?: string;
}

/**
 * Decides the dedupe identity of a delivery: the AMQP `messageId`, plus the handler's `bizKey`;
 * a content hash only where the handler opted in. Rejects what cannot be processed safely
 * (malformed body, no identity, identity text the inbox cannot store or over-long keys) while
 * keeping its body for an operator; a rejected delivery's row holds only storable text.
 */
export function identifyDelivery(handler: InboxHandlerDefinition, payload: unknown, message: ConsumeMessage, maxBodyBytes: number): IdentifiedDelivery {
  const properties = message.properties ?? {};
  const body = message.content ?? Buffer.alloc(0);
  const rejections: string[] = [];
  if (payload instanceof MalformedBody) rejections.push(payload.reason);
  if (body.length > maxBodyBytes) rejections.push(`the body has ${body.length} bytes, more than inboxMaxBodyBytes (${maxBodyBytes})`);
  if (handler.mode === 'deferred' && handler.customDeserializer && rejections.length === 0 && !isFaithfulText(body)) {
    // The row keeps the body as text: the worker's deserializer would get other bytes.
    rejections.push(
      `the body is not UTF-8 text without NUL characters, and consumer "${handler.consumer}" is deferred with a deserializer of its own, which would get other bytes from the stored text; use mode 'transactional' for binary bodies`,
    );
  }

  // Extractors run only on a body that is fine: a malformed one never reaches them.
  const bodyFine = rejections.length === 0;
  const bizKey = bodyFine ? extractKey('bizKey', handler.bizKey, payload, message, rejections) : null;
  // Extracted even when the delivery is rejected for its identity: its row keeps the key, so the
  // key is parked behind it rather than later deliveries running ahead of it.
  const orderingKey = bodyFine ? extractKey('orderingKey', handler.orderingKey, payload, message, rejections) : null;
  const type = typeof properties.type === 'string' ? properties.type : '';
  const wireId = typeof properties.messageId === 'string' && properties.messageId.length > 0 ? properties.messageId : null;
  let messageId = wireId;
  if (!messageId && bizKey) messageId = bizKeyMessageId(type, bizKey);
  if (!messageId && handler.messageIdFallback === 'content-hash') messageId = `sha256:${createHash('sha256').update(body).digest('hex')}`;
  // Reported only when nothing else is wrong: a malformed body never reaches the bizKey extractor.
  if (!messageId && rejections.length === 0) {
    rejections.push(`the message has no messageId, and consumer "${handler.consumer}" has no bizKey extractor or messageIdFallback to dedupe it by`);
  }
  const unstorable = new Set<string>();
  for (const [name, value] of [
    ['messageId', messageId],
    ['type', type],
  ] as const) {
    const reason = value ? unstorableReason(value) : undefined;
    if (reason) {
      unstorable.add(name);
      rejections.push(`${name} ${reason}: "${printable(value)}"`);
    }
  }
  for (const [name, value] of [
    ['messageId', messageId],
    ['bizKey', bizKey],
    ['orderingKey', orderingKey],
    ['type', type],
  ] as const) {
    if (value && value.length > KEY_MAX) {
      unstorable.add(name);
      rejections.push(`${name} is longer than ${KEY_MAX} characters`);
    }
  }
  const rejected = rejections.length > 0;
  return {
    row: {
      consumer: handler.consumer,
      // A rejected delivery still gets a row of its own, keyed so it cannot collide.
      messageId: rejected && (!messageId || unstorable.has('messageId')) ? `rejected:${randomUUID()}` : messageId!,
      type: unstorable.has('type') ? storableText(type).slice(0, KEY_MAX) : type,
      bizKey: rejected ? null : bizKey,
      orderingKey: unstorable.has('orderingKey') ? null : orderingKey,
      // Not part of the identity: kept as storable text, the delivery is processed all the same.
      exchange: storableText(message.fields?.exchange ?? '').slice(0, KEY_MAX),
      routingKey: storableText(message.fields?.routingKey ?? '').slice(0, KEY_MAX),
      payload: body.length > maxBodyBytes ? '' : storableText(body.toString('utf8')),
      headers: safeJson(properties.headers ?? {}),
      maxAttempts: handler.maxAttempts,
    },
    rejection: rejected ? rejections.join('; ') : undefined,
  };
}

/** Runs a key extractor; a throw, a non-string or text the inbox cannot store is a rejection. */
function extractKey(
  name: 'bizKey' | 'orderingKey',
  extractor: ((payload: any, message: ConsumeMessage) => string | undefined) | undefined,
  payload: unknown,
  message: ConsumeMessage,
  rejections: string[],
): string | null {
  if (!extractor) return null;
  let value: unknown;
  try {
    value = extractor(payload, message);
  } catch (error) {
    rejections.push(`the ${name} extractor threw: ${describeError(error, 300)}`);
    return null;
  }
  if (value === undefined || value === null || value === '') return null;
  if (typeof value !== 'string') {
    rejections.push(`the ${name} extractor returned a ${typeof value}, not a string`);
    return null;
  }
  const reason = unstorableReason(value);
  if (reason) {
    rejections.push(`${name} ${reason}: "${printable(value)}"`);
    return null;
  }
  return value;
}

/** Whether `body.toString('utf8')`, stored and read back, gives these very bytes. */
function isFaithfulText(body: Buffer): boolean {
  return isUtf8(body) && !body.includes(0);
}

function safeJson(value: unknown): string {
  try {
    return JSON.stringify(value) ?? '{}';
  } catch {
    return '{}';
  }
}

/**
 * The message id of a delivery that came without one and is deduped by `(type, bizKey)`: a hash
 * of both, so that no two facts share it however their text runs together (`order:paid` + `42`
 * and `order` + `paid:42`), and it fits the column whatever their length.
 */
export function bizKeyMessageId(type: string, bizKey: string): string {
  return `bizkey:${createHash('sha256')
    .update(JSON.stringify([type, bizKey]))
    .digest('hex')}`;
}

/**
 * Whether the broker says it delivered this message before: RabbitMQ's `redelivered` flag (set
 * on a message that went back to its queue unacknowledged: a nack with requeue, a closed channel,
 * a dead consumer) or a quorum queue's `x-delivery-count` header. A first delivery is neither, so
 * only redeliveries pay for counting an attempt before the handler runs.
 */
export function isRedelivery(message: ConsumeMessage): boolean {
  if (message.fields?.redelivered === true) return true;
  const count = message.properties?.headers?.['x-delivery-count'] as unknown;
  return (typeof count === 'number' && count > 0) || (typeof count === 'bigint' && count > 0n);
}
