/** Base class of every error this library throws, so callers can catch them as one family. */
export class OutboxError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = new.target.name;
  }
}

/**
 * Throw this (or wrap another error in it as `cause`) from a transport to say that retrying
 * cannot help: the message goes straight to MANUAL_REQUIRED.
 */
export class NonRetryableError extends OutboxError {}

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
