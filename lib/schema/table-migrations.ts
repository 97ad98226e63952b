import { MigrationInterface, QueryRunner } from 'typeorm';
import { qualifiedTable, resolveDialect } from '../dialects/resolve-dialect';
import { createTableDdl } from '../dialects/schema-sql';
import { TableKind } from '../naming/index-names';
import { assertTableName, DEFAULT_INBOX_TABLE, DEFAULT_OUTBOX_TABLE } from '../naming/table-names';
import { assertTableNameFits } from './table-name-limits';
import { tableColumns, upgradeOutboxTable } from './outbox-schema-version';
import { OutboxError } from '../errors';

/** A migration class, as TypeORM's `migrations` option takes it. */
export type MigrationClass = new () => MigrationInterface;

/**
 * How the migration creating a table of `kind` is named: this label, the table, the timestamp.
 * The command line finds it by this name in a DataSource's migrations.
 */
export const CREATING_MIGRATION_LABEL: Record<TableKind, string> = { outbox: 'CreateOutboxTable', inbox: 'CreateInboxTable' };

/**
 * Builds the migration that creates one of the library's tables with its indexes, in the SQL of
 * the database it runs on. Start-up creation under `synchronize` runs the same statements.
 */
function createTableMigration(kind: TableKind, table: string, timestamp: number): MigrationClass {
  return class CreateTable implements MigrationInterface {
    name = `${CREATING_MIGRATION_LABEL[kind]}_${table}${timestamp}`;

    async up(runner: QueryRunner): Promise<void> {
      const dialect = await resolveDialect(runner.connection);
      assertTableNameFits(kind, table, dialect.schemaSql.identifierLimit);
      for (const statement of createTableDdl(dialect.schemaSql, kind, { table, quoted: qualifiedTable(runner.connection, table), ifNotExists: false })) {
        await runner.query(statement);
      }
    }

    async down(runner: QueryRunner): Promise<void> {
      await runner.query(`DROP TABLE ${qualifiedTable(runner.connection, table)}`);
    }
  };
}

/** The migration creating the outbox table (PostgreSQL, MySQL/MariaDB or SQLite, as it runs). */
export function createOutboxTableMigration(tableName: string = DEFAULT_OUTBOX_TABLE, timestamp = 1764460800000): MigrationClass {
  return createTableMigration('outbox', assertTableName('tableName', tableName), timestamp);
}

/** The migration creating the inbox table. */
export function createInboxTableMigration(tableName: string = DEFAULT_INBOX_TABLE, timestamp = 1764460800001): MigrationClass {
  return createTableMigration('inbox', assertTableName('inboxTableName', tableName), timestamp);
}

/**
 * The migration upgrading an outbox table from schema version 1 (what `createOutboxTableMigration`
 * makes) to version 2: a `transport` column (existing rows get `'default'`), a `destination`
 * column, and the claim index per transport in place of the single claim index. A table already
 * of version 2 is left alone.
 */
export function createOutboxTableV2Migration(tableName: string = DEFAULT_OUTBOX_TABLE, timestamp = 1796169600000): MigrationClass {
  const table = assertTableName('tableName', tableName);
  return class UpgradeOutboxTable implements MigrationInterface {
    name = `UpgradeOutboxTableV2_${table}${timestamp}`;

    async up(runner: QueryRunner): Promise<void> {
      await upgradeOutboxTable(runner, await resolveDialect(runner.connection), table, 2);
    }

    async down(): Promise<void> {
      // Rows of other transports would silently go to the default one.
      throw new OutboxError(
        `${this.name} cannot be reverted: without the transport column, messages published for other transports would be sent by the default one`,
      );
    }
  };
}

/**
 * The migration upgrading an outbox table to schema version 3 (from version 2, or from version 1
 * through version 2): on PostgreSQL the `(biz_key, message_type)` unique key becomes a unique
 * index over the rows that have a business key, the same uniqueness with one index write less
 * for every insert, claim and settle of a message without one. It blocks writes to the table
 * while the index is built (one read of the table). On MySQL, MariaDB and SQLite version 3 is
 * version 2 and it changes nothing. Reverting gives PostgreSQL its constraint back.
 */
export function createOutboxTableV3Migration(tableName: string = DEFAULT_OUTBOX_TABLE, timestamp = 1796342400000): MigrationClass {
  const table = assertTableName('tableName', tableName);
  return class UpgradeOutboxTable implements MigrationInterface {
    name = `UpgradeOutboxTableV3_${table}${timestamp}`;

    async up(runner: QueryRunner): Promise<void> {
      await upgradeOutboxTable(runner, await resolveDialect(runner.connection), table, 3);
    }

    async down(runner: QueryRunner): Promise<void> {
      const dialect = await resolveDialect(runner.connection);
      for (const statement of dialect.schemaSql.outboxV3RevertDdl?.({ table, quoted: qualifiedTable(runner.connection, table), ifNotExists: false }) ?? []) {
        await runner.query(statement);
      }
    }
  };
}

/**
 * The migration upgrading an outbox table to schema version 4 (from version 3, or from an older
 * one through each version between): on MySQL and MariaDB a generated column, the ordering key
 * of unfinished rows only (NULL once a row is finished), and the ordering rule's index over it, in
 * place of `(ordering_key, status, id)`, which every claim and every settle rewrote for every row.
 * Now a row without an ordering key never touches the ordering index after its insert, and one
 * with a key once, when it finishes. One ALTER that reads the table once and blocks writes to it
 * meanwhile. On PostgreSQL and SQLite, whose ordering index is partial already, version 4 is
 * version 3 and it changes nothing. Reverting gives MySQL and MariaDB version 3's ordering index
 * back.
 */
export function createOutboxTableV4Migration(tableName: string = DEFAULT_OUTBOX_TABLE, timestamp = 1796515200000): MigrationClass {
  const table = assertTableName('tableName', tableName);
  return class UpgradeOutboxTable implements MigrationInterface {
    name = `UpgradeOutboxTableV4_${table}${timestamp}`;

    async up(runner: QueryRunner): Promise<void> {
      await upgradeOutboxTable(runner, await resolveDialect(runner.connection), table, 4);
    }

    async down(runner: QueryRunner): Promise<void> {
      const dialect = await resolveDialect(runner.connection);
      const column = dialect.schemaSql.outboxV4Column;
      // Only a table that has version 4's column: the ALTER would fail on one of version 3.
      if (column === undefined || !(await tableColumns(runner, dialect, table)).has(column)) return;
      for (const statement of dialect.schemaSql.outboxV4RevertDdl?.({ table, quoted: qualifiedTable(runner.connection, table), ifNotExists: false }) ?? []) {
        await runner.query(statement);
      }
    }
  };
}

/** The migrations of the outbox and inbox tables, for the default table names, in the order they apply. */
export const OUTBOX_MIGRATIONS: MigrationClass[] = [
  createOutboxTableMigration(),
  createInboxTableMigration(),
  createOutboxTableV2Migration(),
  createOutboxTableV3Migration(),
  createOutboxTableV4Migration(),
];
