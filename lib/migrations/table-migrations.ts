import { MigrationInterface, QueryRunner } from 'typeorm';
import { qualifiedTable, resolveDialect } from '../dialects/resolve-dialect';
import { DatabaseDialect, TableDdl } from '../dialects/database-dialect';
import { assertTableName, DEFAULT_INBOX_TABLE, DEFAULT_OUTBOX_TABLE } from '../options/table-names';
import { assertTableNameFits } from '../schema/table-name-limits';

/** A migration class, as TypeORM's `migrations` option takes it. */
export type MigrationClass = new () => MigrationInterface;

type TableKind = 'outbox' | 'inbox';

/**
 * Builds the migration that creates one of the library's tables with its indexes, in the SQL of
 * the database it runs on. Start-up creation under `synchronize` runs the same statements.
 */
function createTableMigration(kind: TableKind, table: string, timestamp: number): MigrationClass {
  const label = kind === 'outbox' ? 'CreateOutboxTable' : 'CreateInboxTable';
  return class CreateTable implements MigrationInterface {
    name = `${label}_${table}${timestamp}`;

    async up(runner: QueryRunner): Promise<void> {
      const dialect = await resolveDialect(runner.connection);
      assertTableNameFits(kind, table, dialect.identifierLimit);
      for (const statement of tableDdl(dialect, kind, { table, quoted: qualifiedTable(runner.connection, table), ifNotExists: false })) {
        await runner.query(statement);
      }
    }

    async down(runner: QueryRunner): Promise<void> {
      await runner.query(`DROP TABLE ${qualifiedTable(runner.connection, table)}`);
    }
  };
}

/** The statements creating a table of `kind`. */
export function tableDdl(dialect: DatabaseDialect, kind: TableKind, request: TableDdl): string[] {
  return kind === 'outbox' ? dialect.outboxTableDdl(request) : dialect.inboxTableDdl(request);
}

/** The migration creating the outbox table (PostgreSQL, MySQL/MariaDB or SQLite, as it runs). */
export function createOutboxTableMigration(tableName: string = DEFAULT_OUTBOX_TABLE, timestamp = 1764460800000): MigrationClass {
  return createTableMigration('outbox', assertTableName('tableName', tableName), timestamp);
}

/** The migration creating the inbox table. */
export function createInboxTableMigration(tableName: string = DEFAULT_INBOX_TABLE, timestamp = 1764460800001): MigrationClass {
  return createTableMigration('inbox', assertTableName('inboxTableName', tableName), timestamp);
}

/** The migrations of the outbox and inbox tables, for the default table names. */
export const OUTBOX_MIGRATIONS: MigrationClass[] = [createOutboxTableMigration(), createInboxTableMigration()];
