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

/** An inbox row's state after an attempt was recorded on it. */
export interface RecordedAttempt {
  status: MessageStatus;
  attempts: number;
}

/** What the row of a handler that started and may never finish says (`InboxDialect.markStarted`). */
export interface StartedNotes {
  /** `last_error` while the handler runs: it stays if the process dies before the handler ends. */
  started: string;
  /** `last_error` when the attempts are used up and the delivery is given up without running. */
  gaveUp: string;
}

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
   * the same message waits for this transaction and then finds it. `startMarked`: this delivery's
   * `markStarted` counted the attempt that is now succeeding, so taking over the FAILED row
   * uncounts it (`attempts` of a DONE row counts the attempts that failed or never finished).
   */
  acquire(manager: EntityManager, row: InboxRow, startMarked?: boolean): Promise<InboxAcquisition>;
  /**
   * Transactional mode, before the handler of a redelivered message runs, in a short transaction
   * of its own: counts the attempt that is starting on the row of `(consumer, messageId)`
   * (creating it FAILED with `attempts = 1`), with `notes.started` as its `last_error`, so that a
   * handler that takes its process down is counted although it never throws. A row that already
   * used `max_attempts` becomes MANUAL_REQUIRED (`notes.gaveUp`) instead, and the handler must not
   * run. Returns the row's new state, or undefined when the delivery is a duplicate (the row is
   * not FAILED, or another row holds its type + bizKey): nothing was written.
   */
  markStarted(dataSource: DataSource, row: InboxRow, notes: StartedNotes): Promise<RecordedAttempt | undefined>;
  /**
   * Records a failed attempt outside the rolled-back transaction, so the attempt count survives
   * redeliveries: FAILED, or MANUAL_REQUIRED when `fatal` or out of attempts. `attemptCounted`:
   * `markStarted` already counted this attempt, so only the error and the status change. Returns
   * the new status and attempt count, or undefined when the delivery was meanwhile handled (a
   * duplicate).
   */
  recordFailure(dataSource: DataSource, row: InboxRow, error: string, fatal: boolean, attemptCounted?: boolean): Promise<RecordedAttempt | undefined>;
  /** Deferred mode: stores the delivery PENDING unless this consumer already has it; true when stored. */
  insertPending(dataSource: DataSource, row: InboxRow): Promise<boolean>;
  /** Claims due rows of the given consumers. */
  claim(dataSource: DataSource, consumers: string[], limit: number, claimToken: string, claimedBy: string): Promise<ClaimedInboxMessage[]>;
  /** The DataSource's `DatabaseDialect.runTransactionsOneAtATime`, for the transactions the inbox opens. */
  runTransactionsOneAtATime?<T>(work: () => Promise<T>): Promise<T>;
}
