import { DataSource, QueryResult } from 'typeorm';
import type { SqlTarget } from '../engine/sql-target';
import { namingMissingTable } from './missing-table';
import { boundedQuery, statementDeadline } from './statement-deadline';

// The engine names where a statement runs; the dialects take it from here, beside `execute`.
export type { SqlTarget };

/**
 * Runs one statement and returns TypeORM's structured result (rows and affected count), on the
 * transaction's own connection when given a transactional EntityManager; within the bound
 * `withStatementDeadline` sets, if any. A table that does not exist is `OutboxTableMissingError`.
 */
export async function execute(target: SqlTarget, sql: string, params: unknown[] = []): Promise<QueryResult> {
  try {
    return await run(target, sql, params);
  } catch (error) {
    throw namingMissingTable(error);
  }
}

async function run(target: SqlTarget, sql: string, params: unknown[]): Promise<QueryResult> {
  const deadline = statementDeadline();
  if (target instanceof DataSource) {
    const runner = target.createQueryRunner();
    try {
      const query = runner.query(sql, params, true);
      return await (deadline ? boundedQuery(runner, query, deadline) : query);
    } finally {
      await runner.release();
    }
  }
  if (target.queryRunner) {
    const query = target.queryRunner.query(sql, params, true);
    return deadline ? boundedQuery(target.queryRunner, query, deadline) : query;
  }
  return run(target.connection, sql, params);
}
