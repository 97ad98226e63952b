import { MigrationInterface, QueryRunner } from 'typeorm';
import { archiveTableName, TableKind } from '../naming/index-names';
import { qualifiedTable, resolveDialect } from '../dialects/resolve-dialect';
import { assertTableName, DEFAULT_INBOX_TABLE, DEFAULT_OUTBOX_TABLE } from '../naming/table-names';
import { assertTableNameFits } from './table-name-limits';
import type { MigrationClass } from './table-migrations';

/** The tables whose archives `createArchiveTablesMigration` creates; the module's defaults when not given. */
export interface ArchiveTablesMigrationOptions {
  /** The outbox table, as `OutboxModule`'s `tableName`. */
  tableName?: string;
  /** The inbox table, as `OutboxModule`'s `inboxTableName`. */
  inboxTableName?: string;
  /**
   * The suffix of the migration's name, which TypeORM orders migrations by: a time in
   * milliseconds after the migrations that create the tables. Default: a fixed time, so the
   * name stays the same from build to build.
   */
  timestamp?: number;
}

/**
 * The migration creating the archive tables of retention's archive mode (`retentionMode:
 * 'archive'`): `<tableName>_archive` and `<inboxTableName>_archive`, beside the tables, with every
 * column of the tables at their latest schema version (run it after `OUTBOX_MIGRATIONS`), a key
 * of their own and `archived_at`. Start-up creation under `synchronize` runs the same statements.
 * Not part of `OUTBOX_MIGRATIONS`: only deployments that archive need the tables.
 */
export function createArchiveTablesMigration(options: ArchiveTablesMigrationOptions = {}): MigrationClass {
  const tables: [TableKind, string][] = [
    ['outbox', assertTableName('tableName', options.tableName ?? DEFAULT_OUTBOX_TABLE)],
    ['inbox', assertTableName('inboxTableName', options.inboxTableName ?? DEFAULT_INBOX_TABLE)],
  ];
  const timestamp = options.timestamp ?? 1798761600000;
  return class CreateArchiveTables implements MigrationInterface {
    name = `CreateArchiveTables_${tables[0][1]}_${tables[1][1]}${timestamp}`;

    async up(runner: QueryRunner): Promise<void> {
      const dialect = await resolveDialect(runner.connection);
      for (const [kind, table] of tables) assertTableNameFits(kind, table, dialect.schemaSql.identifierLimit);
      for (const [kind, table] of tables) {
        const quoted = qualifiedTable(runner.connection, archiveTableName(table));
        for (const statement of dialect.schemaSql.archiveTableDdl(kind, { table, quoted, ifNotExists: false })) await runner.query(statement);
      }
    }

    async down(runner: QueryRunner): Promise<void> {
      for (const [, table] of [...tables].reverse()) await runner.query(`DROP TABLE ${qualifiedTable(runner.connection, archiveTableName(table))}`);
    }
  };
}
