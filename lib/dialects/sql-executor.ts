import { DataSource, QueryResult } from 'typeorm';
import type { SqlTarget } from '../engine/sql-target';

// The engine names where a statement runs; the dialects take it from here, beside `execute`.
export type { SqlTarget };

/**
 * Runs one statement and returns TypeORM's structured result (rows and affected count), on the
 * transaction's own connection when given a transactional EntityManager.
 */
export async function execute(target: SqlTarget, sql: string, params: unknown[] = []): Promise<QueryResult> {
  if (target instanceof DataSource) {
    const runner = target.createQueryRunner();
    try {
      return await runner.query(sql, params, true);
    } finally {
      await runner.release();
    }
  }
  if (target.queryRunner) return target.queryRunner.query(sql, params, true);
  return execute(target.connection, sql, params);
}
