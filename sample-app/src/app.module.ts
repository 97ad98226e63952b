import { RabbitMQModule } from '@golevelup/nestjs-rabbitmq';
import { ClsPluginTransactional } from '@nestjs-cls/transactional';
import { TransactionalAdapterTypeOrm } from '@nestjs-cls/transactional-adapter-typeorm';
import { Module } from '@nestjs/common';
import { ScheduleModule } from '@nestjs/schedule';
import { getDataSourceToken, TypeOrmModule } from '@nestjs/typeorm';
import { ClsModule } from 'nestjs-cls';
import { OutboxModule } from '../../lib';
import { RabbitMqOutboxTransport } from '../../lib/entries/transports';
import { OutboxBoardModule } from '../../lib/board';
import { BoardAuthGuard } from './board/board-auth.guard';
import { sampleDatabaseOptions } from './database';
import { INVENTORY_EXCHANGES, INVENTORY_QUEUES } from './inventory/inventory.constants';
import { InventoryModule } from './inventory/inventory.module';
import { LOGISTICS_TRANSPORT } from './logistics/logistics.constants';
import { LogisticsModule } from './logistics/logistics.module';
import { LogisticsTransport } from './logistics/logistics.transport';
import { MetricsModule } from './metrics/metrics.module';
import { HealthModule } from './health/health.module';
import { OrdersModule } from './orders/orders.module';
import { ORDERS_EXCHANGE } from './orders/orders.constants';
import { PaymentsModule } from './payments/payments.module';

const AMQP_URL = process.env.AMQP_URL ?? 'amqp://guest:guest@127.0.0.1:5672';

@Module({
  imports: [
    // @Transactional() keeps the current transaction in CLS; the TypeORM adapter exposes it as
    // TransactionHost.tx, which OutboxService.publish() writes through.
    ClsModule.forRoot({
      global: true,
      middleware: { mount: true },
      plugins: [
        new ClsPluginTransactional({
          imports: [TypeOrmModule],
          adapter: new TransactionalAdapterTypeOrm({ dataSourceToken: getDataSourceToken() }),
        }),
      ],
    }),
    TypeOrmModule.forRoot(sampleDatabaseOptions()),
    // The outbox dispatcher, stuck detector and retention run on @nestjs/schedule intervals.
    ScheduleModule.forRoot(),
    RabbitMQModule.forRoot({
      uri: AMQP_URL,
      exchanges: [{ name: ORDERS_EXCHANGE, type: 'topic' }, ...INVENTORY_EXCHANGES],
      // The inventory's dead-letter queue. Its consumed queue is declared by its subscriber
      // (see ORDER_PAID_QUEUE_OPTIONS for why it dead-letters).
      queues: INVENTORY_QUEUES,
      // Do not fail the start-up when the broker is down. golevelup still waits for it before
      // it registers the inventory's subscriber, so the HTTP server comes up once the broker is
      // reachable. Once running, payments commit during a broker outage, and their messages wait
      // in the outbox until the broker is back.
      connectionInitOptions: { wait: false },
    }),
    // Two transports, each dispatched in a lane of its own: order events to RabbitMQ (the default),
    // shipments to the logistics partner by HTTP.
    OutboxModule.forRoot({
      transports: { default: RabbitMqOutboxTransport, [LOGISTICS_TRANSPORT]: { transport: LogisticsTransport, dispatchConcurrency: 2 } },
    }),
    // The operators' board at /board, behind basic authentication (user operator, BOARD_PASSWORD).
    OutboxBoardModule.forRoot({ path: 'board', guards: [BoardAuthGuard] }),
    OrdersModule,
    InventoryModule,
    PaymentsModule,
    LogisticsModule,
    MetricsModule,
    HealthModule,
  ],
})
export class AppModule {}
