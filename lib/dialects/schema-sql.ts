import { TableKind } from '../naming/index-names';
import { SqlQuery } from './sql-query';

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
 * Everything one database needs to make, upgrade and recognise the library's tables: the DDL of
 * each schema version and of the archives, and the catalog queries that tell what a table is.
 * Each database's schema file is its one home; start-up creation and checks, the migrations and
 * the command line (`sql`, `migrate`, `status`) all read it, so they make and expect the same
 * tables. Needs no connection: `sql --dialect` prints it offline.
 */
export interface SchemaSql {
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
  /**
   * Schema version 4 of the outbox table, from version 3: on MySQL and MariaDB the ordering index
   * holds a generated column, the ordering key of unfinished rows only, which claims and settles
   * of most rows never change. None elsewhere: PostgreSQL's and SQLite's ordering index is
   * already partial, so version 4 is version 3 there. Not idempotent (no `ADD COLUMN IF NOT
   * EXISTS` on MySQL): callers check for `outboxV4Column` first.
   */
  outboxV4Ddl(request: TableDdl): string[];
  /** The column version 4 adds, which tells a table of version 4 from one of 3; absent where `outboxV4Ddl` is empty. */
  readonly outboxV4Column?: string;
  /** Version 4 undone (a reverted migration); absent where version 4 changed nothing. */
  outboxV4RevertDdl?(request: TableDdl): string[];
  inboxTableDdl(request: TableDdl): string[];
  /**
   * The archive retention moves finished rows of a table of `kind` to (`retentionMode:
   * 'archive'`): `request.table` is the archived table's plain name, from which the archive's
   * names derive, and `request.quoted` the archive table's quoted, qualified name.
   */
  archiveTableDdl(kind: TableKind, request: TableDdl): string[];
  /**
   * The statement listing the columns of `table`, one row per column with its name in `name`, and
   * no rows when the table does not exist; it must find the table exactly where the library's
   * statements will (the DataSource's schema, else the connection's search path or database).
   */
  tableColumnsQuery(table: TableLocation): SqlQuery;
  /**
   * A lock the library's DDL runs under, held by one connection at a time, where the database's
   * own `IF NOT EXISTS` is unsafe when two connections create the same table at once (PostgreSQL
   * checks, then inserts into its catalog: the second fails on the catalog's unique key). Absent
   * where the DDL already waits for the other (MySQL's metadata locks, SQLite's one writer).
   */
  readonly schemaLock?: { acquire: string; release: string };
  /** Absent where identifiers have no practical length limit (SQLite). */
  readonly identifierLimit?: IdentifierLimit;
}

/** The statements creating a table of `kind` at schema version 1. */
export function createTableDdl(sql: SchemaSql, kind: TableKind, request: TableDdl): string[] {
  return kind === 'outbox' ? sql.outboxTableDdl(request) : sql.inboxTableDdl(request);
}

/** The statements taking an outbox table from schema version `version - 1` to `version` (2 to 4); none where that version changes nothing on this database. */
export function outboxUpgradeDdl(sql: SchemaSql, version: 2 | 3 | 4, request: TableDdl): string[] {
  if (version === 2) return sql.outboxV2Ddl(request);
  return version === 3 ? sql.outboxV3Ddl(request) : sql.outboxV4Ddl(request);
}
