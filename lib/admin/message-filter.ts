import { ListedMessage } from '../engine/message-views';
import { MessageStatus } from '../message/message-status';

/**
 * Which messages an `OutboxAdmin` operation applies to: every field given must match (they are
 * ANDed); a field left out (or undefined) matches every row.
 */
export interface MessageFilterFields {
  /** One status, or any of several. An operation's own statuses are never widened by it. */
  status?: MessageStatus | readonly MessageStatus[];
  /** The message type, exactly. */
  type?: string;
  /** The business key, exactly; rows without one never match. */
  bizKey?: string;
  /** Rows whose last error contains this text, matched literally (case included; `%` and `_` are plain characters). */
  errorContains?: string;
  /** Rows created at or after this instant (by the database's clock when the row was written). */
  createdAfter?: Date;
  /** Rows created strictly before this instant. */
  createdBefore?: Date;
}

/** Which outbox messages an operation applies to. */
export interface OutboxMessageFilter extends MessageFilterFields {
  /** The transport (lane) the message is sent by. */
  transport?: string;
}

/** Which inbox deliveries an operation applies to. */
export interface InboxMessageFilter extends MessageFilterFields {
  /** The consumer (handler) the delivery is stored for. */
  consumer?: string;
}

/** One page of a listing. */
export interface MessagePageOptions {
  /** The `next` of the previous page (the last row's id): this page starts after it. */
  after?: string;
  /** Rows per page: 1 to 1000, default 100. */
  limit?: number;
  /** `newest` (default) or `oldest` first, by row id (the order rows were written in). */
  order?: 'newest' | 'oldest';
}

/** Rows of a listing, and where the next page starts. */
export interface MessagePage<T> {
  /** This page's rows, in the order asked for. */
  messages: T[];
  /** Pass as `after` for the next page; null when this page is the last. */
  next: string | null;
}

/** An outbox row as `listMessages` returns it. */
export type ListedOutboxMessage = Omit<ListedMessage, 'transport' | 'destination' | 'consumer'> & {
  /** The transport (lane) that sends it. */
  transport: string;
  /** Its address for a non-RabbitMQ transport; `''` for none. */
  destination: string;
};

/** An inbox row as `listInboxMessages` returns it. */
export type ListedInboxMessage = Omit<ListedMessage, 'transport' | 'destination' | 'consumer'> & {
  /** The consumer (handler) the delivery is stored for. */
  consumer: string;
};

/** How an operation on many messages runs. */
export interface BatchOptions {
  /**
   * Rows per statement, each statement its own short transaction: 1 to 5000, default 500.
   * Smaller batches hold row locks for less time on a busy table.
   */
  batchSize?: number;
}
