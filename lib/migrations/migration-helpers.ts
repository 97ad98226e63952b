import { MigrationInterface, QueryRunner } from 'typeorm';
import { stateIndexNames } from '../entities/state-columns';
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

/** DDL of the state-machine columns (see `STATE_COLUMNS`), shared by both tables. */
export const STATE_COLUMNS_DDL = `
          "status" character varying(20) NOT NULL,
          "attempts" integer NOT NULL DEFAULT 0,
          "max_attempts" integer NOT NULL,
          "next_attempt_at" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(),
          "claimed_at" TIMESTAMP WITH TIME ZONE,
          "claim_token" uuid,
          "claimed_by" character varying(200),
          "last_error" text,
          "created_at" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(),
          "processed_at" TIMESTAMP WITH TIME ZONE,`;

/** Creates the partial claim and reclaim indexes (see `stateIndices`). */
export async function createStateIndexes(runner: QueryRunner, table: string, quoted: string): Promise<void> {
  const names = stateIndexNames(table);
  await runner.query(`CREATE INDEX "${names.claimable}" ON ${quoted} ("id") WHERE status IN ('PENDING', 'FAILED')`);
  await runner.query(`CREATE INDEX "${names.processing}" ON ${quoted} ("claimed_at") WHERE status = 'PROCESSING'`);
}
