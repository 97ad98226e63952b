import type { ConsumeMessage } from 'amqplib';
import { createHash, randomUUID } from 'node:crypto';
import { InboxRow } from '../dialects/inbox-dialect';
import { InboxHandlerDefinition } from './inbox-handler-options';
import { MalformedBody } from './malformed-body';

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
 * (malformed body, no identity, over-long keys) while keeping its body for an operator.
 */
export function identifyDelivery(handler: InboxHandlerDefinition, payload: unknown, message: ConsumeMessage, maxBodyBytes: number): IdentifiedDelivery {
  const properties = message.properties ?? {};
  const body = message.content ?? Buffer.alloc(0);
  const rejections: string[] = [];
  if (payload instanceof MalformedBody) rejections.push(payload.reason);
  if (body.length > maxBodyBytes) rejections.push(`the body has ${body.length} bytes, more than inboxMaxBodyBytes (${maxBodyBytes})`);

  let bizKey: string | null = null;
  if (handler.bizKey && rejections.length === 0) {
    try {
      bizKey = handler.bizKey(payload, message) ?? null;
    } catch (error) {
      rejections.push(`the bizKey extractor threw: ${(error as Error).message}`);
    }
  }
  let orderingKey: string | null = null;
  if (handler.orderingKey && rejections.length === 0) {
    try {
      orderingKey = handler.orderingKey(payload, message) ?? null;
    } catch (error) {
      rejections.push(`the orderingKey extractor threw: ${(error as Error).message}`);
    }
  }
  const type = typeof properties.type === 'string' ? properties.type : '';
  let messageId = typeof properties.messageId === 'string' && properties.messageId.length > 0 ? properties.messageId : null;
  if (!messageId && bizKey) messageId = `bizkey:${type}:${bizKey}`;
  if (!messageId && handler.messageIdFallback === 'content-hash') messageId = `sha256:${createHash('sha256').update(body).digest('hex')}`;
  // Reported only when nothing else is wrong: a malformed body never reaches the bizKey extractor.
  if (!messageId && rejections.length === 0) {
    rejections.push(`the message has no messageId, and consumer "${handler.consumer}" has no bizKey extractor or messageIdFallback to dedupe it by`);
  }
  for (const [name, value] of [['messageId', messageId], ['bizKey', bizKey], ['orderingKey', orderingKey], ['type', type]] as const) {
    if (value && value.length > KEY_MAX) rejections.push(`${name} is longer than ${KEY_MAX} characters`);
  }
  const rejected = rejections.length > 0;
  return {
    row: {
      consumer: handler.consumer,
      // A rejected delivery still gets a row of its own, keyed so it cannot collide.
      messageId: rejected && (!messageId || messageId.length > KEY_MAX) ? `rejected:${randomUUID()}` : messageId!,
      type: type.length <= KEY_MAX ? type : '',
      bizKey: bizKey && bizKey.length <= KEY_MAX ? bizKey : null,
      orderingKey: orderingKey && orderingKey.length <= KEY_MAX ? orderingKey : null,
      exchange: message.fields?.exchange ?? '',
      routingKey: message.fields?.routingKey ?? '',
      // PostgreSQL text cannot hold NUL characters; anything else is kept as received.
      payload: body.length > maxBodyBytes ? '' : body.toString('utf8').replace(/\u0000/g, '\uFFFD'),
      headers: safeJson(properties.headers ?? {}),
      maxAttempts: handler.maxAttempts,
    },
    rejection: rejected ? rejections.join('; ') : undefined,
  };
}

function safeJson(value: unknown): string {
  try {
    return JSON.stringify(value) ?? '{}';
  } catch {
    return '{}';
  }
}
