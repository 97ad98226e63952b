import { OutboxError } from './outbox.error';

/**
 * The broker returned a `mandatory` message because no queue is bound for its routing key.
 * It counts as not sent; it is retried (a consumer's queue may be declared later) up to the
 * attempt limit.
 */
export class UnroutableMessageError extends OutboxError {
  constructor(messageId: string, exchange: string, routingKey: string) {
    super(`Message ${messageId} was returned unroutable by exchange "${exchange}" (routing key "${routingKey}")`);
  }
}
