import type { OutboxModuleOptions } from '../options/outbox-module-options';

/** A claimed message, as a transport sends it. */
export interface OutgoingMessage {
  /** UUID to send as the broker's message id; consumers dedupe on it. */
  messageId: string;
  type: string;
  exchange: string;
  routingKey: string;
  /** JSON text, sent as it was stored. */
  payload: string;
  headers: Record<string, unknown>;
  /** Failed attempts so far. */
  attempts: number;
  createdAt: Date;
}

/**
 * Sends one message. Resolves only once the broker has taken responsibility for it (a publisher
 * confirm); rejects otherwise. Implementations must bound every send with a timeout.
 *
 * What a rejection costs the message: `NonRetryableError` sends it straight to MANUAL_REQUIRED;
 * `TransportUnavailableError` (disconnected, blocked, or a failure another message caused) gives
 * it back without counting an attempt; `RetryLaterError` counts one and waits at least as long as
 * it says; any other error counts an attempt and retries with backoff.
 */
export interface OutboxTransport {
  send(message: OutgoingMessage): Promise<void>;
  /**
   * Whether a send could succeed now. While false, the dispatcher claims nothing: messages stay
   * PENDING/FAILED (and cancellable) and spend no attempts. Absent: always assumed available.
   */
  isAvailable?(): boolean;
  /** Calls `listener` whenever the transport becomes available again; returns an unsubscribe function. */
  onAvailable?(listener: () => void): () => void;
}

/**
 * What `OutboxModule.forRoot()` asks of a transport class beyond `send`: optionally, what is wrong
 * with its own settings given the module's options (a timeout longer than `sendTimeoutMs`), so
 * that a mistake fails where the module is declared.
 */
export interface OutboxTransportClass {
  optionProblems?(options: OutboxModuleOptions): string[];
}

/** The transport class's problems with the module's options, if it has a check. */
export function transportOptionProblems(transport: unknown, options: OutboxModuleOptions): string[] {
  const check = (transport as OutboxTransportClass | undefined)?.optionProblems;
  return typeof check === 'function' ? check.call(transport, options) : [];
}
