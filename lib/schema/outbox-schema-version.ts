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
export const LATEST_OUTBOX_VERSION = 3;

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
 * Brings an outbox table to schema version `to` (the latest unless given) through each version
 * between; a table at `to` or of another shape is left alone. Returns the version it upgraded
 * from, null when it changed nothing. Two processes may upgrade at once (both starting under
 * `synchronize`): the one whose version 2 ALTER fails looks again, and is content when the other's
 * upgrade is there; version 3's one statement is a no-op on a table that has it.
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
