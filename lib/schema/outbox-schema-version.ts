import { DataSource, QueryRunner } from 'typeorm';
import { DatabaseDialect } from '../dialects/database-dialect';
import { qualifiedTable } from '../dialects/resolve-dialect';
import { OUTBOX_V2_COLUMNS, TABLE_COLUMNS } from './table-columns';
import { tableLocation } from './table-location';

/** The lower-cased names of the table's columns; none when it does not exist. */
export async function tableColumns(runner: QueryRunner, dialect: DatabaseDialect, table: string): Promise<Set<string>> {
  const query = dialect.schemaSql.tableColumnsQuery(tableLocation(runner.connection, table));
  const rows = (await runner.query(query.sql, query.params)) as { name: string }[];
  return new Set(rows.map((row) => row.name.toLowerCase()));
}

/**
 * Whether a table (given its columns) is an outbox table of version 1, waiting for the version 2
 * upgrade: every column version 1 has, none of version 2's. A table of any other shape (a
 * business table named as `tableName` by mistake) is never altered.
 */
export function isOutboxV1(columns: Set<string>): boolean {
  // An inbox table has every column of version 1 too, and its consumer besides.
  if (INBOX_ONLY_COLUMNS.some((column) => columns.has(column))) return false;
  return TABLE_COLUMNS.outbox.every((column) => columns.has(column) !== OUTBOX_V2_COLUMNS.includes(column));
}

/** The inbox's columns that no outbox table has. */
const INBOX_ONLY_COLUMNS = TABLE_COLUMNS.inbox.filter((column) => !TABLE_COLUMNS.outbox.includes(column));

/** The outbox table's newest schema version, which start-up creation, `migrate` and `OUTBOX_MIGRATIONS` bring it to. */
export const LATEST_OUTBOX_VERSION = 4;

/**
 * Whether an outbox table of version 2 or later (given its columns) still waits for version 3's
 * DDL; never where the dialect's version 3 is its version 2, nor for a table of another shape.
 */
export async function isOutboxV3Pending(runner: QueryRunner, dialect: DatabaseDialect, table: string, columns: Set<string>): Promise<boolean> {
  const { schemaSql } = dialect;
  if (!schemaSql.outboxV3PendingQuery || !TABLE_COLUMNS.outbox.every((column) => columns.has(column))) return false;
  const query = schemaSql.outboxV3PendingQuery(tableLocation(runner.connection, table));
  return ((await runner.query(query.sql, query.params)) as unknown[]).length > 0;
}

/**
 * Whether an outbox table (given its columns) still waits for version 4's DDL: it has every
 * column of version 2 on, but not the one version 4 adds. Never where version 4 is version 3,
 * nor for a table of another shape. No query: the columns tell.
 */
export function isOutboxV4Pending(dialect: DatabaseDialect, columns: Set<string>): boolean {
  const column = dialect.schemaSql.outboxV4Column;
  return column !== undefined && TABLE_COLUMNS.outbox.every((name) => columns.has(name)) && !columns.has(column);
}

/**
 * The schema version of a usable outbox table (given its columns: every column the library
 * uses): 2 while version 3's DDL waits, 3 while version 4's does, else the latest.
 */
export async function usableOutboxVersion(runner: QueryRunner, dialect: DatabaseDialect, table: string, columns: Set<string>): Promise<number> {
  if (await isOutboxV3Pending(runner, dialect, table, columns)) return 2;
  return isOutboxV4Pending(dialect, columns) ? 3 : LATEST_OUTBOX_VERSION;
}

/**
 * The schema version the outbox dialect's statements are built for (`DatabaseDialect.outbox`),
 * from one catalog query: 3 while version 4 waits, whose ordering statements differ on MySQL and
 * MariaDB; the latest otherwise (no statement depends on version 3's change, nor on a missing
 * table, which start-up refuses or creates first).
 */
export async function outboxStatementsVersion(dataSource: DataSource, dialect: DatabaseDialect, table: string): Promise<number> {
  if (dialect.schemaSql.outboxV4Column === undefined) return LATEST_OUTBOX_VERSION;
  const columns = await withQueryRunner(dataSource, (runner) => tableColumns(runner, dialect, table));
  return isOutboxV4Pending(dialect, columns) ? 3 : LATEST_OUTBOX_VERSION;
}

/**
 * Brings an outbox table to schema version `to` (the latest unless given) through each version
 * between; a table at `to` or of another shape is left alone. Returns the version it upgraded
 * from, null when it changed nothing. Two processes may upgrade at once (both starting under
 * `synchronize`, where no schema lock orders them): the one whose version 2 or 4 ALTER fails looks
 * again, and is content when the other's upgrade is there; version 3's one statement is a no-op on
 * a table that has it.
 */
export async function upgradeOutboxTable(
  runner: QueryRunner,
  dialect: DatabaseDialect,
  table: string,
  to: number = LATEST_OUTBOX_VERSION,
): Promise<number | null> {
  const request = { table, quoted: qualifiedTable(runner.connection, table), ifNotExists: true };
  let from: number | null = null;
  let columns = await tableColumns(runner, dialect, table);
  if (isOutboxV1(columns)) {
    try {
      for (const statement of dialect.schemaSql.outboxV2Ddl(request)) await runner.query(statement);
      from = 1;
    } catch (error) {
      if (isOutboxV1(await tableColumns(runner, dialect, table))) throw error;
    }
    columns = await tableColumns(runner, dialect, table);
  }
  if (to >= 3 && (await isOutboxV3Pending(runner, dialect, table, columns))) {
    for (const statement of dialect.schemaSql.outboxV3Ddl(request)) await runner.query(statement);
    from ??= 2;
  }
  if (to >= 4 && isOutboxV4Pending(dialect, columns)) {
    try {
      for (const statement of dialect.schemaSql.outboxV4Ddl(request)) await runner.query(statement);
      from ??= 3;
    } catch (error) {
      if (isOutboxV4Pending(dialect, await tableColumns(runner, dialect, table))) throw error;
    }
  }
  return from;
}

/** Runs `work` with a query runner of its own. */
export async function withQueryRunner<T>(dataSource: DataSource, work: (runner: QueryRunner) => Promise<T>): Promise<T> {
  const runner = dataSource.createQueryRunner();
  try {
    return await work(runner);
  } finally {
    await runner.release();
  }
}
