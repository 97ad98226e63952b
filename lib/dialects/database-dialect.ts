import type { DataSource, QueryRunner } from 'typeorm';
import type { StandbyGate } from '../engine/standby-gate';
import type { ResolvedAwaitStandby } from '../options/await-standby';
import { InboxDialect } from './inbox-dialect';
import { TableKind } from '../naming/index-names';
import { OutboxDialect } from './outbox-dialect';

/** A table's DDL request: its plain name (for index names) and its quoted, qualified name. */
export interface TableDdl {
  table: string;
  quoted: string;
  /** Start-up creation for `synchronize`: every statement is a no-op when the object exists. */
  ifNotExists: boolean;
}

/** One of the library's tables, where its statements find it. */
export interface TableLocation {
  /** The plain name. */
  name: string;
  /** Quoted, and qualified with the DataSource's schema where it has one: as statements name it. */
  quoted: string;
  /** The DataSource's schema (PostgreSQL) or database, where its options name one. */
  schema?: string;
}

/** A statement and its parameters. */
export interface SqlQuery {
  sql: string;
  params: unknown[];
}

/**
 * The longest identifier (table, constraint or index name) a database keeps. Index names are
 * derived from table names, so this bounds the table names too.
 */
export interface IdentifierLimit {
  /** The database as users know it, for messages: `PostgreSQL`, `MariaDB`, `MySQL`. */
  database: string;
  max: number;
  /** How the database measures identifiers: PostgreSQL counts bytes, MySQL characters. */
  unit: 'bytes' | 'characters';
  /** What the database does with a longer identifier, as the end of a sentence. */
  beyond: string;
}

/**
 * Everything that differs between databases, for one DataSource: the outbox and inbox SQL, and
 * the tables' DDL (used by the migrations and by start-up creation alike, so both make the
 * same tables). One implementation per database, chosen from the driver by `resolveDialect`.
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
  outbox(quotedTable: string): OutboxDialect;
  inbox(quotedTable: string): InboxDialect;
  /** The outbox table of schema version 1, as `createOutboxTableMigration` has always made it. */
  outboxTableDdl(request: TableDdl): string[];
  /**
   * Schema version 2 of the outbox table (transport and destination columns, the claim index per
   * transport), from version 1. Idempotent only where the database has `IF NOT EXISTS` for every
   * statement (`ifNotExists` is ignored): callers check the columns first.
   */
  outboxV2Ddl(request: TableDdl): string[];
  /**
   * Schema version 3 of the outbox table, from version 2: on PostgreSQL the business-key unique
   * key holds only rows with a business key. None where version 3 is version 2 (MySQL and MariaDB
   * have no partial indexes; SQLite's key is part of its table, which only a rebuild changes).
   * Each statement is atomic and idempotent.
   */
  outboxV3Ddl(request: TableDdl): string[];
  /**
   * The statement telling whether an outbox table of version 2 or later still waits for
   * `outboxV3Ddl`: a row when it does. Absent where that DDL is empty.
   */
  outboxV3PendingQuery?(table: TableLocation): SqlQuery;
  /** Version 3 undone (a reverted migration); absent where version 3 changed nothing. */
  outboxV3RevertDdl?(request: TableDdl): string[];
  inboxTableDdl(request: TableDdl): string[];
  /**
   * The archive retention moves finished rows of a table of `kind` to (`retentionMode:
   * 'archive'`): `request.table` is the archived table's plain name, from which the archive's
   * names derive, and `request.quoted` the archive table's quoted, qualified name.
   */
  archiveTableDdl(kind: TableKind, request: TableDdl): string[];
  /** Absent where identifiers have no practical length limit (SQLite). */
  readonly identifierLimit?: IdentifierLimit;
  /**
   * The statement listing the columns of `table`, one row per column with its name in `name`, and
   * no rows when the table does not exist; it must find the table exactly where the library's
   * statements will (the DataSource's schema, else the connection's search path or database).
   */
  tableColumnsQuery(table: TableLocation): SqlQuery;
  /**
   * Where the DataSource has a single connection (SQLite), runs the library's own transactions
   * one after another: two at once would nest, the second a savepoint of the first. Absent where
   * each transaction has its own connection.
   */
  runTransactionsOneAtATime?<T>(work: () => Promise<T>): Promise<T>;
}
