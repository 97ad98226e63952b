import { RabbitMQModule } from '@golevelup/nestjs-rabbitmq';
import { Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { ScheduleModule } from '@nestjs/schedule';
import { TypeOrmModule } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import { OutboxError, OutboxModule, OutboxOptionsError } from '../../lib';
import { testDatabase } from '../support/database';
import { AMQP_URL } from '../support/environment';
import { STARTUP_TIMEOUT_MS, timeoutFor } from '../support/wait';

const database = testDatabase('it_module_bootstrap');

const rabbit = () => RabbitMQModule.forRoot({ uri: AMQP_URL, connectionInitOptions: { wait: false } });
const openDataSources: Promise<DataSource>[] = [];

/**
 * Every DataSource is tracked: a boot that fails must not leave a connection (or a schema
 * synchronisation) running in the background, racing the next test's.
 */
const typeOrm = () =>
  TypeOrmModule.forRootAsync({
    useFactory: () => ({ ...database.dataSourceOptions(), autoLoadEntities: true, retryAttempts: 0 }),
    dataSourceFactory: async (options) => {
      const initialized = new DataSource(options!).initialize();
      openDataSources.push(initialized);
      return initialized;
    },
  });

/**
 * An outbox on the application's pool: a boot that fails after the library opened a pool of its
 * own runs no shutdown hook to close it, and on MariaDB its idle connections would hold the test
 * process open. What these tests check does not depend on that pool.
 */
const outbox = (options: Parameters<typeof OutboxModule.forRoot>[0] = {}) => OutboxModule.forRoot({ workerPoolSize: 0, ...options });

async function boot(imports: unknown[]): Promise<void> {
  @Module({ imports: imports as never[] })
  class AppModule {}
  const app = await NestFactory.createApplicationContext(AppModule, { logger: false, abortOnError: false });
  await app.close();
}

describe('OutboxModule start-up checks', () => {
  beforeAll(() => database.reset());

  afterEach(async () => {
    // A failed boot may return before its DataSource finished connecting: wait, then close it.
    for (const initialized of openDataSources.splice(0)) {
      const dataSource = await initialized.catch(() => undefined);
      if (dataSource?.isInitialized) await dataSource.destroy();
    }
    // Likewise golevelup's connections, which it keeps in a process-wide registry.
    const registry = (RabbitMQModule as unknown as { connectionManager: { close(): Promise<void>; clearConnections(): void } }).connectionManager;
    await registry.close();
    registry.clearConnections();
  });

  it('fails where the module is declared, naming an invalid option', () => {
    expect(() => OutboxModule.forRoot({ batchSize: 0 })).toThrow(OutboxOptionsError);
    expect(() => OutboxModule.forRoot({ batchSize: 0 })).toThrow(/batchSize/);
  });

  it(
    'validates options that come from an async factory too',
    async () => {
      const module = OutboxModule.forRootAsync({ useFactory: async () => ({ maxAttempts: -1 }) });
      await expect(boot([typeOrm(), ScheduleModule.forRoot(), rabbit(), module])).rejects.toThrow(/maxAttempts/);
    },
    timeoutFor(STARTUP_TIMEOUT_MS),
  );

  it(
    'refuses awaitStandby on a database whose standbys it cannot ask, and boots with it on PostgreSQL',
    async () => {
      const booting = boot([typeOrm(), ScheduleModule.forRoot(), rabbit(), outbox({ awaitStandby: { standbys: ['standby1'] } })]);
      if (database.kind === 'postgres') await expect(booting).resolves.toBeUndefined();
      else await expect(booting).rejects.toThrow(/awaitStandby needs PostgreSQL/);
    },
    timeoutFor(STARTUP_TIMEOUT_MS),
  );

  it('rejects a table name that is not a plain identifier before anything starts', () => {
    expect(() => OutboxModule.forRoot({ tableName: 'outbox; DROP TABLE users' })).toThrow(/tableName must be a plain SQL identifier/);
  });

  it(
    'fails fast when ScheduleModule.forRoot() is missing',
    async () => {
      await expect(boot([typeOrm(), rabbit(), outbox()])).rejects.toThrow(/ScheduleModule\.forRoot\(\)/);
    },
    timeoutFor(STARTUP_TIMEOUT_MS),
  );

  it(
    'fails fast when the RabbitMQ transport has no RabbitMQModule',
    async () => {
      const failure = boot([typeOrm(), ScheduleModule.forRoot(), outbox()]);
      await expect(failure).rejects.toBeInstanceOf(OutboxError);
    },
    timeoutFor(STARTUP_TIMEOUT_MS),
  );

  it(
    'boots without ScheduleModule when this instance only writes',
    async () => {
      await expect(boot([typeOrm(), rabbit(), outbox({ dispatcherEnabled: false })])).resolves.toBeUndefined();
    },
    timeoutFor(STARTUP_TIMEOUT_MS),
  );
});
