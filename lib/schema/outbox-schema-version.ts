import { DataSource, QueryRunner } from 'typeorm';
import { DatabaseDialect } from '../dialects/database-dialect';
import { qualifiedTable } from '../dialects/resolve-dialect';
import { TABLE_COLUMNS } from './table-columns';
import { tableLocation } from './table-location';

/** The columns schema version 2 added to the outbox table: a table without them is of version 1. */
export const OUTBOX_V2_COLUMNS: readonly string[] = ['transport', 'destination'];

/** The lower-cased names of the table's columns; none when it does not exist. */
export async function tableColumns(runner: QueryRunner, dialect: DatabaseDialect, table: string): Promise<Set<string>> {
  const query = dialect.tableColumnsQuery(tableLocation(runner.connection, table));
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

/**
 * Brings an outbox table of version 1 to version 2; a table that has the columns is left alone.
 * Two processes may upgrade at once (both starting under `synchronize`): the one whose ALTER
 * fails looks again, and is content when the other's upgrade is there.
 */
export async function upgradeOutboxTable(runner: QueryRunner, dialect: DatabaseDialect, table: string): Promise<boolean> {
  if (!isOutboxV1(await tableColumns(runner, dialect, table))) return false;
  try {
    for (const statement of dialect.outboxV2Ddl({ table, quoted: qualifiedTable(runner.connection, table), ifNotExists: true })) {
      await runner.query(statement);
    }
    return true;
  } catch (error) {
    if (!isOutboxV1(await tableColumns(runner, dialect, table))) return false;
    throw error;
  }
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
