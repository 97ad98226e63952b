import { DataSource } from 'typeorm';
import { MessageStatus } from '../message/message-status';
import { FailedStatus } from './give-up-rule';
import { ListedMessage, MessageDetail, ParkedKey, RecentActivity } from './message-views';
import { SqlTarget } from './sql-target';
import { StatusSummary } from './status-summary';

/** A claim to settle; the token fences it against a claimant that was reclaimed meanwhile. */
export interface ClaimRef {
  id: string;
  claimToken: string;
}

/** A claimed row with what the failure policy needs. */
export interface AttemptedClaim extends ClaimRef {
  attempts: number;
  maxAttempts: number;
  /** Rows sharing a key are claimed one at a time, in id order; null when unordered. */
  orderingKey: string | null;
}

/** A failed attempt's settlement. */
export interface FailedSettlement extends ClaimRef {
  status: FailedStatus;
  /** Delay before the next attempt, added to the database's clock. */
  delayMs: number;
  error: string;
}

/** A PROCESSING row whose lease ran out: not claimed or renewed within the reclaim threshold. */
export interface ExpiredClaim extends AttemptedClaim {
  claimedBy: string | null;
  /** Why the attempt before this claim failed, if one did: kept when the reclaim records its own reason. */
  lastError: string | null;
}

/** Counts the stuck detector reports. */
export interface HealthCounts {
  /** Claimable rows whose time has come: not those delayed, nor those waiting for a retry's backoff. */
  backlog: number;
  staleProcessing: number;
}

/** Identifies one message in a table: outbox message ids are unique; inbox ones per consumer. */
export interface MessageRef {
  messageId: string;
  /** Inbox only. */
  consumer?: string;
}

/**
 * Rows an operator selects, as `OutboxAdmin` checked them: every field given must match. Nullable
 * columns match only when they hold a value.
 */
export interface MessageFilter {
  /** Any of these statuses. */
  statuses?: readonly MessageStatus[];
  type?: string;
  bizKey?: string;
  /** Outbox only. */
  transport?: string;
  /** Inbox only. */
  consumer?: string;
  /** `last_error` contains this text, character for character (no wildcards). */
  errorContains?: string;
  /** Created at or after this instant. */
  createdAfter?: Date;
  /** Created strictly before this instant. */
  createdBefore?: Date;
}

/** One page of `listMessages`, by id: a keyset, so a page costs the same however deep it is. */
export interface ListWindow {
  /** Only rows past this id (below it when `newestFirst`); null for the first page. */
  after: string | null;
  limit: number;
  newestFirst: boolean;
}

/**
 * An operator's change to every row a filter selects:
 * - `requeue`: FAILED / MANUAL_REQUIRED become due now with their attempts reset (as `requeue`).
 * - `abandon`: PENDING / FAILED / MANUAL_REQUIRED become ABANDONED (as `abandon`).
 * - `replay`: DONE becomes PENDING, due now, attempts reset, under the same message id.
 * - `purge`: DONE / ABANDONED / MANUAL_REQUIRED rows are deleted.
 */
export type MessageChange = 'requeue' | 'abandon' | 'replay' | 'purge';

/**
 * The statuses each change may touch, whatever the filter asks: re-checked by the statement that
 * changes the rows, so a row claimed meanwhile (PROCESSING) is left alone.
 */
export const CHANGEABLE_STATUSES: Readonly<Record<MessageChange, readonly MessageStatus[]>> = {
  requeue: [MessageStatus.FAILED, MessageStatus.MANUAL_REQUIRED],
  abandon: [MessageStatus.PENDING, MessageStatus.FAILED, MessageStatus.MANUAL_REQUIRED],
  replay: [MessageStatus.DONE],
  purge: [MessageStatus.DONE, MessageStatus.ABANDONED, MessageStatus.MANUAL_REQUIRED],
};

/** The id range one batch of a change walks, in ascending id order. */
export interface ChangeBatch {
  /** Only rows past this id: the previous batch's `lastId`; null for the first batch. */
  after: string | null;
  /** No row past this id: the newest row when the change began, so rows written since are left alone. */
  through: string;
  /** Rows per statement. */
  size: number;
}

/** What one batch did. */
export interface ChangeBatchOutcome {
  /** Rows changed (or deleted). */
  changed: number;
  /** The highest id the batch reached, where the next batch starts; null when no row was left. */
  lastId: string | null;
}

/** Where `archiveFinished` moves a table's finished rows. */
export interface ArchiveTable {
  /** The archive table's quoted, qualified name. */
  quoted: string;
  /** The columns copied, each under its own name: every column of the archived table. */
  columns: readonly string[];
}

/**
 * The state machine shared by the outbox and inbox tables: every transition after a claim is
 * fenced by the claim token, and every time comes from the database's clock. One implementation
 * per database; the outbox and inbox dialects extend it with their own inserts and claims.
 */
export interface StateTable {
  /** Name for logs. */
  readonly label: string;
  /** Marks claims DONE (in `target`'s transaction when given one); returns how many were still held. */
  settleDone(target: SqlTarget, claims: ClaimRef[]): Promise<number>;
  /** Records failed attempts (attempts + 1); returns how many were still held by their token. */
  settleFailed(target: SqlTarget, settlements: FailedSettlement[]): Promise<number>;
  /**
   * Renews the lease of claims still held by their token (`claimed_at` = the database's now), so
   * the stuck detector leaves them alone for another lease; returns how many were still held. A
   * row settled or taken over meanwhile is not touched.
   */
  renew(dataSource: DataSource, claims: ClaimRef[]): Promise<number>;
  /** Gives claims back unattempted (graceful shutdown, transport unavailable); returns how many were still held. */
  release(dataSource: DataSource, claims: ClaimRef[]): Promise<number>;
  /**
   * Gives back unattempted every row still held under `claimToken`: after a claim whose reply was
   * lost, which may have committed. Returns how many it gave back.
   */
  releaseClaim(dataSource: DataSource, claimToken: string): Promise<number>;
  /** PROCESSING rows claimed or last renewed more than `olderThanMs` ago, oldest first. */
  findExpiredClaims(dataSource: DataSource, olderThanMs: number, limit: number): Promise<ExpiredClaim[]>;
  /** Backlog of due claimable rows, and PROCESSING rows claimed more than `staleAfterMs` ago. */
  healthCounts(dataSource: DataSource, staleAfterMs: number): Promise<HealthCounts>;
  /**
   * Rows per status (and consumer, in the inbox), how many are due and the oldest due time, in
   * one aggregate statement: for `OutboxAdmin.stats()` and health checks, never a row fetch.
   */
  statusSummary(target: SqlTarget): Promise<StatusSummary>;
  /** Deletes up to `limit` DONE/ABANDONED rows finished more than `olderThanMs` ago; returns how many. */
  deleteFinished(dataSource: DataSource, olderThanMs: number, limit: number): Promise<number>;
  /**
   * Moves up to `limit` DONE/ABANDONED rows finished more than `olderThanMs` ago to `archive`, with
   * the database's time as `archived_at`, in one short transaction of its own that copies the
   * rows and deletes exactly the rows it copied: a row is either still in the table or in the
   * archive, never both or neither. A row another transaction changes meanwhile (a replay, a
   * requeue) is passed over or re-checked, never archived as it was. Returns how many it moved.
   */
  archiveFinished(dataSource: DataSource, archive: ArchiveTable, olderThanMs: number, limit: number): Promise<number>;
  /** Ordering keys whose head is MANUAL_REQUIRED, oldest head first. */
  findParkedKeys(dataSource: DataSource, limit: number): Promise<ParkedKey[]>;
  /** A FAILED or MANUAL_REQUIRED message becomes due now with its attempts reset (PENDING; FAILED in the inbox); true when it was one. */
  requeue(dataSource: DataSource, ref: MessageRef): Promise<boolean>;
  /** A PENDING, FAILED or MANUAL_REQUIRED message becomes ABANDONED (never sent or processed); true when it was one. */
  abandon(dataSource: DataSource, ref: MessageRef): Promise<boolean>;
  /** One message whole, or null when there is none. */
  readMessage(target: SqlTarget, ref: MessageRef): Promise<MessageDetail | null>;
  /** How many rows match `filter`: one count, for an operator to confirm a change. */
  countMessages(target: SqlTarget, filter: MessageFilter): Promise<number>;
  /** Rows finished and created in each of `slices` equal slices of the last `windowMs`, in one aggregate statement. */
  recentActivity(target: SqlTarget, windowMs: number, slices: number): Promise<RecentActivity>;
  /** Rows matching `filter`, one page of them in id order. */
  listMessages(target: SqlTarget, filter: MessageFilter, window: ListWindow): Promise<ListedMessage[]>;
  /**
   * Applies `change` to up to `batch.size` rows matching `filter` (narrowed to the change's
   * `CHANGEABLE_STATUSES`), the lowest ids in `batch`'s range first, in one short transaction of
   * its own. A row locked by a claim under way is passed over (PostgreSQL) or waited for, and is
   * then PROCESSING, which no change touches. A `replay`
   * leaves a row with an ordering key DONE while a later row of its key is unfinished (see
   * `replayKeyRule`): it would go out beside it, or hold it back.
   */
  changeMessages(dataSource: DataSource, change: MessageChange, filter: MessageFilter, batch: ChangeBatch): Promise<ChangeBatchOutcome>;
}
