import { DataSource, EntityManager } from 'typeorm';
import { AttemptedClaim, StateTable } from '../engine/state-table';
import { MessageStatus } from '../message/message-status';

/** What the inbox stores of one delivery to one consumer. */
export interface InboxRow {
  consumer: string;
  messageId: string;
  /** The AMQP `type`, '' when absent: NULL would let the (consumer, bizKey, type) key pass duplicates. */
  type: string;
  bizKey: string | null;
  /** Deferred mode: rows sharing a key (per consumer) are processed one at a time, in id order. */
  orderingKey: string | null;
  exchange: string;
  routingKey: string;
  /** The body as received. */
  payload: string;
  /** JSON text of the AMQP headers. */
  headers: string;
  maxAttempts: number;
}

/** What taking a delivery in a transaction found. */
export type InboxAcquisition =
  /** First delivery, or a redelivery after failed attempts: run the handler. */
  | { kind: 'process'; id: string }
  /** Already handled (or being handled, or given up on): skip the handler. */
  | { kind: 'duplicate'; status: MessageStatus };

/** A deferred inbox row claimed for processing. */
export interface ClaimedInboxMessage extends AttemptedClaim {
  consumer: string;
  messageId: string;
  type: string;
  exchange: string;
  routingKey: string;
  payload: string;
  headers: Record<string, unknown>;
}

/** Inbox SQL for one database, with the shared state-machine transitions of `StateTable`. */
export interface InboxDialect extends StateTable {
  /**
   * Transactional mode, inside the handler's transaction: records the delivery as DONE unless
   * this consumer already has it (by message id or by type + bizKey). A concurrent delivery of
   * the same message waits for this transaction and then finds it.
   */
  acquire(manager: EntityManager, row: InboxRow): Promise<InboxAcquisition>;
  /**
   * Records a failed attempt outside the rolled-back transaction, so the attempt count survives
   * redeliveries: FAILED, or MANUAL_REQUIRED when `fatal` or out of attempts. Returns the new
   * status and attempt count, or undefined when the delivery was meanwhile handled (a duplicate).
   */
  recordFailure(dataSource: DataSource, row: InboxRow, error: string, fatal: boolean): Promise<{ status: MessageStatus; attempts: number } | undefined>;
  /** Deferred mode: stores the delivery PENDING unless this consumer already has it; true when stored. */
  insertPending(dataSource: DataSource, row: InboxRow): Promise<boolean>;
  /** Claims due rows of the given consumers. */
  claim(dataSource: DataSource, consumers: string[], limit: number, claimToken: string, claimedBy: string): Promise<ClaimedInboxMessage[]>;
  /** The DataSource's `DatabaseDialect.runTransactionsOneAtATime`, for the transactions the inbox opens. */
  runTransactionsOneAtATime?<T>(work: () => Promise<T>): Promise<T>;
}
