import { NonRetryableError, OutboxError } from './outbox.error';

// The errors of an input the library refuses: a message to publish, an admin filter, a delivery.

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

/**
 * A filter, page or option given to an `OutboxAdmin` operation on many messages that it refuses:
 * a field of the wrong type or size, or a filter too broad for the change asked. Nothing was read
 * or changed.
 */
export class OutboxAdminFilterError extends OutboxError {
  /**
   * The field at fault (`status`, `type`, `bizKey`, `transport`, `consumer`, `errorContains`,
   * `createdAfter`, `createdBefore`, `after`, `limit`, `order`, `batchSize`, or an unknown field's
   * name), or undefined when the filter as a whole is (an empty filter for a change).
   */
  readonly field?: string;

  constructor(reason: string, field?: string) {
    super(`Invalid OutboxAdmin filter: ${reason}`);
    this.field = field;
  }
}

/**
 * A stored delivery (a webhook, a deferred message) that the method's pipes refused with a client
 * error (4xx), such as a `ValidationPipe`'s 400: the same input is refused on every attempt, so it
 * goes to MANUAL_REQUIRED at once (unless `retryPipeRejections`). Its message keeps what the pipe
 * said (the validation messages); the pipe's exception is its `cause`. Fix the sender or the DTO,
 * then requeue the row.
 */
export class InputRejectedError extends NonRetryableError {
  constructor(
    /** The HTTP status the pipe's exception carries. */
    readonly status: number,
    /** What the pipe said, one entry per message (a ValidationPipe gives one per constraint). */
    readonly reasons: string[],
    cause: unknown,
  ) {
    super(`the method's pipes refused the input (${status}): ${reasons.join('; ')}`, { cause });
  }
}
