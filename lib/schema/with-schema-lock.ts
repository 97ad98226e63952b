import { DataSource, QueryRunner } from 'typeorm';
import { DatabaseDialect } from '../dialects/database-dialect';
import { withQueryRunner } from './outbox-schema-version';

/**
 * Runs `work` (the library's DDL) on a query runner of its own, under the dialect's schema lock
 * where it has one: replicas starting together under `synchronize`, or `migrate` beside one, then
 * create and upgrade the tables one after the other, each finding what the one before made.
 */
export async function withSchemaLock<T>(dataSource: DataSource, dialect: DatabaseDialect, work: (runner: QueryRunner) => Promise<T>): Promise<T> {
  return withQueryRunner(dataSource, async (runner) => {
    const lock = dialect.schemaSql.schemaLock;
    if (!lock) return work(runner);
    await runner.query(lock.acquire);
    try {
      return await work(runner);
    } finally {
      await runner.query(lock.release);
    }
  });
}
