import { OutboxError } from './outbox.error';

/** The broker did not confirm a message in time (disconnected, blocked, or slow). Retryable. */
export class SendTimeoutError extends OutboxError {
  constructor(messageId: string, timeoutMs: number, options?: { cause?: unknown }) {
    super(`Broker did not confirm message ${messageId} within ${timeoutMs} ms`, options);
  }
}
