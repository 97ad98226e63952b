import type { DataSource, QueryRunner } from 'typeorm';
import type { StandbyGate } from '../engine/standby-gate';
import type { ResolvedAwaitStandby } from '../options/await-standby';
import { InboxDialect } from './inbox-dialect';
import { OutboxDialect } from './outbox-dialect';
import { SchemaSql } from './schema-sql';

/**
 * Everything that differs between databases, for one DataSource: the outbox and inbox SQL, and
 * the tables' DDL (`schemaSql`). One implementation per database, chosen from the driver by
 * `resolveDialect`.
 */
export interface DatabaseDialect {
  /** For logs and errors, e.g. `postgres`, `mariadb 10.11 (SKIP LOCKED)`. */
  readonly description: string;
  /** Whether a second pool of connections to the same database can be opened (not SQLite's one connection). */
  readonly opensWorkerPool: boolean;
  /**
   * The worker pool's driver options (TypeORM's `extra`) with commits that do not wait for their
   * log flush, where the database can set that per session. Absent where it cannot.
   */
  withUnflushedCommits?(extra: Record<string, unknown>): Record<string, unknown>;
  /**
   * Makes sure no connection of `dataSource`'s pool can end the process with an error event
   * nobody listens to (where the driver has such a gap). Idempotent.
   */
  guardConnections?(dataSource: DataSource): void;
  /**
   * Whether a failed statement's `error` tells that the server rolled back the whole transaction
   * around it while the connection stays open, so that later statements would run in autocommit
   * (InnoDB on a deadlock). Absent where a failed transaction refuses every later statement until
   * it ends (PostgreSQL) or where no such error is known.
   */
  rollsBackTransaction?(error: unknown): boolean;
  /**
   * Whether the server said, answering a statement that succeeded on `runner` (`raw`: the driver's
   * result), that no transaction is open after it, so that one the application holds open has
   * ended on the server (a raw `COMMIT`, an implicit commit). Absent where the driver does not tell.
   */
  reportsNoTransaction?(raw: unknown, runner: QueryRunner): boolean;
  /**
   * What `awaitStandby` waits on: tells when the database's standbys hold every transaction
   * committed so far. Absent where the library cannot ask (only PostgreSQL can).
   */
  standbyGate?(workerDataSource: DataSource, settings: ResolvedAwaitStandby): StandbyGate;
  /**
   * The outbox table's statements. `schemaVersion`: the table's schema version as found at
   * start-up (`outboxStatementsVersion`), where the statements differ by version (MySQL and
   * MariaDB before version 4 have another ordering index); absent for the latest.
   */
  outbox(quotedTable: string, schemaVersion?: number): OutboxDialect;
  inbox(quotedTable: string): InboxDialect;
  /** The tables' DDL and catalog queries, which the migrations, start-up and the command line share. */
  readonly schemaSql: SchemaSql;
  /**
   * Where the DataSource has a single connection (SQLite), runs the library's own transactions
   * one after another: two at once would nest, the second a savepoint of the first. Absent where
   * each transaction has its own connection.
   */
  runTransactionsOneAtATime?<T>(work: () => Promise<T>): Promise<T>;
}
