import { Logger } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { DatabaseDialect } from '../dialects/database-dialect';
import { qualifiedTable } from '../dialects/resolve-dialect';
import { tableDdl } from '../migrations/table-migrations';

/**
 * What `synchronize: true` means for the library's tables: create them, with their indexes, when
 * missing. They are not TypeORM entities because their best shape differs by database (partial
 * indexes, INTEGER rowid keys on SQLite, time types), which an entity cannot express; the
 * statements are the migrations' own, so both paths make the same tables. Existing tables are
 * never altered.
 */
export async function createTablesAtStartup(dataSource: DataSource, dialect: DatabaseDialect, tables: { outbox: string; inbox: string }): Promise<void> {
  if (!dataSource.options.synchronize) return;
  const runner = dataSource.createQueryRunner();
  try {
    for (const [kind, table] of [['outbox', tables.outbox], ['inbox', tables.inbox]] as const) {
      for (const statement of tableDdl(dialect, kind, { table, quoted: qualifiedTable(dataSource, table), ifNotExists: true })) {
        await runner.query(statement);
      }
    }
  } finally {
    await runner.release();
  }
  new Logger('OutboxModule').debug(`Ensured tables ${tables.outbox} and ${tables.inbox} (${dialect.description})`);
}
