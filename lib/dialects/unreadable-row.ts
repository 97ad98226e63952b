import { ClaimRef } from '../engine/state-table';
import { OutboxError } from '../errors/outbox.error';
import { describeError } from '../retry/error-classifier';

/*
 * A claimed row is read column by column, and a column that holds what the library never writes
 * (headers that are not a JSON object, a count that is not a whole number, a time that is not
 * one) makes that row alone unreadable. Such rows come from a hand-written INSERT, a migration or
 * an older version; before, one of them made the whole claim throw after it had committed, so its
 * batch was given back unattempted every poll and the lane stood still for good.
 */

/** The largest `attempts` a row may hold: one more still fits the 32-bit integer column of every database. */
const MAX_ATTEMPTS_COLUMN = 2_147_483_646;
/** The largest `max_attempts`: the 32-bit integer column's largest value. */
const MAX_MAX_ATTEMPTS_COLUMN = 2_147_483_647;
/** How much of a row's reason is kept in `last_error`: enough for the column, the problem and an excerpt. */
const REASON_MAX_LENGTH = 1_000;

/** One column of a claimed row holds a value the library cannot use; the row is set aside as MANUAL_REQUIRED. */
export class UnreadableRowError extends OutboxError {
  constructor(
    /** The column, as the table names it. */
    readonly column: string,
    problem: string,
  ) {
    super(`Column ${column} cannot be read: ${problem}. Correct the row and requeue the message, or abandon it`);
  }
}

/** A claimed row that cannot be read, to settle as MANUAL_REQUIRED under its claim. */
export interface UnreadableClaim extends ClaimRef {
  /** The row's message id, where it could be read: for the log. */
  messageId: string | null;
  /** Why, as `last_error` records it. */
  reason: string;
}

/** A claim's rows, read one by one. */
export interface ReadClaim<T> {
  readable: T[];
  unreadable: UnreadableClaim[];
}

/**
 * Reads each row of a claim made under `claimToken` with `read`; a row it throws for is set
 * aside with the reason, and the others are read all the same.
 */
export function readClaimedRows<T>(rows: Record<string, any>[], claimToken: string, read: (row: Record<string, any>) => T): ReadClaim<T> {
  const claim: ReadClaim<T> = { readable: [], unreadable: [] };
  for (const row of rows) {
    try {
      claim.readable.push(read(row));
    } catch (error) {
      claim.unreadable.push({
        id: String(row.id),
        claimToken,
        messageId: typeof row.message_id === 'string' ? row.message_id : null,
        reason: describeError(error, REASON_MAX_LENGTH),
      });
    }
  }
  return claim;
}

/** A text column that must hold text. */
export function textColumn(row: Record<string, any>, column: string): string {
  const value = row[column];
  if (typeof value !== 'string') throw new UnreadableRowError(column, `expected text, found ${kindOf(value)}`);
  return value;
}

/** A text column that may be NULL. */
export function optionalTextColumn(row: Record<string, any>, column: string): string | null {
  return row[column] === null ? null : textColumn(row, column);
}

/** A text column that holds a JSON object (the headers): parsed. */
export function jsonObjectColumn(row: Record<string, any>, column: string): Record<string, unknown> {
  const text = textColumn(row, column);
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    throw new UnreadableRowError(column, `not JSON (${(error as Error).message})`);
  }
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    throw new UnreadableRowError(column, `expected a JSON object, found ${value === null ? 'null' : Array.isArray(value) ? 'an array' : `a ${typeof value}`}`);
  }
  return value as Record<string, unknown>;
}

/** `attempts`: a whole number from 0, small enough that the next failure can still count. */
export function attemptsColumn(row: Record<string, any>, column: string): number {
  return wholeNumber(row, column, 0, MAX_ATTEMPTS_COLUMN);
}

/** `max_attempts`: a whole number from 1. */
export function maxAttemptsColumn(row: Record<string, any>, column: string): number {
  return wholeNumber(row, column, 1, MAX_MAX_ATTEMPTS_COLUMN);
}

/** A time the dialect converted from a column: a valid instant. */
export function timeColumn(value: Date | null | undefined, column: string): Date {
  if (!(value instanceof Date) || Number.isNaN(value.getTime())) throw new UnreadableRowError(column, 'not a valid time');
  return value;
}

function wholeNumber(row: Record<string, any>, column: string, min: number, max: number): number {
  const value = row[column];
  if (typeof value !== 'number' || !Number.isInteger(value) || value < min || value > max) {
    throw new UnreadableRowError(column, `expected a whole number from ${min} to ${max}, found ${typeof value === 'number' ? value : kindOf(value)}`);
  }
  return value;
}

/** What a value is, for a reason: never the value itself, which may be long or binary. */
function kindOf(value: unknown): string {
  if (value === null || value === undefined) return 'NULL';
  if (Buffer.isBuffer(value)) return `binary data (${value.length} bytes)`;
  if (typeof value === 'string') return 'text';
  return `a ${typeof value}`;
}
