import { MessageStatus } from '../message/message-status';

/**
 * What a row of either table holds, as the read models give it: camelCase fields, the same values
 * on every database (see `record-columns.ts` for how each column is read).
 */
export interface MessageRecord {
  /** The row's id (a 64-bit integer, as text: larger than JavaScript numbers hold exactly). Ids order rows by insertion. */
  id: string;
  /** The message's id: a UUID in the outbox; in the inbox the AMQP `messageId` or a derived `bizkey:…`, `sha256:…` or `rejected:…` id. */
  messageId: string;
  /** The message type (column `message_type`); in the inbox `''` when the delivery had none. */
  type: string;
  /** The business fact plus event kind (`order-42:paid`) the message was published or received with; null when none. */
  bizKey: string | null;
  /** The key whose messages are sent (or processed) one at a time, in order; null when none. */
  orderingKey: string | null;
  /** The AMQP exchange it is sent to (outbox) or was delivered through (inbox); `''` for the default exchange or none. */
  exchange: string;
  /** The AMQP routing key it is sent with (outbox) or was delivered with (inbox). */
  routingKey: string;
  /** The message's headers, parsed. */
  headers: Record<string, unknown>;
  /** Where the row stands in the state machine. */
  status: MessageStatus;
  /** Attempts made so far. */
  attempts: number;
  /** Failed attempts after which the row becomes `MANUAL_REQUIRED`. */
  maxAttempts: number;
  /** When the row is next due (a retry's time, or a delayed message's). */
  nextAttemptAt: Date;
  /** When the current (or last) claim took the row; null until claimed. */
  claimedAt: Date | null;
  /** The random token of the current claim, which fences every settle; null when not claimed. */
  claimToken: string | null;
  /** The instance that claimed the row. */
  claimedBy: string | null;
  /** The reason of the last failed attempt or rejection, truncated to `lastErrorMaxLength`; null when none. */
  lastError: string | null;
  /** When the row was inserted, by the database's clock. */
  createdAt: Date;
  /** When the row became `DONE` or `ABANDONED`, by the database's clock; retention counts its age from here. Null until then. */
  processedAt: Date | null;
}

/** A row of the outbox table. */
export interface OutboxMessageRecord extends MessageRecord {
  /** The name of the transport (lane) that sends it. */
  transport: string;
  /** That transport's address where it is not the exchange: an HTTP endpoint's name, a `ClientProxy` pattern; `''` for none. */
  destination: string;
  /** The payload, parsed from the JSON text that is sent. */
  payload: unknown;
}

/** A row of the inbox table: one message as one consumer received it. */
export interface InboxMessageRecord extends MessageRecord {
  /** The consumer (handler) the row belongs to. */
  consumer: string;
  /**
   * The body as received, as text: not parsed, as it may not be JSON (a malformed delivery is
   * kept too). `''` on rows a `transactional` handler processed at the first attempt.
   */
  payload: string;
}
