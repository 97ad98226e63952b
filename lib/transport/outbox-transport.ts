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
 * confirm); rejects otherwise. Throw `NonRetryableError` when retrying cannot help.
 * Implementations must bound every send with a timeout.
 */
export interface OutboxTransport {
  send(message: OutgoingMessage): Promise<void>;
}
