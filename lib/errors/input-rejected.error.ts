import { NonRetryableError } from './non-retryable.error';

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
