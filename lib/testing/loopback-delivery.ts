import type { ConsumeMessage } from 'amqplib';
import { safeDeserializer } from '../inbox/malformed-body';
import { golevelup } from '../transport/amqp/golevelup';
import type { CapturedMessage } from './capturing-outbox.transport';
import type { InboxSubscription } from './inbox-subscriptions';

/** What became of one loopback delivery, as the broker would have been told. */
export type LoopbackOutcome = 'ack' | 'requeue' | 'dead-letter' | 'error';

/** One delivery of a captured message to one `@InboxHandler()`. */
export interface LoopbackDelivery {
  /** The captured message that was delivered. */
  message: CapturedMessage;
  /** The handler's inbox consumer name. */
  consumer: string;
  /** `ClassName.method`. */
  handler: string;
  /** The queue of the handler's `@RabbitSubscribe()`. */
  queue: string;
  /** 1 for the first delivery of the message to this queue, 2 for its redelivery, … */
  delivery: number;
  /** Whether the delivery carried the broker's `redelivered` flag (every delivery after the first). */
  redelivered: boolean;
  /**
   * `ack`: processed, stored (deferred mode) or recognised as a duplicate; `requeue`: Nack(true),
   * delivered again; `dead-letter`: Nack(false), the inbox gave up (MANUAL_REQUIRED);
   * `error`: the handler's chain threw before the inbox answered (a guard, a pipe).
   */
  outcome: LoopbackOutcome;
  /** What the handler's chain threw, for the `error` outcome. */
  error?: unknown;
}

let deliveryTag = 0;

/**
 * Hands `message` to one subscription the way golevelup hands a broker delivery to a handler:
 * the handler's deserializer on the body, then the handler's Nest chain (guards, interceptors
 * including the inbox's, pipes) with `[payload, ConsumeMessage, headers]`.
 */
export async function deliverOnce(subscription: InboxSubscription, message: CapturedMessage, delivery: number): Promise<LoopbackDelivery> {
  const redelivered = delivery > 1;
  const consumeMessage = asConsumeMessage(message, redelivered, subscription.quorum ? delivery - 1 : undefined);
  const { definition } = subscription;
  const base = { message, consumer: definition.consumer, handler: subscription.handler, queue: subscription.queue, delivery, redelivered };
  try {
    const payload = (definition.deserialize ?? safeDeserializer())(consumeMessage.content, consumeMessage);
    const response = await definition.invoke(payload, consumeMessage, consumeMessage.properties.headers);
    if (response instanceof golevelup().Nack) return { ...base, outcome: response.requeue ? 'requeue' : 'dead-letter' };
    return { ...base, outcome: 'ack' };
  } catch (error) {
    return { ...base, outcome: 'error', error };
  }
}

/** The delivery as the RabbitMQ transport would have published it and the broker delivered it. */
function asConsumeMessage(message: CapturedMessage, redelivered: boolean, deliveryCount: number | undefined): ConsumeMessage {
  const headers: Record<string, unknown> = structuredClone(message.headers);
  if (deliveryCount !== undefined && deliveryCount > 0) headers['x-delivery-count'] = deliveryCount;
  return {
    content: Buffer.from(message.payloadText),
    fields: { deliveryTag: ++deliveryTag, redelivered, exchange: message.exchange, routingKey: message.routingKey, consumerTag: 'nestjs-outbox-loopback' },
    properties: {
      messageId: message.messageId,
      type: message.type,
      headers,
      contentType: 'application/json',
      deliveryMode: 2,
      timestamp: Math.floor(message.createdAt.getTime() / 1000),
    },
  } as unknown as ConsumeMessage;
}
