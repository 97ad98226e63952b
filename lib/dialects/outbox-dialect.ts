import { DataSource, EntityManager } from 'typeorm';
import { MessageStatus } from '../message/message-status';
import { NewOutboxRow } from '../message/validate-message';

/** A row claimed for sending, with exactly what the transport needs. */
export interface ClaimedMessage {
  id: string;
  claimToken: string;
  messageId: string;
  type: string;
  exchange: string;
  routingKey: string;
  /** The JSON text as stored, sent byte for byte. */
  payload: string;
  headers: Record<string, unknown>;
  attempts: number;
  maxAttempts: number;
  createdAt: Date;
}

/** A claim to settle; the token fences it against a claimant that was reclaimed meanwhile. */
export interface ClaimRef {
  id: string;
  claimToken: string;
}

/** A failed attempt's settlement. */
export interface FailedSettlement extends ClaimRef {
  status: MessageStatus.FAILED | MessageStatus.MANUAL_REQUIRED;
  /** Delay before the next attempt, added to the database's clock. */
  delayMs: number;
  error: string;
}

/** A PROCESSING row whose claim is older than the reclaim threshold. */
export interface ExpiredClaim extends ClaimRef {
  attempts: number;
  maxAttempts: number;
  claimedBy: string | null;
}

/** Counts the stuck detector reports. */
export interface OutboxHealthCounts {
  backlog: number;
  staleProcessing: number;
}

/**
 * Every SQL difference between databases, for one outbox table. Nothing else in the library
 * writes SQL or branches on the driver. All times come from the database's clock.
 */
export interface OutboxDialect {
  /** Inserts a PENDING row unless one with the same message id or (type, bizKey) exists. */
  insert(manager: EntityManager, row: NewOutboxRow): Promise<boolean>;
  /** The message id of the row that made an insert a duplicate. */
  findDuplicateMessageId(manager: EntityManager, row: NewOutboxRow): Promise<string | null>;
  /** Claims up to `limit` due rows in one short transaction, skipping rows locked by others. */
  claim(dataSource: DataSource, limit: number, claimToken: string, claimedBy: string): Promise<ClaimedMessage[]>;
  /** Marks claims DONE; returns how many were still held by their token. */
  settleDone(dataSource: DataSource, claims: ClaimRef[]): Promise<number>;
  /** Records failed attempts (attempts + 1); returns how many were still held by their token. */
  settleFailed(dataSource: DataSource, settlements: FailedSettlement[]): Promise<number>;
  /** Gives claims back unattempted (graceful shutdown); returns how many were still held. */
  release(dataSource: DataSource, claims: ClaimRef[]): Promise<number>;
  /** PENDING/FAILED rows of a business event become ABANDONED; returns how many. */
  cancel(manager: EntityManager, bizKey: string, type: string | undefined): Promise<number>;
  /** PROCESSING rows claimed more than `olderThanMs` ago, oldest first. */
  findExpiredClaims(dataSource: DataSource, olderThanMs: number, limit: number): Promise<ExpiredClaim[]>;
  /** Backlog of claimable rows, and PROCESSING rows claimed more than `staleAfterMs` ago. */
  healthCounts(dataSource: DataSource, staleAfterMs: number): Promise<OutboxHealthCounts>;
  /** Signals other instances, inside the publishing transaction, that rows are waiting. */
  notifyPublished?(manager: EntityManager, channel: string): Promise<void>;
  /** Calls `onSignal` when another instance signals; resolves to a function that stops listening. */
  listen?(dataSource: DataSource, channel: string, onSignal: () => void, onError: (error: Error) => void): Promise<() => Promise<void>>;
}
