import { AmqpConnection, AmqpConnectionManager, RabbitMQConfig, RabbitMQModule } from '@golevelup/nestjs-rabbitmq';
import { ClsPluginTransactional } from '@nestjs-cls/transactional';
import { TransactionalAdapterTypeOrm } from '@nestjs-cls/transactional-adapter-typeorm';
import { ConsoleLogger, DynamicModule, INestApplication, INestApplicationContext, Injectable, Module, Provider, Type } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { ScheduleModule } from '@nestjs/schedule';
import { getDataSourceToken, TypeOrmModule, TypeOrmModuleOptions } from '@nestjs/typeorm';
import { TransactionHost, Transactional } from '@nestjs-cls/transactional';
import { ClsModule } from 'nestjs-cls';
import { DataSource, DataSourceOptions } from 'typeorm';
import { OutboxModule, OutboxModuleOptionsInput, OutboxModuleStaticOptions, OutboxService } from '../../lib';
import { TestDatabase, testDatabase } from './database';
import { AMQP_URL } from './environment';
import { closeFailedStart } from './failed-start';
import { TestEffect, TestOrder } from './test-entities';

export { TestEffect, TestOrder };

/** Business code as a user writes it: `@Transactional()`, a repository, and the outbox. */
@Injectable()
export class OrderPayments {
  constructor(
    private readonly txHost: TransactionHost<TransactionalAdapterTypeOrm>,
    private readonly outbox: OutboxService,
  ) {}

  /**
   * Pays an order and publishes `order.paid` in one transaction. `address` names the exchange
   * (RabbitMQ) and the destination (an HTTP endpoint), whichever the transport reads. `holdMs`
   * keeps the transaction open that long after publishing; `beforeCommit` runs last inside it.
   */
  @Transactional()
  async pay(address: string, options: { fail?: boolean; holdMs?: number; bizKey?: string; beforeCommit?: () => void } = {}) {
    const order = await this.txHost.tx.getRepository(TestOrder).save({ status: 'PAID' });
    const result = await this.outbox.publish({
      type: 'order.paid',
      exchange: address,
      routingKey: 'order.paid',
      destination: address,
      bizKey: options.bizKey ?? `order-${order.id}:paid`,
      payload: { orderId: order.id },
    });
    if (options.holdMs) await new Promise((resolve) => setTimeout(resolve, options.holdMs));
    if (options.fail) throw new Error('payment rejected after publishing');
    options.beforeCommit?.();
    return { order, ...result };
  }
}

export interface TestAppOptions {
  /** The test file's database; required unless `schema` is given. */
  database?: TestDatabase;
  /** A PostgreSQL schema, for PostgreSQL-only tests and benchmarks: the same as `database: testDatabase(schema, 'postgres')`. */
  schema?: string;
  /** The name the database knows the app's sessions by (see `database-sessions.ts`). */
  sessionName?: string;
  /** Driver options merged into the DataSource's `extra` (PostgreSQL: pg's client config). */
  driverOptions?: Record<string, unknown>;
  /** DataSource options over the test database's, e.g. `{ synchronize: false, migrations, migrationsRun: true }`. */
  dataSource?: Partial<DataSourceOptions>;
  outbox?: OutboxModuleOptionsInput;
  statics?: OutboxModuleStaticOptions;
  /** The broker's URI, or the URIs of a cluster's nodes (golevelup tries them in turn on each reconnection). */
  amqpUrl?: string | string[];
  /** Seconds between attempts to reconnect to the broker (amqp-connection-manager's default: 5). */
  amqpReconnectSeconds?: number;
  providers?: Provider[];
  /** More modules of the application (e.g. the board), imported after the outbox's. */
  imports?: DynamicModule[];
  /** Controllers, for an application that serves HTTP (`createTestHttpApp`). */
  controllers?: Type[];
  /**
   * golevelup keeps connections in a process-wide registry by name, and a second app's
   * connection of the same name would replace (and orphan) the first's; each app gets its own.
   */
  connectionName?: string;
  /** More of golevelup's configuration (e.g. `handlers`, `defaultSubscribeErrorBehavior`), laid over the settings above. */
  rabbit?: Partial<RabbitMQConfig>;
  logger?: false | ('error' | 'warn' | 'log')[];
}

let appCount = 0;

/** A Nest application wired exactly as the README tells users to wire it. */
export function createTestApp(options: TestAppOptions): Promise<INestApplicationContext> {
  return createApp(options, false);
}

/** The same application serving HTTP on a free port of 127.0.0.1; `url` is its base URL. */
export async function createTestHttpApp(options: TestAppOptions): Promise<{ app: INestApplication; url: string }> {
  const app = (await createApp(options, true)) as INestApplication;
  return { app, url: (await app.getUrl()).replace('[::1]', '127.0.0.1') };
}

async function createApp(options: TestAppOptions, http: boolean): Promise<INestApplicationContext> {
  const database = options.database ?? (options.schema ? testDatabase(options.schema, 'postgres') : undefined);
  if (!database) throw new Error("createTestApp: pass the test file's database");
  const connectionName = options.connectionName ?? `test-app-${++appCount}`;
  // Kept, so that an application whose providers fail while being created can still close it.
  let dataSource: DataSource | undefined;
  @Module({
    imports: [
      ClsModule.forRoot({
        global: true,
        plugins: [
          new ClsPluginTransactional({
            imports: [TypeOrmModule],
            adapter: new TransactionalAdapterTypeOrm({ dataSourceToken: getDataSourceToken() }),
          }),
        ],
      }),
      TypeOrmModule.forRootAsync({
        useFactory: () =>
          withDriverOptions(
            { ...database.dataSourceOptions({ sessionName: options.sessionName }), ...options.dataSource } as DataSourceOptions,
            options.driverOptions,
          ),
        dataSourceFactory: async (dataSourceOptions) => (dataSource = new DataSource(dataSourceOptions!)).initialize(),
      }),
      TypeOrmModule.forFeature([TestOrder, TestEffect]),
      ScheduleModule.forRoot(),
      RabbitMQModule.forRoot({
        name: connectionName,
        uri: options.amqpUrl ?? AMQP_URL,
        connectionInitOptions: { wait: false },
        ...(options.amqpReconnectSeconds !== undefined ? { connectionManagerOptions: { reconnectTimeInSeconds: options.amqpReconnectSeconds } } : {}),
        ...options.rabbit,
      }),
      OutboxModule.forRoot({ ...options.statics, ...options.outbox }),
      ...(options.imports ?? []),
    ],
    providers: [OrderPayments, ...(options.providers ?? [])],
    controllers: options.controllers ?? [],
  })
  class TestAppModule {}

  // Compiled first and initialised separately, so that an application whose start-up checks
  // fail can still be closed (NestFactory would throw before handing it back).
  const levels = options.logger ?? ['error'];
  let started: INestApplicationContext | undefined;
  try {
    const module = await Test.createTestingModule({ imports: [TestAppModule] })
      .setLogger(new ConsoleLogger({ logLevels: levels === false ? [] : levels }))
      .compile();
    if (!http) {
      started = module;
      await module.init();
      return module;
    }
    // As the README tells users to create it: the raw body kept for signatures and the inbox.
    const app = (started = module.createNestApplication({ rawBody: true }));
    await app.listen(0, '127.0.0.1');
    return app;
  } catch (error) {
    // An initialisation that failed runs no shutdown hooks by itself; there is no application at
    // all when a provider failed while being created (as start-up checks of the tables do): close
    // its connections here, so none outlives the test.
    if (started) await closeFailedStart(started).catch(() => undefined);
    if (dataSource?.isInitialized) await dataSource.destroy().catch(() => undefined);
    await rabbitConnection(options.rabbit?.name ?? connectionName)
      ?.managedConnection.close()
      .catch(() => undefined);
    throw error;
  }
}

/** golevelup's connection of `name`, from the process-wide registry where it keeps them. */
function rabbitConnection(name: string): AmqpConnection | undefined {
  return (RabbitMQModule as unknown as { connectionManager: AmqpConnectionManager }).connectionManager.getConnection(name);
}

function withDriverOptions(dataSource: DataSourceOptions, driverOptions: Record<string, unknown> = {}): TypeOrmModuleOptions {
  return { ...dataSource, autoLoadEntities: true, extra: { ...(dataSource.extra as object), ...driverOptions } };
}

export type { Type };
