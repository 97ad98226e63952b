import { MigrationInterface, QueryRunner } from 'typeorm';
import { outboxIndexNames } from '../entities/outbox-message.entity';
import { OutboxError } from '../errors';
import { assertTableName, DEFAULT_OUTBOX_TABLE } from '../options/table-names';

/** A migration class, as TypeORM's `migrations` option takes it. */
export type MigrationClass = new () => MigrationInterface;

/**
 * Builds the migration that creates the outbox table with its indexes, equivalent to what
 * `synchronize` makes from the entity. The schema is the DataSource's (search_path on PostgreSQL).
 */
export function createOutboxTableMigration(tableName: string = DEFAULT_OUTBOX_TABLE, timestamp = 1764460800000): MigrationClass {
  const table = assertTableName('tableName', tableName);
  const names = outboxIndexNames(table);
  return class CreateOutboxTable implements MigrationInterface {
    name = `CreateOutboxTable_${table}${timestamp}`;

    async up(runner: QueryRunner): Promise<void> {
      if (runner.connection.driver.options.type !== 'postgres') {
        throw new OutboxError(`No outbox migration for driver "${runner.connection.driver.options.type}" yet`);
      }
      const t = quoted(runner, table);
      await runner.query(`
        CREATE TABLE ${t} (
          "id" BIGSERIAL NOT NULL,
          "message_id" uuid NOT NULL,
          "message_type" character varying(255) NOT NULL,
          "biz_key" character varying(255),
          "ordering_key" character varying(255),
          "exchange" character varying(255) NOT NULL,
          "routing_key" character varying(255) NOT NULL,
          "payload" json NOT NULL,
          "headers" json NOT NULL,
          "status" character varying(20) NOT NULL,
          "attempts" integer NOT NULL DEFAULT 0,
          "max_attempts" integer NOT NULL,
          "next_attempt_at" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(),
          "claimed_at" TIMESTAMP WITH TIME ZONE,
          "claim_token" uuid,
          "claimed_by" character varying(200),
          "last_error" text,
          "created_at" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(),
          "processed_at" TIMESTAMP WITH TIME ZONE,
          CONSTRAINT "${names.messageId}" UNIQUE ("message_id"),
          CONSTRAINT "${names.typeBizKey}" UNIQUE ("biz_key", "message_type"),
          CONSTRAINT "${names.primaryKey}" PRIMARY KEY ("id")
        )`);
      await runner.query(
        `CREATE INDEX "${names.claimable}" ON ${t} ("id") WHERE status IN ('PENDING', 'FAILED')`,
      );
      await runner.query(
        `CREATE INDEX "${names.processing}" ON ${t} ("claimed_at") WHERE status = 'PROCESSING'`,
      );
    }

    async down(runner: QueryRunner): Promise<void> {
      await runner.query(`DROP TABLE ${quoted(runner, table)}`);
    }
  };
}

function quoted(runner: QueryRunner, table: string): string {
  const schema = (runner.connection.driver.options as { schema?: string }).schema;
  const escape = (name: string) => runner.connection.driver.escape(name);
  return schema ? `${escape(schema)}.${escape(table)}` : escape(table);
}

/** The outbox migrations for the default table name. */
export const OUTBOX_MIGRATIONS: MigrationClass[] = [createOutboxTableMigration()];
