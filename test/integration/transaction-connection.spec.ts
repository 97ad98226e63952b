import { ClsPluginTransactional } from '@nestjs-cls/transactional';
import { TransactionalAdapterTypeOrm } from '@nestjs-cls/transactional-adapter-typeorm';
import { ConsoleLogger, Module } from '@nestjs/common';
import { ScheduleModule } from '@nestjs/schedule';
import { Test, TestingModule } from '@nestjs/testing';
import { getDataSourceToken, TypeOrmModule } from '@nestjs/typeorm';
import { ClsModule } from 'nestjs-cls';
import { OutboxModule, OutboxOptionsError } from '../../lib';
import { CapturingOutboxTransport } from '../../lib/testing';
import { testDatabase } from '../support/database';
import { closeFailedStart } from '../support/failed-start';
import { STARTUP_TIMEOUT_MS, timeoutFor } from '../support/wait';

const database = testDatabase('it_transaction_connection');

/**
 * Two DataSources (both on this file's namespace), a nestjs-cls connection on each, and one named
 * outbox on `billing` that joins the connection `transactionConnectionName` names.
 */
async function start(transactionConnectionName: string): Promise<TestingModule> {
  @Module({
    imports: [
      ClsModule.forRoot({
        global: true,
        plugins: [
          new ClsPluginTransactional({
            connectionName: 'orders',
            imports: [TypeOrmModule],
            adapter: new TransactionalAdapterTypeOrm({ dataSourceToken: getDataSourceToken() }),
          }),
          new ClsPluginTransactional({
            connectionName: 'billing',
            imports: [TypeOrmModule],
            adapter: new TransactionalAdapterTypeOrm({ dataSourceToken: getDataSourceToken('billing') }),
          }),
        ],
      }),
      TypeOrmModule.forRoot({ ...database.dataSourceOptions(), autoLoadEntities: true }),
      TypeOrmModule.forRoot({ ...database.dataSourceOptions(), name: 'billing', autoLoadEntities: true }),
      ScheduleModule.forRoot(),
      OutboxModule.forRoot({ name: 'billing', dataSourceName: 'billing', transactionConnectionName, transport: CapturingOutboxTransport }),
    ],
  })
  class TransactionConnectionModule {}
  const module = await Test.createTestingModule({ imports: [TransactionConnectionModule] })
    .setLogger(new ConsoleLogger({ logLevels: ['error'] }))
    .compile();
  try {
    await module.init();
  } catch (error) {
    await closeFailedStart(module);
    throw error;
  }
  return module;
}

describe('An outbox and the transaction connection it joins', () => {
  beforeAll(() => database.reset(), STARTUP_TIMEOUT_MS);

  it(
    'refuses at start-up a transactionConnectionName on another DataSource than dataSourceName, naming both options',
    async () => {
      const failure = start('orders');
      await expect(failure).rejects.toThrow(OutboxOptionsError);
      await expect(failure).rejects.toThrow(/transactionConnectionName \("orders"\).*dataSourceName \("billing"\)/);
    },
    timeoutFor(STARTUP_TIMEOUT_MS),
  );

  it(
    'starts when the connection works on the outbox DataSource',
    async () => {
      const module = await start('billing');
      await module.close();
    },
    timeoutFor(STARTUP_TIMEOUT_MS),
  );
});
