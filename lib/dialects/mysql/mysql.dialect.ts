import { DataSource } from 'typeorm';
import { OutboxError } from '../../errors';
import { DatabaseDialect } from '../database-dialect';

/** MySQL 8 / MariaDB. */
export async function createMysqlDialect(dataSource: DataSource): Promise<DatabaseDialect> {
  throw new OutboxError(`the ${dataSource.driver.options.type} dialect is not built yet`);
}
