import { OutboxError } from './outbox.error';

/**
 * The transport could not attempt the send, through no fault of the message: the broker is
 * disconnected or blocked, or a channel it shared was closed by another message. The dispatcher
 * gives the message back without counting an attempt, so an outage never spends retry budgets.
 * Throw it from a custom transport for the same reason.
 */
export class TransportUnavailableError extends OutboxError {}
