import { DataSource } from 'typeorm';
import { OutboxError } from '../errors';
import { OutboxDialect } from './outbox-dialect';
import { PostgresOutboxDialect } from './postgres.dialect';

/** Picks the dialect from the DataSource's driver: there is no option to set. */
export function resolveOutboxDialect(dataSource: DataSource, tableName: string): OutboxDialect {
  const driver = dataSource.driver;
  const schema = (driver.options as { schema?: string }).schema;
  const table = schema ? `${driver.escape(schema)}.${driver.escape(tableName)}` : driver.escape(tableName);
  switch (driver.options.type) {
    case 'postgres':
      return new PostgresOutboxDialect(table);
    default:
      throw new OutboxError(`nestjs-outbox does not support the "${driver.options.type}" driver yet; supported: postgres`);
  }
}
