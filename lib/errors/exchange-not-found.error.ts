import { OutboxError } from './outbox.error';

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
