import { MigrationInterface, QueryRunner } from 'typeorm';
import { OutboxError } from '../errors';

/** A migration class, as TypeORM's `migrations` option takes it. */
export type MigrationClass = new () => MigrationInterface;

/** The migrations' SQL is PostgreSQL's; other databases get a clear error, not broken DDL. */
export function assertPostgres(runner: QueryRunner): void {
  if (runner.connection.driver.options.type !== 'postgres') {
    throw new OutboxError(`No nestjs-outbox migration for driver "${runner.connection.driver.options.type}" yet`);
  }
}

/** The table name, quoted and qualified with the DataSource's schema when one is set. */
export function quotedTable(runner: QueryRunner, table: string): string {
  const schema = (runner.connection.driver.options as { schema?: string }).schema;
  const escape = (name: string) => runner.connection.driver.escape(name);
  return schema ? `${escape(schema)}.${escape(table)}` : escape(table);
}
