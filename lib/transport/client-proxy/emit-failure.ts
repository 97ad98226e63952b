import { NonRetryableError, SendTimeoutError } from '../../errors';
import { printable } from '../../message/printable';

/**
 * The error a failed emit is recorded with: the client's error as its cause, under a message
 * that names the client and the pattern. Counted as an attempt and retried, except where retrying
 * cannot help.
 */
export function emitFailure(error: unknown, messageId: string, pattern: string, clientName: string): Error {
  if (error instanceof SendTimeoutError) return error;
  const failed = `ClientProxy ${clientName} failed to emit message ${messageId} on "${printable(pattern)}"`;
  // nats.js refuses, before sending, a message larger than the server's max_payload: every retry would be refused too.
  if ((error as { code?: unknown } | null)?.code === 'MAX_PAYLOAD_EXCEEDED') {
    return new NonRetryableError(`${failed}: it is larger than the NATS server's max_payload; raise max_payload or shrink the message, then requeue it`, {
      cause: error,
    });
  }
  return new Error(failed, { cause: error });
}
