import { OutboxError } from './outbox.error';

/**
 * Throw this (or wrap another error in it as `cause`) from a transport to say that retrying
 * cannot help: the message goes straight to MANUAL_REQUIRED.
 */
export class NonRetryableError extends OutboxError {}
