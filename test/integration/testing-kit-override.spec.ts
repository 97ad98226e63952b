import { RabbitMQModule } from '@golevelup/nestjs-rabbitmq';
import { ClsPluginTransactional, TransactionHost } from '@nestjs-cls/transactional';
import { TransactionalAdapterTypeOrm } from '@nestjs-cls/transactional-adapter-typeorm';
import { ConsoleLogger, INestApplicationContext, Module } from '@nestjs/common';
import { ScheduleModule } from '@nestjs/schedule';
import { Test } from '@nestjs/testing';
import { getDataSourceToken, TypeOrmModule } from '@nestjs/typeorm';
import { connect } from 'amqplib';
import { ClsModule } from 'nestjs-cls';
import { getOutboxServiceToken, OutboxModule, OutboxService } from '../../lib';
import { getOutboxTransportToken, OUTBOX_TRANSPORT } from '../../lib/entries/transports';
import { CapturingOutboxTransport, OutboxTestKit } from '../../lib/testing';
import { brokerName } from '../support/broker-names';
import { testDatabase } from '../support/database';
import { AMQP_URL } from '../support/environment';
import { OrderPayments, TestEffect, TestOrder } from '../support/test-app';
import { STARTUP_TIMEOUT_MS, timeoutFor } from '../support/wait';

const database = testDatabase('it_kit_override');
const EXCHANGE = brokerName(`it.kit-override.${database.kind}`);
const QUEUE = `${EXCHANGE}.all`;

/** An application module as users write it: the RabbitMQ transport, a broker, a default and a named outbox. */
@Module({
  imports: [
    ClsModule.forRoot({
      global: true,
      plugins: [new ClsPluginTransactional({ imports: [TypeOrmModule], adapter: new TransactionalAdapterTypeOrm({ dataSourceToken: getDataSourceToken() }) })],
    }),
    TypeOrmModule.forRoot({ ...database.dataSourceOptions(), entities: [TestOrder, TestEffect], autoLoadEntities: true }),
    ScheduleModule.forRoot(),
    RabbitMQModule.forRoot({
      uri: AMQP_URL,
      exchanges: [{ name: EXCHANGE, type: 'topic' }],
      queues: [{ name: QUEUE, exchange: EXCHANGE, routingKey: '#' }],
    }),
    OutboxModule.forRoot(),
    OutboxModule.forRoot({ name: 'audit', tableName: 'audit_outbox', inboxTableName: 'audit_inbox' }),
  ],
  providers: [OrderPayments],
})
class UsersAppModule {}

describe("The test kit on the application's own module, with its transports overridden", () => {
  let app: INestApplicationContext;

  beforeAll(async () => {
    await database.reset();
    const module = await Test.createTestingModule({ imports: [UsersAppModule] })
      .overrideProvider(OUTBOX_TRANSPORT)
      .useClass(CapturingOutboxTransport)
      .overrideProvider(getOutboxTransportToken('audit'))
      .useClass(CapturingOutboxTransport)
      .setLogger(new ConsoleLogger({ logLevels: ['error', 'warn'] }))
      .compile();
    app = await module.init();
  }, STARTUP_TIMEOUT_MS);

  afterAll(async () => {
    await app?.close();
    const broker = await connect(AMQP_URL);
    const channel = await broker.createChannel();
    await channel.deleteQueue(QUEUE);
    await channel.deleteExchange(EXCHANGE);
    await broker.close();
  });

  it(
    'sends what the default outbox dispatches through the overriding transport, not the broker',
    async () => {
      const kit = OutboxTestKit.from(app);
      const { messageId } = await app.get(OrderPayments).pay(EXCHANGE);
      expect(await kit.flush()).toMatchObject({ sent: 1 });
      expect(kit.transport.messages.map((message) => message.messageId)).toEqual([messageId]);
      expect(app.get(OUTBOX_TRANSPORT)).toBe(kit.transport);
      const broker = await connect(AMQP_URL);
      try {
        expect((await (await broker.createChannel()).checkQueue(QUEUE)).messageCount).toBe(0);
      } finally {
        await broker.close();
      }
    },
    timeoutFor(STARTUP_TIMEOUT_MS),
  );

  it(
    'sends what a named outbox dispatches through the transport overriding getOutboxTransportToken(name)',
    async () => {
      const kit = OutboxTestKit.from(app, { outbox: 'audit' });
      const audit = app.get<OutboxService>(getOutboxServiceToken('audit'));
      const { messageId } = await app
        .get(TransactionHost)
        .withTransaction(() => audit.publish({ type: 'audit.recorded', exchange: EXCHANGE, routingKey: 'audit.recorded', payload: { at: 1 } }));
      await kit.flush();
      expect(kit.transport.messages.map((message) => message.messageId)).toEqual([messageId]);
      expect(app.get(getOutboxTransportToken('audit'))).toBe(kit.transport);
    },
    timeoutFor(STARTUP_TIMEOUT_MS),
  );
});
