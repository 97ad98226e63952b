import { AmqpConnection, RabbitMQModule } from '@golevelup/nestjs-rabbitmq';
import { ClsPluginTransactional } from '@nestjs-cls/transactional';
import { TransactionalAdapterTypeOrm } from '@nestjs-cls/transactional-adapter-typeorm';
import { ConsoleLogger, INestApplicationContext, Injectable, Module, Provider, Type } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { ScheduleModule } from '@nestjs/schedule';
import { getDataSourceToken, TypeOrmModule } from '@nestjs/typeorm';
import { TransactionHost, Transactional } from '@nestjs-cls/transactional';
import { ClsModule } from 'nestjs-cls';
import { Column, DataSource, Entity, PrimaryGeneratedColumn } from 'typeorm';
import { OutboxModule, OutboxModuleOptionsInput, OutboxModuleStaticOptions, OutboxService } from '../../lib';
import { AMQP_URL, POSTGRES_URL } from './environment';

/** A business row written in the same transaction as the outbox message. */
@Entity({ name: 'test_order' })
export class TestOrder {
  @PrimaryGeneratedColumn()
  id!: number;

  @Column({ type: 'varchar', length: 40 })
  status!: string;
}

/** Business code as a user writes it: `@Transactional()`, a repository, and the outbox. */
@Injectable()
export class OrderPayments {
  constructor(
    private readonly txHost: TransactionHost<TransactionalAdapterTypeOrm>,
    private readonly outbox: OutboxService,
  ) {}

  @Transactional()
  async pay(exchange: string, options: { fail?: boolean; holdMs?: number; bizKey?: string } = {}) {
    const order = await this.txHost.tx.getRepository(TestOrder).save({ status: 'PAID' });
    const result = await this.outbox.publish({
      type: 'order.paid',
      exchange,
      routingKey: 'order.paid',
      bizKey: options.bizKey ?? `order-${order.id}:paid`,
      payload: { orderId: order.id },
    });
    if (options.holdMs) await new Promise((resolve) => setTimeout(resolve, options.holdMs));
    if (options.fail) throw new Error('payment rejected after publishing');
    return { order, ...result };
  }
}

export interface TestAppOptions {
  schema: string;
  outbox?: OutboxModuleOptionsInput;
  statics?: OutboxModuleStaticOptions;
  amqpUrl?: string;
  postgresUrl?: string;
  providers?: Provider[];
  /**
   * golevelup keeps connections in a process-wide registry by name, and a second app's
   * connection of the same name would replace (and orphan) the first's; each app gets its own.
   */
  connectionName?: string;
  logger?: false | ('error' | 'warn' | 'log')[];
}

let appCount = 0;

/** A Nest application wired exactly as the README tells users to wire it. */
export async function createTestApp(options: TestAppOptions): Promise<INestApplicationContext> {
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
      TypeOrmModule.forRoot({
        type: 'postgres',
        url: options.postgresUrl ?? POSTGRES_URL,
        schema: options.schema,
        synchronize: true,
        autoLoadEntities: true,
        extra: { max: 10 },
      }),
      TypeOrmModule.forFeature([TestOrder]),
      ScheduleModule.forRoot(),
      RabbitMQModule.forRoot({
        name: options.connectionName ?? `test-app-${++appCount}`,
        uri: options.amqpUrl ?? AMQP_URL,
        connectionInitOptions: { wait: false },
      }),
      OutboxModule.forRoot({ ...options.statics, ...options.outbox }),
    ],
    providers: [OrderPayments, ...(options.providers ?? [])],
  })
  class TestAppModule {}

  // Compiled first and initialised separately, so that an application whose start-up checks
  // fail can still be closed (NestFactory would throw before handing it back).
  const levels = options.logger ?? ['error'];
  const app = await Test.createTestingModule({ imports: [TestAppModule] })
    .setLogger(new ConsoleLogger({ logLevels: levels === false ? [] : levels }))
    .compile();
  try {
    await app.init();
  } catch (error) {
    // Nest runs no shutdown hooks for an application whose initialisation failed: close its
    // connections here, so none outlives the test.
    await app.get(DataSource).destroy().catch(() => undefined);
    await app.get(AmqpConnection).managedConnection.close().catch(() => undefined);
    throw error;
  }
  return app;
}

export type { Type };
