import { DataSource } from 'typeorm';
import { OutboxError } from '../errors';
import { DatabaseDialect } from './database-dialect';
import { createMysqlDialect } from './mysql/mysql.dialect';
import { PostgresDialect } from './postgres/postgres.dialect';
import { createSqliteDialect } from './sqlite/sqlite.dialect';

/**
 * Picks the dialect from the DataSource's driver (there is no option to set), asking the server
 * what it supports where versions differ. The only place that branches on the driver.
 */
export async function resolveDialect(dataSource: DataSource): Promise<DatabaseDialect> {
  const type = dataSource.driver.options.type;
  switch (type) {
    case 'postgres':
      return new PostgresDialect();
    case 'mysql':
    case 'mariadb':
      return createMysqlDialect(dataSource);
    case 'better-sqlite3':
      return createSqliteDialect(dataSource);
    default:
      throw new OutboxError(`nestjs-outbox does not support the "${type}" driver; supported: postgres, mysql, mariadb, better-sqlite3`);
  }
}

/** The table name as SQL: quoted, and qualified with the DataSource's schema where it has one. */
export function qualifiedTable(dataSource: DataSource, tableName: string): string {
  const driver = dataSource.driver;
  const schema = (driver.options as { schema?: string }).schema;
  return schema ? `${driver.escape(schema)}.${driver.escape(tableName)}` : driver.escape(tableName);
}
