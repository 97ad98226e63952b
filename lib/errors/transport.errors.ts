import { OutboxError } from './outbox.error';

// The errors of the ways out: a broker or another transport that did not take a message.

/** The broker did not confirm a message in time (disconnected, blocked, or slow). Retryable. */
export class SendTimeoutError extends OutboxError {
  constructor(messageId: string, timeoutMs: number, options?: { cause?: unknown }) {
    super(`Broker did not confirm message ${messageId} within ${timeoutMs} ms`, options);
  }
}

/**
 * The transport could not attempt the send, through no fault of the message: the broker is
 * disconnected or blocked, or a channel it shared was closed by another message. The dispatcher
 * gives the message back without counting an attempt, so an outage never spends retry budgets.
 * Throw it from a custom transport for the same reason.
 */
export class TransportUnavailableError extends OutboxError {}

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

/**
 * The message's exchange does not exist on the broker. Checked before publishing, so the broker
 * never closes a shared channel over it. Retried (the exchange may be declared by a later deploy)
 * up to the attempt limit; declare the exchange, or abandon the message.
 */
export class ExchangeNotFoundError extends OutboxError {
  constructor(
    /** The exchange the message names. */
    readonly exchange: string,
    options?: { cause?: unknown },
  ) {
    super(`Exchange ${JSON.stringify(exchange)} does not exist on the broker: declare it, or abandon the message`, options);
  }
}

/**
 * The broker closed the publishing channel because of this message (e.g. 403 ACCESS_REFUSED on
 * its exchange, 406 PRECONDITION_FAILED for a header it refuses). Only this message is charged an
 * attempt; the others that shared the channel are sent again on a new one.
 */
export class BrokerChannelError extends OutboxError {
  constructor(
    /** The message the broker closed the channel over. */
    readonly messageId: string,
    /** The AMQP reply code of the channel close (403, 404, 406…). */
    readonly code: number | undefined,
    reason: string,
  ) {
    super(`The broker closed the channel because of message ${messageId}: ${reason}`);
  }
}
