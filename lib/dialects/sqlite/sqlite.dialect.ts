import { DataSource } from 'typeorm';
import { OutboxError } from '../../errors';
import { DatabaseDialect } from '../database-dialect';

/** SQLite through better-sqlite3. */
export function createSqliteDialect(dataSource: DataSource): DatabaseDialect {
  throw new OutboxError(`the ${dataSource.driver.options.type} dialect is not built yet`);
}
