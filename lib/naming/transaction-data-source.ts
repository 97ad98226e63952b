import type { TransactionHost } from '@nestjs-cls/transactional';
import type { DataSource } from 'typeorm';
import { OutboxOptionsError } from '../errors';
import type { OutboxIdentity } from './outbox-identity';

/**
 * Refuses at start-up an outbox whose transaction connection works on another DataSource than
 * the one holding its table: `publish()` would be handed a transaction it cannot write in, and
 * every message would fail its attempts and go to MANUAL_REQUIRED. The connection's DataSource is
 * known from its adapter's non-transactional instance (the TypeORM adapter's `dataSource.manager`);
 * an adapter whose instance is not a TypeORM manager is left to `publish()` to judge.
 */
export function assertTransactionsOnOutboxDataSource(
  host: TransactionHost | undefined,
  dataSource: DataSource,
  identity: OutboxIdentity,
  dataSourceName: string | undefined,
): void {
  if (!host) return;
  let connection: unknown;
  try {
    connection = (host.tx as { connection?: unknown } | undefined)?.connection;
  } catch {
    return;
  }
  if (!isDataSource(connection) || connection === dataSource) return;
  const connectionName = identity.transactionConnectionName === undefined ? 'the unnamed connection' : JSON.stringify(identity.transactionConnectionName);
  throw new OutboxOptionsError([
    `transactionConnectionName (${connectionName}) joins transactions of another DataSource than dataSourceName (${JSON.stringify(dataSourceName ?? 'default')}) puts ${identity.describe()} on: publish() could never write in them. Give ${identity.describe()} the transactionConnectionName of the ClsPluginTransactional whose adapter's dataSourceToken is getDataSourceToken(${dataSourceName === undefined ? '' : JSON.stringify(dataSourceName)}), or the dataSourceName of that connection's DataSource`,
  ]);
}

function isDataSource(value: unknown): value is DataSource {
  return typeof value === 'object' && value !== null && 'manager' in value && 'driver' in value && 'options' in value;
}
