import { MigrationInterface, QueryRunner } from 'typeorm';
import { outboxIndexNames } from '../entities/outbox-message.entity';
import { assertTableName, DEFAULT_OUTBOX_TABLE } from '../options/table-names';
import { createInboxTableMigration } from './create-inbox-table.migration';
import { assertPostgres, createStateIndexes, MigrationClass, quotedTable, STATE_COLUMNS_DDL } from './migration-helpers';

export type { MigrationClass } from './migration-helpers';

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
      assertPostgres(runner);
      const t = quotedTable(runner, table);
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
          "headers" json NOT NULL,${STATE_COLUMNS_DDL}
          CONSTRAINT "${names.messageId}" UNIQUE ("message_id"),
          CONSTRAINT "${names.typeBizKey}" UNIQUE ("biz_key", "message_type"),
          CONSTRAINT "${names.primaryKey}" PRIMARY KEY ("id")
        )`);
      await createStateIndexes(runner, table, t);
    }

    async down(runner: QueryRunner): Promise<void> {
      await runner.query(`DROP TABLE ${quotedTable(runner, table)}`);
    }
  };
}

/** The migrations of the outbox and inbox tables, for the default table names. */
export const OUTBOX_MIGRATIONS: MigrationClass[] = [createOutboxTableMigration(), createInboxTableMigration()];
