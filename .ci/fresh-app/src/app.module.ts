import { RabbitMQModule } from '@golevelup/nestjs-rabbitmq';
import { ClsPluginTransactional } from '@nestjs-cls/transactional';
import { TransactionalAdapterTypeOrm } from '@nestjs-cls/transactional-adapter-typeorm';
import { Module } from '@nestjs/common';
import { ScheduleModule } from '@nestjs/schedule';
import { getDataSourceToken, TypeOrmModule } from '@nestjs/typeorm';
import { ClsModule } from 'nestjs-cls';
import { OutboxModule } from 'nestjs-outbox';
import { EXCHANGE, OrderPlacedConsumer, Receipt } from './order-placed.consumer.js';
import { Order, OrdersService } from './orders.service.js';

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
      url: process.env.DATABASE_URL,
      entities: [Order, Receipt],
      autoLoadEntities: true,
      synchronize: true,
    }),
    ScheduleModule.forRoot(),
    RabbitMQModule.forRoot({ uri: process.env.AMQP_URL!, exchanges: [{ name: EXCHANGE, type: 'topic' }] }),
    OutboxModule.forRoot({ maxAttempts: 3 }),
  ],
  providers: [OrdersService, OrderPlacedConsumer],
})
export class AppModule {}
