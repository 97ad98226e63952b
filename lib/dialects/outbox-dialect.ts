import { DataSource, EntityManager } from 'typeorm';
import { AttemptedClaim, StateTable } from '../engine/state-table';
import { OutboxMessageQuery, OutboxMessageState } from '../engine/message-views';
import { OutgoingMessage } from '../message/outbox-transport';
import { NewOutboxRow } from '../message/validate-message';
import { SqlTarget } from './sql-executor';

/**
 * A row claimed for sending: the message as its transport is given it, every field set (a claim
 * reads `bizKey` and `orderingKey` too), and the claim the engine settles it by (`id`,
 * `claimToken`, `maxAttempts`).
 */
export interface ClaimedMessage extends Required<OutgoingMessage>, AttemptedClaim {}

/** The claim a row is inserted under when its sender is known before it commits. */
export interface InsertClaim {
  token: string;
  claimedBy: string;
}

/** What a row inserted claimed came back with. */
export interface InsertedClaimedRow {
  id: string;
  createdAt: Date;
}

/**
 * Every SQL difference between databases, for one outbox table (with the shared state-machine
 * transitions of `StateTable`). Nothing else in the library writes SQL or branches on the
 * driver. All times come from the database's clock.
 */
export interface OutboxDialect extends StateTable {
  /** Inserts a PENDING row unless one with the same message id or (type, bizKey) exists. */
  insert(manager: EntityManager, row: NewOutboxRow): Promise<boolean>;
  /**
   * Inserts the row already claimed (PROCESSING under `claim`, due now), unless it is a duplicate
   * as for `insert`; returns its id and creation time, or null for a duplicate. Where a dialect
   * lacks it, every message is inserted PENDING and claimed (see `CommitHandoff`).
   */
  insertClaimed?(manager: EntityManager, row: NewOutboxRow, claim: InsertClaim): Promise<InsertedClaimedRow | null>;
  /**
   * Of rows inserted under claim `token`, the ids of those that committed and are still
   * PROCESSING under it, with their lease renewed from now. For a hand-off that memory alone
   * cannot vouch for (see `CommitHandoff`). A dialect with `insertClaimed` has it.
   */
  confirmClaimed?(dataSource: DataSource, ids: string[], token: string): Promise<string[]>;
  /** The message id of the row that made an insert a duplicate. */
  findDuplicateMessageId(manager: EntityManager, row: NewOutboxRow): Promise<string | null>;
  /**
   * Claims up to `limit` due rows of one transport's lane (default: the transport named
   * `default`) in one short transaction, skipping rows locked by others.
   */
  claim(dataSource: DataSource, limit: number, claimToken: string, claimedBy: string, transport?: string): Promise<ClaimedMessage[]>;
  /**
   * PENDING/FAILED/MANUAL_REQUIRED rows of a business event become ABANDONED; returns how many.
   * `insertedClaimed`: ids of rows this transaction inserted claimed (`insertClaimed`), which are
   * never sent yet, so they are abandoned too.
   */
  cancel(manager: EntityManager, bizKey: string, type: string | undefined, insertedClaimed?: string[]): Promise<number>;
  /** The latest state of one message, or null when there is none. */
  findMessage(target: SqlTarget, query: OutboxMessageQuery): Promise<OutboxMessageState | null>;
  /** Claimable (PENDING or FAILED) rows per transport. */
  claimableByTransport(target: SqlTarget): Promise<Record<string, number>>;
  /** Signals other instances, inside the publishing transaction, that rows are waiting. */
  notifyPublished?(manager: EntityManager, channel: string): Promise<void>;
  /**
   * Calls `onSignal` when another instance signals (or, where the database has no signal, when
   * a look every `signal.probeIntervalMs` finds newly committed rows); resolves to a function that
   * stops listening.
   */
  listen?(dataSource: DataSource, signal: WakeupSignal, onSignal: () => void, onError: (error: Error) => void): Promise<() => Promise<void>>;
}

/** Where other instances' wake-ups come from: a NOTIFY channel, or a periodic look where there is none. */
export interface WakeupSignal {
  /** The NOTIFY channel (PostgreSQL). */
  channel: string;
  /** How often an instance looks for rows other instances committed (MySQL and MariaDB, which have no NOTIFY). */
  probeIntervalMs: number;
}
