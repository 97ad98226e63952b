import { OutboxError } from './outbox.error';

/**
 * The database did not answer a statement of `publish()`, `cancel()` or a webhook's intake within
 * `statementTimeoutMs`: it is overloaded, failing over, or unreachable while its connections stay
 * open. The connection was closed, so the pool does not hand it out again, and the transaction it
 * carried cannot commit. Retryable: try again once the database answers.
 */
export class DatabaseTimeoutError extends OutboxError {
  constructor(
    /** The bound that passed, in milliseconds. */
    readonly timeoutMs: number,
  ) {
    super(
      `the database did not answer within ${timeoutMs} ms (statementTimeoutMs); its connection was closed and the transaction cannot commit: retry once the database answers`,
    );
  }
}
