import { ClsPluginTransactional } from '@nestjs-cls/transactional';
import { TransactionalAdapterTypeOrm } from '@nestjs-cls/transactional-adapter-typeorm';
import { DynamicModule } from '@nestjs/common';
import { ScheduleModule } from '@nestjs/schedule';
import { getDataSourceToken, TypeOrmModule } from '@nestjs/typeorm';
import { ClsModule } from 'nestjs-cls';
import { OutboxModule } from '../../lib';
import { CapturingOutboxTransport, OUTBOX_TEST_OPTIONS } from '../../lib/testing';
import { LOGISTICS_TRANSPORT } from '../src/logistics/logistics.constants';

/**
 * What the sample's feature modules stand on, as AppModule wires it but with no broker: CLS with
 * its transactions, TypeORM on `schema` of the test database (the sample's entities use
 * PostgreSQL types), the scheduler, and the outbox with both of the sample's transports
 * capturing (RabbitMQ events and shipments to logistics), for OutboxTestKit to read.
 */
export function brokerlessModules(databaseUrl: string, schema: string): DynamicModule[] {
  return [
    ClsModule.forRoot({
      global: true,
      plugins: [new ClsPluginTransactional({ imports: [TypeOrmModule], adapter: new TransactionalAdapterTypeOrm({ dataSourceToken: getDataSourceToken() }) })],
    }),
    TypeOrmModule.forRoot({ type: 'postgres', url: databaseUrl, schema, autoLoadEntities: true, synchronize: true }),
    ScheduleModule.forRoot(),
    OutboxModule.forRoot({ ...OUTBOX_TEST_OPTIONS, transports: { default: CapturingOutboxTransport, [LOGISTICS_TRANSPORT]: CapturingOutboxTransport } }),
  ];
}
