import { ClaimRef } from '../engine/state-table';
import { MessageScope } from './message-ref-sql';
import { FilterFlavour } from './message-filter-sql';
import { SqlTarget } from './sql-executor';
import { SqlQuery } from './sql-query';

/** A statement's rows, and how many rows it changed (as the database counts them). */
export interface StatementResult {
  rows: Record<string, any>[];
  changed: number;
}

/** A value each claim of a batch sets: its name in the batch, its SQL type where arrays are typed, and its value. */
export interface PerClaimValue<T extends ClaimRef> {
  name: string;
  type: 'text' | 'bigint';
  of: (claim: T) => unknown;
}

/** What the SET list of a batch update reads: the row's own columns, and the claim's values by name. */
export interface ClaimBatchNames {
  column: (name: string) => string;
  value: (name: string) => string;
}

/**
 * How one database spells the state table's statements, for one table: what `SqlStateTable`
 * needs to write them once for every database. Statements that differ in more than these
 * spellings stay in the dialect's own class.
 */
export interface StateTableFlavour {
  /** The database's clock: every time the table holds comes from it. */
  readonly now: string;
  /** The clock plus a duration (an SQL expression in the units of `duration`). */
  nowPlus(duration: string): string;
  /** The clock minus a duration (an SQL expression in the units of `duration`). */
  nowMinus(duration: string): string;
  /** A duration in milliseconds as `nowPlus` and `nowMinus` take it. */
  duration(ms: number): unknown;
  /** Parameters (its `placeholder` spells every parameter of every statement), ids and times of operator filters. */
  readonly filter: FilterFlavour;
  /**
   * Runs one statement. `changed` counts the rows a changing statement changed: the rows of its
   * `returningId` clause, or the driver's count where there is none.
   */
  run(target: SqlTarget, sql: string, params?: unknown[]): Promise<StatementResult>;
  /** Ends a changing statement so that `run` can count its rows: ` RETURNING id`, or '' where the driver counts. */
  readonly returningId: string;
  /** An id column selected so that `String()` of what the driver returns is the decimal id. */
  selectId(column: string): string;
  /** Selects a time under `alias` so that `readTime` converts it; absent: selected as it is. */
  selectTime?(expression: string, alias: string): string;
  /** A time as the driver returned it, as a Date. */
  readTime(value: unknown): Date | null;
  /**
   * The locking clause of a subquery choosing rows to change, passing over rows others hold
   * (of `alias` only, when given); absent where no other writer can hold a row (SQLite).
   */
  skipLocked?(alias?: string): string;
  /** A hint after the table name of a statement finding rows by claim token; '' where the planner needs none. */
  readonly byClaimToken: string;
  /** A row `c` with an ordering key is claimable only when no earlier row of its key (and scope) is unfinished. */
  orderingRule(scope: MessageScope): string;
  /** The number of unfinished rows after row `c` in its ordering key (and scope). */
  laterUnfinishedCount(scope: MessageScope): string;
  /**
   * One UPDATE of a batch of claims, each row fenced by its claim token and PROCESSING status,
   * with the SET list `set` writes (reading each claim's `values` by name), counted by `run`.
   */
  updateClaims<T extends ClaimRef>(claims: T[], values: PerClaimValue<T>[], set: (names: ClaimBatchNames) => string): SqlQuery;
}

/** The `value` of a settle's names where it has no per-claim values: naming one is a bug. */
export function noPerClaimValues(name: string): never {
  throw new Error(`The settle has no per-claim value '${name}'`);
}
