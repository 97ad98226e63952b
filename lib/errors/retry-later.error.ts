import { OutboxError } from './outbox.error';

/**
 * A failed attempt whose receiver said when to try again (HTTP `Retry-After`): the next attempt
 * waits at least `retryAfterMs`, longer when the backoff says so. Retryable.
 */
export class RetryLaterError extends OutboxError {
  constructor(
    message: string,
    /** The least time to wait before the next attempt, in milliseconds. */
    readonly retryAfterMs: number,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}
