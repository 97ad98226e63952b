import { NonRetryableError } from '../../errors';
import { ATTEMPT_HEADER, deliveryHeaders, PUBLISHED_AT_HEADER } from '../delivery-headers';
import type { OutgoingMessage } from '../../message/outbox-transport';

/**
 * The data of every event `ClientProxyOutboxTransport` emits, whatever Nest transport carries it:
 * what an `@EventPattern()` handler receives as its `@Payload()`.
 *
 * Nest's transports share no header mechanism, so everything a consumer needs travels in this
 * one object. The attempt and the publishing time are there twice: as typed fields for the
 * handler, and as the delivery headers every transport adds (`outbox-attempt`,
 * `outbox-published-at`), for code that reads headers the same way whatever the transport.
 *
 * ```ts
 * @EventPattern('order.placed')
 * onOrderPlaced(@Payload() event: OutboxEnvelope<OrderPlaced>) { … event.id, event.payload … }
 * ```
 */
export interface OutboxEnvelope<T = unknown> {
  /** The message id: the same on every attempt, so consumers dedupe on it. */
  id: string;
  /** The message type given to `publish()`. */
  type: string;
  /** The payload given to `publish()`, as JSON carries it. */
  payload: T;
  /** The headers given to `publish()`, with the delivery headers `outbox-attempt` and `outbox-published-at` over them (unless the `deliveryHeaders` option is off). */
  headers: Record<string, unknown>;
  /** 1 for the first send, 2 for the first retry: a consumer can tell a retry from a first delivery. */
  attempt: number;
  /** When the message was published: ISO 8601, UTC, the database's clock. */
  publishedAt: string;
}

/** The envelope of one attempt at `message`; `withDeliveryHeaders` is the `deliveryHeaders` option. */
export function outboxEnvelope(message: OutgoingMessage, withDeliveryHeaders = true): OutboxEnvelope {
  let payload: unknown;
  try {
    payload = JSON.parse(message.payload);
  } catch (error) {
    // publish() stores JSON text only: a row that holds anything else was written by other means.
    throw new NonRetryableError(`the stored payload of message ${message.messageId} is not JSON`, { cause: error });
  }
  const delivery = deliveryHeaders(message);
  return {
    id: message.messageId,
    type: message.type,
    payload,
    headers: withDeliveryHeaders ? { ...message.headers, ...delivery } : { ...message.headers },
    attempt: delivery[ATTEMPT_HEADER],
    publishedAt: delivery[PUBLISHED_AT_HEADER],
  };
}
