import { getTransactionHostToken, TransactionHost } from '@nestjs-cls/transactional';
import type { Provider } from '@nestjs/common';
import type { DataSource } from 'typeorm';
import { OUTBOX_DATA_SOURCE } from './injection-tokens';
import { OutboxIdentity } from './outbox-identity';
import { assertTransactionsOnOutboxDataSource } from './transaction-data-source';

/**
 * Injection token, inside one `OutboxModule`, of the `TransactionHost` whose transactions the
 * outbox joins (`publish()`, the inbox's transactions): the nestjs-cls transactional connection
 * named by `transactionConnectionName`, or the unnamed one. Absent (undefined) when the
 * application registers no such connection.
 */
export const OUTBOX_TRANSACTION_HOST = Symbol('OUTBOX_TRANSACTION_HOST');

/**
 * The provider of `OUTBOX_TRANSACTION_HOST` for the connection `connectionName` (undefined: the
 * unnamed one), which fails the start-up when that connection works on another DataSource than
 * the outbox's (`dataSourceName`).
 */
export function outboxTransactionHostProvider(connectionName: string | undefined, dataSourceName: string | undefined): Provider {
  return {
    provide: OUTBOX_TRANSACTION_HOST,
    inject: [{ token: getTransactionHostToken(connectionName), optional: true }, OUTBOX_DATA_SOURCE, OutboxIdentity],
    useFactory: (host: TransactionHost | undefined, dataSource: DataSource, identity: OutboxIdentity) => {
      assertTransactionsOnOutboxDataSource(host, dataSource, identity, dataSourceName);
      return host;
    },
  };
}

/** What to add to "register ClsPluginTransactional" when the outbox joins a named connection. */
export function transactionConnectionHint(identity: OutboxIdentity): string {
  const connection = identity.transactionConnectionName;
  return connection === undefined ? '' : ` with connectionName ${JSON.stringify(connection)} (the transactionConnectionName of ${identity.describe()})`;
}
