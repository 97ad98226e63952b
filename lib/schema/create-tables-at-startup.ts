import { Logger } from '@nestjs/common';
import { DataSource, QueryRunner } from 'typeorm';
import { DatabaseDialect } from '../dialects/database-dialect';
import { qualifiedTable } from '../dialects/resolve-dialect';
import { createTableDdl } from '../dialects/schema-sql';
import { TableKind } from '../naming/index-names';
import { LATEST_OUTBOX_VERSION, tableColumns, upgradeOutboxTable } from './outbox-schema-version';
import { outboxUpgradeSummary } from './outbox-upgrade-summary';
import { withSchemaLock } from './with-schema-lock';

/**
 * What `synchronize: true` means for the library's tables: create them, with their indexes, when
 * missing. TypeORM's `synchronize` does not make them (their entities are read models it skips)
 * because their best shape differs by database (partial indexes, INTEGER rowid keys on SQLite,
 * time types), which an entity cannot express; the statements are the migrations' own, in the same order (version 1, then each upgrade), so both
 * paths make the same tables. Existing tables are only ever upgraded, additively.
 */
export async function createTablesAtStartup(dataSource: DataSource, dialect: DatabaseDialect, tables: { outbox: string; inbox: string }): Promise<void> {
  if (!dataSource.options.synchronize) return;
  const created: string[] = [];
  const upgradedFrom = await withSchemaLock(dataSource, dialect, async (runner) => {
    for (const [kind, table] of [
      ['outbox', tables.outbox],
      ['inbox', tables.inbox],
    ] as const) {
      // Only a missing table: version 1's statements on an upgraded table would bring back the
      // index version 2 dropped. Another process starting now waits for the schema lock, or
      // (without one) finds every statement a no-op on what this one creates.
      if ((await tableColumns(runner, dialect, table)).size > 0) continue;
      await createTable(runner, dialect, kind, table);
      created.push(table);
    }
    return upgradeOutboxTable(runner, dialect, tables.outbox);
  });
  const logger = new Logger('OutboxModule');
  logger.debug(`Ensured tables ${tables.outbox} and ${tables.inbox} (${dialect.description})`);
  if (created.length > 0) logger.log(`Created ${created.length === 1 ? 'table' : 'tables'} ${created.join(' and ')} (${dialect.description})`);
  // A table made just now runs version 1's statements, then each upgrade's: that is a creation, not an upgrade.
  if (upgradedFrom !== null && !created.includes(tables.outbox)) {
    logger.log(
      `Upgraded the outbox table ${tables.outbox} from schema version ${upgradedFrom} to ${LATEST_OUTBOX_VERSION} (${outboxUpgradeSummary(dialect.schemaSql, upgradedFrom)})`,
    );
  }
}

/**
 * Creates a table of `kind` at schema version 1, with `IF NOT EXISTS`. Start-up creation and
 * `migrate` run it under the schema lock: without it, two PostgreSQL connections creating the
 * same table at once can fail on the catalog's unique key.
 */
export async function createTable(runner: QueryRunner, dialect: DatabaseDialect, kind: TableKind, table: string): Promise<void> {
  for (const statement of createTableDdl(dialect.schemaSql, kind, { table, quoted: qualifiedTable(runner.connection, table), ifNotExists: true })) {
    await runner.query(statement);
  }
}
