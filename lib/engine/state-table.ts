import { DataSource } from 'typeorm';
import { MessageStatus } from '../message/message-status';
import { SqlTarget } from '../dialects/sql-executor';
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
  status: MessageStatus.FAILED | MessageStatus.MANUAL_REQUIRED;
  /** Delay before the next attempt, added to the database's clock. */
  delayMs: number;
  error: string;
}

/** A PROCESSING row whose claim is older than the reclaim threshold. */
export interface ExpiredClaim extends AttemptedClaim {
  claimedBy: string | null;
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

/** An ordering key held back by its first unfinished message, which is MANUAL_REQUIRED. */
export interface ParkedKey {
  orderingKey: string;
  /** Inbox only: keys are ordered per consumer. */
  consumer: string | null;
  /** The head message, which an operator requeues or abandons to release the key. */
  messageId: string;
  type: string;
  attempts: number;
  lastError: string | null;
  /** How many later messages of the key wait behind the head. */
  waiting: number;
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
  /** Gives claims back unattempted (graceful shutdown, transport unavailable); returns how many were still held. */
  release(dataSource: DataSource, claims: ClaimRef[]): Promise<number>;
  /**
   * Gives back unattempted every row still held under `claimToken`: after a claim whose reply was
   * lost, which may have committed. Returns how many it gave back.
   */
  releaseClaim(dataSource: DataSource, claimToken: string): Promise<number>;
  /** PROCESSING rows claimed more than `olderThanMs` ago, oldest first. */
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
  /** Ordering keys whose head is MANUAL_REQUIRED, oldest head first. */
  findParkedKeys(dataSource: DataSource, limit: number): Promise<ParkedKey[]>;
  /** A FAILED or MANUAL_REQUIRED message becomes due now with its attempts reset (PENDING; FAILED in the inbox); true when it was one. */
  requeue(dataSource: DataSource, ref: MessageRef): Promise<boolean>;
  /** A PENDING, FAILED or MANUAL_REQUIRED message becomes ABANDONED (never sent or processed); true when it was one. */
  abandon(dataSource: DataSource, ref: MessageRef): Promise<boolean>;
}
