import { MigrationInterface, QueryRunner } from 'typeorm';
import { inboxIndexNames } from '../entities/inbox-message.entity';
import { assertTableName, DEFAULT_INBOX_TABLE } from '../options/table-names';
import { assertPostgres, createStateIndexes, MigrationClass, quotedTable, STATE_COLUMNS_DDL } from './migration-helpers';

/**
 * Builds the migration that creates the inbox table with its indexes, equivalent to what
 * `synchronize` makes from the entity.
 */
export function createInboxTableMigration(tableName: string = DEFAULT_INBOX_TABLE, timestamp = 1764460800001): MigrationClass {
  const table = assertTableName('inboxTableName', tableName);
  const names = inboxIndexNames(table);
  return class CreateInboxTable implements MigrationInterface {
    name = `CreateInboxTable_${table}${timestamp}`;

    async up(runner: QueryRunner): Promise<void> {
      assertPostgres(runner);
      const t = quotedTable(runner, table);
      await runner.query(`
        CREATE TABLE ${t} (
          "id" BIGSERIAL NOT NULL,
          "consumer" character varying(200) NOT NULL,
          "message_id" character varying(255) NOT NULL,
          "message_type" character varying(255) NOT NULL DEFAULT '',
          "biz_key" character varying(255),
          "exchange" character varying(255) NOT NULL,
          "routing_key" character varying(255) NOT NULL,
          "payload" text NOT NULL,
          "headers" json NOT NULL,${STATE_COLUMNS_DDL}
          CONSTRAINT "${names.consumerMessageId}" UNIQUE ("consumer", "message_id"),
          CONSTRAINT "${names.consumerBizKey}" UNIQUE ("consumer", "biz_key", "message_type"),
          CONSTRAINT "${names.primaryKey}" PRIMARY KEY ("id")
        )`);
      await createStateIndexes(runner, table, t);
    }

    async down(runner: QueryRunner): Promise<void> {
      await runner.query(`DROP TABLE ${quotedTable(runner, table)}`);
    }
  };
}
