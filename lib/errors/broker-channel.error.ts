import { OutboxError } from './outbox.error';

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
