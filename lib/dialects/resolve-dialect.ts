import { DataSource } from 'typeorm';
import { OutboxError } from '../errors';
import { InboxDialect } from './inbox-dialect';
import { OutboxDialect } from './outbox-dialect';
import { PostgresInboxDialect } from './postgres-inbox.dialect';
import { PostgresOutboxDialect } from './postgres.dialect';

/** Picks the outbox dialect from the DataSource's driver: there is no option to set. */
export function resolveOutboxDialect(dataSource: DataSource, tableName: string): OutboxDialect {
  assertSupported(dataSource);
  return new PostgresOutboxDialect(qualifiedTable(dataSource, tableName));
}

/** Picks the inbox dialect from the DataSource's driver. */
export function resolveInboxDialect(dataSource: DataSource, tableName: string): InboxDialect {
  assertSupported(dataSource);
  return new PostgresInboxDialect(qualifiedTable(dataSource, tableName));
}

function assertSupported(dataSource: DataSource): void {
  if (dataSource.driver.options.type !== 'postgres') {
    throw new OutboxError(`nestjs-outbox does not support the "${dataSource.driver.options.type}" driver yet; supported: postgres`);
  }
}

function qualifiedTable(dataSource: DataSource, tableName: string): string {
  const driver = dataSource.driver;
  const schema = (driver.options as { schema?: string }).schema;
  return schema ? `${driver.escape(schema)}.${driver.escape(tableName)}` : driver.escape(tableName);
}
