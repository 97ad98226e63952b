import { DataSource } from 'typeorm';
import { namingMissingTable } from '../missing-table';
import { SqlTarget } from '../sql-executor';
import { sqliteConnectionOf } from './sqlite-connection';
import { SqliteRow } from './sqlite-statements';

/**
 * Runs one statement and returns its rows (SELECT, RETURNING; [] for others). Given a manager of
 * an open transaction, inside that transaction, through TypeORM; given the DataSource (or a
 * manager outside any transaction), on its own, outside whatever transaction the application
 * has open on the one SQLite connection (see `SqliteConnection`). A table that does not exist is
 * `OutboxTableMissingError`.
 */
export async function sqliteExecute(target: SqlTarget, sql: string, params: unknown[] = []): Promise<SqliteRow[]> {
  try {
    return await run(target, sql, params);
  } catch (error) {
    throw namingMissingTable(error);
  }
}

async function run(target: SqlTarget, sql: string, params: unknown[]): Promise<SqliteRow[]> {
  if (!(target instanceof DataSource) && target.queryRunner?.isTransactionActive) {
    const result = await target.queryRunner.query(sql, params, true);
    return result.records ?? [];
  }
  const dataSource = target instanceof DataSource ? target : target.connection;
  return sqliteConnectionOf(dataSource).outsideTransaction((statements) => statements.all(sql, params));
}
