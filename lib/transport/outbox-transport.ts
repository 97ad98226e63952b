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
 * it back without counting an attempt; any other error counts an attempt and retries with backoff.
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
