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
  bizKey: string | null;
  orderingKey: string | null;
  exchange: string;
  routingKey: string;
  /** The message's headers, parsed. */
  headers: Record<string, unknown>;
  status: MessageStatus;
  /** Attempts made so far. */
  attempts: number;
  maxAttempts: number;
  /** When the row is next due (a retry's time, or a delayed message's). */
  nextAttemptAt: Date;
  /** When the current (or last) claim took the row; null until claimed. */
  claimedAt: Date | null;
  claimToken: string | null;
  /** The instance that claimed the row. */
  claimedBy: string | null;
  lastError: string | null;
  createdAt: Date;
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
