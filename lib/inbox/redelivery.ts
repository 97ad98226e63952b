import type { ConsumeMessage } from 'amqplib';

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
