import { OutboxError } from './outbox.error';

/**
 * A message given to `publish()` that cannot be stored or sent as it is. Nothing was written; the
 * caller's transaction is untouched, as with any error thrown inside it.
 */
export class OutboxMessageInvalidError extends OutboxError {
  /**
   * The message field at fault (`type`, `exchange`, `routingKey`, `bizKey`, `orderingKey`,
   * `messageId`, `maxAttempts`, `payload`, `headers`), or undefined when the message as a whole is.
   */
  readonly field?: string;

  constructor(reason: string, field?: string) {
    super(`Invalid outbox message: ${reason}`);
    this.field = field;
  }
}
