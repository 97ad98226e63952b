import { ClsPluginTransactional, TransactionHost } from '@nestjs-cls/transactional';
import { TransactionalAdapterTypeOrm } from '@nestjs-cls/transactional-adapter-typeorm';
import { ConsoleLogger, INestApplicationContext, Module } from '@nestjs/common';
import { ScheduleModule } from '@nestjs/schedule';
import { Test } from '@nestjs/testing';
import { getDataSourceToken, TypeOrmModule } from '@nestjs/typeorm';
import { ClsModule } from 'nestjs-cls';
import { MessageStatus, NonRetryableError, OutboxModule, OutboxService } from '../../lib';
import { OutboxAdmin } from '../../lib/entries/admin';
import { CapturingOutboxTransport, flushOutbox, OUTBOX_TEST_OPTIONS, OutboxTestKit } from '../../lib/testing';
import { bindingMatches } from '../../lib/testing/amqp-routing';
import { testDatabase } from '../support/database';
import { FixtureEvent, InboxFixtureConfig, inboxFixtureProviders } from '../support/inbox-fixture';
import { OrderPayments } from '../support/test-app';
import { TestEffect, TestOrder } from '../support/test-entities';

const database = testDatabase('it_testing_kit');

/** No broker anywhere: the exchanges and queues below exist only in the handlers' decorators. */
const ORDERS = 'kit.orders';
const fixture = (overrides: Partial<InboxFixtureConfig>): InboxFixtureConfig => ({
  exchange: ORDERS,
  routingKey: 'order.paid',
  outExchange: 'kit.inventory',
  deadLetterExchange: 'kit.dlx',
  consumers: [],
  maxAttempts: 3,
  ...overrides,
});
const transactional = fixture({ routingKey: 'order.*', consumers: [{ name: 'kit-transactional', queue: 'kit.transactional' }] });
const deferred = fixture({ mode: 'deferred', consumers: [{ name: 'kit-deferred', queue: 'kit.deferred' }] });

/** An application wired as docs/testing.md tells users to: no RabbitMQModule, the capturing transport. */
async function createKitApp(): Promise<INestApplicationContext> {
  @Module({
    imports: [
      ClsModule.forRoot({
        global: true,
        plugins: [
          new ClsPluginTransactional({ imports: [TypeOrmModule], adapter: new TransactionalAdapterTypeOrm({ dataSourceToken: getDataSourceToken() }) }),
        ],
      }),
      TypeOrmModule.forRoot({ ...database.dataSourceOptions(), autoLoadEntities: true }),
      TypeOrmModule.forFeature([TestOrder, TestEffect]),
      ScheduleModule.forRoot(),
      OutboxModule.forRoot({ ...OUTBOX_TEST_OPTIONS, maxAttempts: 3, transport: CapturingOutboxTransport }),
    ],
    providers: [OrderPayments, ...inboxFixtureProviders(transactional), ...inboxFixtureProviders(deferred)],
  })
  class KitTestModule {}
  const module = await Test.createTestingModule({ imports: [KitTestModule] })
    .setLogger(new ConsoleLogger({ logLevels: ['error'] }))
    .compile();
  return module.init();
}

describe('the test kit (nestjs-outbox/testing)', () => {
  let app: INestApplicationContext;
  let kit: OutboxTestKit;
  let transport: CapturingOutboxTransport;
  let nextOrderId = 1_000;

  beforeAll(async () => {
    await database.reset();
    app = await createKitApp();
    kit = OutboxTestKit.from(app);
    transport = kit.transport;
  });

  afterAll(async () => {
    await app?.close();
  });

  beforeEach(async () => {
    // Whatever an earlier test left due is sent now, then forgotten.
    await kit.flush();
    transport.clear();
    transport.stopFailing();
    transport.setAvailable(true);
  });

  const pay = (options: { fail?: boolean } = {}) => app.get(OrderPayments).pay(ORDERS, options);
  /** Publishes an `order.paid` whose body tells the fixture's handlers how to behave. */
  const publishEvent = (event: Omit<FixtureEvent, 'orderId'>) => {
    const orderId = ++nextOrderId;
    return app
      .get(TransactionHost)
      .withTransaction(() => app.get(OutboxService).publish({ type: 'order.paid', exchange: ORDERS, routingKey: 'order.paid', payload: { orderId, ...event } }))
      .then(({ messageId }) => ({ orderId, messageId }));
  };
  const effects = (consumer: string, orderId: number) =>
    app.get<TransactionHost<TransactionalAdapterTypeOrm>>(TransactionHost).tx.getRepository(TestEffect).countBy({ consumer, orderId });
  const inboxRow = async (consumer: string, messageId: string) =>
    (
      await database.sql<{ status: string; attempts: number }>('SELECT status, attempts FROM {inbox_message} WHERE consumer = ? AND message_id = ?', [
        consumer,
        messageId,
      ])
    )[0];
  const outboxRow = (messageId: string) => app.get(OutboxAdmin).findMessage({ messageId });

  describe('capturing', () => {
    it('captures a message published in a committed transaction once, with its payload parsed', async () => {
      const { order, messageId } = await pay();
      const result = await kit.flush();
      await kit.flush();
      expect(transport.messages).toHaveLength(1);
      expect(transport.ofType('order.paid')).toEqual([
        expect.objectContaining({ messageId, type: 'order.paid', exchange: ORDERS, routingKey: 'order.paid', payload: { orderId: order.id }, attempts: 0 }),
      ]);
      expect(result.rounds).toBeGreaterThanOrEqual(1);
      expect((await outboxRow(messageId))?.status).toBe(MessageStatus.DONE);
    });

    it('counts a message sent as its transaction committed in the next flush, as on every database', async () => {
      const { messageId } = await pay();
      expect(await kit.flush()).toMatchObject({ sent: 1 });
      expect(await kit.flush()).toMatchObject({ sent: 0 });
      expect(transport.messages.map((message) => message.messageId)).toEqual([messageId]);
    });

    it('captures the bizKey and orderingKey a message was published with', async () => {
      const publish = (message: { bizKey?: string; orderingKey?: string }) =>
        app
          .get(TransactionHost)
          .withTransaction(() => app.get(OutboxService).publish({ type: 'order.keyed', exchange: ORDERS, routingKey: 'order.keyed', payload: {}, ...message }));
      await publish({ bizKey: 'order-7:keyed' });
      await publish({ bizKey: 'order-8:keyed', orderingKey: 'order-8' });
      await publish({});
      expect(await kit.flush()).toMatchObject({ sent: 3 });
      expect(transport.ofType('order.keyed').map(({ bizKey, orderingKey }) => ({ bizKey, orderingKey }))).toEqual([
        { bizKey: 'order-7:keyed', orderingKey: null },
        { bizKey: 'order-8:keyed', orderingKey: 'order-8' },
        { bizKey: null, orderingKey: null },
      ]);
    });

    it('does not capture a message whose transaction rolled back', async () => {
      await expect(pay({ fail: true })).rejects.toThrow('payment rejected after publishing');
      await kit.flush();
      expect(transport.messages).toHaveLength(0);
    });

    it('delivers nothing unless asked to', async () => {
      const { order } = await pay();
      await flushOutbox(app);
      expect(transport.ofType('order.paid')).toHaveLength(1);
      expect(await effects('kit-transactional', order.id)).toBe(0);
      // Passed over by that flush, so a later delivering flush does not deliver it either.
      await kit.flush({ deliverToInboxHandlers: true });
      expect(await effects('kit-transactional', order.id)).toBe(0);
    });
  });

  describe('failing sends', () => {
    it('retries a send that failed, and captures the message once it goes through', async () => {
      transport.failNext(2);
      const { messageId } = await pay();
      await kit.flush();
      expect(transport.failures.map((failure) => failure.message.messageId)).toEqual([messageId, messageId]);
      expect(transport.messages.map((message) => message.messageId)).toEqual([messageId]);
      expect(transport.messages[0].attempts).toBe(2);
      expect(await outboxRow(messageId)).toMatchObject({ status: MessageStatus.DONE, attempts: 2 });
    });

    it('gives a message up (MANUAL_REQUIRED) after maxAttempts failed sends', async () => {
      transport.failAll();
      const { messageId } = await pay();
      await kit.flush();
      expect(transport.messages).toHaveLength(0);
      expect(transport.failures).toHaveLength(3);
      expect(await outboxRow(messageId)).toMatchObject({ status: MessageStatus.MANUAL_REQUIRED, attempts: 3 });
    });

    it('gives a message up at once when the send fails with NonRetryableError', async () => {
      transport.failNext(1, (message) => new NonRetryableError(`cannot send ${message.messageId}`));
      const { messageId } = await pay();
      await kit.flush();
      expect(await outboxRow(messageId)).toMatchObject({ status: MessageStatus.MANUAL_REQUIRED, attempts: 1 });
      expect(transport.messages).toHaveLength(0);
    });

    it('claims nothing while the transport is unavailable, and sends once it is back', async () => {
      transport.setAvailable(false);
      const { messageId } = await pay();
      await kit.flush();
      expect(transport.messages).toHaveLength(0);
      expect(await outboxRow(messageId)).toMatchObject({ status: MessageStatus.PENDING, attempts: 0 });
      transport.setAvailable(true);
      await kit.flush();
      expect(transport.messages.map((message) => message.messageId)).toEqual([messageId]);
    });
  });

  describe('loopback delivery to @InboxHandler()', () => {
    const deliver = { deliverToInboxHandlers: true };

    it('runs a transactional and a deferred handler whose bindings match, and sends what they publish', async () => {
      const { order, messageId } = await pay();
      const result = await kit.flush(deliver);
      expect(await effects('kit-transactional', order.id)).toBe(1);
      expect(await effects('kit-deferred', order.id)).toBe(1);
      const mine = kit.deliveries.filter((delivery) => delivery.message.messageId === messageId);
      expect(mine.map((delivery) => [delivery.consumer, delivery.queue, delivery.outcome]).sort()).toEqual([
        ['kit-deferred', 'kit.deferred', 'ack'],
        ['kit-transactional', 'kit.transactional', 'ack'],
      ]);
      // Each handler published two messages through the outbox; the flush sent them too.
      expect(
        transport
          .ofType('inventory.reserved')
          .map((message) => (message.payload as { consumer: string }).consumer)
          .sort(),
      ).toEqual(['kit-deferred', 'kit-transactional']);
      expect(transport.ofType('inventory.notified')).toHaveLength(2);
      expect(result.inboxRuns).toBe(1);
      expect(await inboxRow('kit-deferred', messageId)).toMatchObject({ status: MessageStatus.DONE });
    });

    it('applies the effect once when the same message is delivered again', async () => {
      const { order } = await pay();
      await kit.flush(deliver);
      const [paid] = transport.ofType('order.paid');
      const duplicate = await kit.deliver(paid);
      const redelivery = await kit.deliver(paid, { redelivered: true });
      await kit.flush(deliver);
      expect([...duplicate, ...redelivery].map((delivery) => delivery.outcome)).toEqual(['ack', 'ack', 'ack', 'ack']);
      expect(redelivery.every((delivery) => delivery.redelivered)).toBe(true);
      expect(await effects('kit-transactional', order.id)).toBe(1);
      expect(await effects('kit-deferred', order.id)).toBe(1);
      expect(transport.ofType('inventory.reserved')).toHaveLength(2);
    });

    it('routes by topic: a wildcard binding matches, a key no binding matches reaches no handler', async () => {
      const orderId = ++nextOrderId;
      await app
        .get(TransactionHost)
        .withTransaction(() => app.get(OutboxService).publish({ type: 'order.shipped', exchange: ORDERS, routingKey: 'order.shipped', payload: { orderId } }));
      await kit.flush(deliver);
      // 'order.*' (transactional) matches order.shipped; 'order.paid' (deferred) does not.
      expect(await effects('kit-transactional', orderId)).toBe(1);
      expect(await effects('kit-deferred', orderId)).toBe(0);
      const other = ++nextOrderId;
      await app
        .get(TransactionHost)
        .withTransaction(() =>
          app.get(OutboxService).publish({ type: 'order.paid', exchange: 'elsewhere', routingKey: 'order.paid', payload: { orderId: other } }),
        );
      const result = await kit.flush(deliver);
      expect(result.delivered).toBe(0);
      expect(transport.ofType('order.paid').some((message) => message.exchange === 'elsewhere')).toBe(true);
    });

    it('retries a failing handler, then processes it once it succeeds', async () => {
      const { orderId, messageId } = await publishEvent({ failTimes: 1 });
      await kit.flush(deliver);
      const outcomes = kit.deliveries.filter((delivery) => delivery.message.messageId === messageId && delivery.consumer === 'kit-transactional');
      expect(outcomes.map((delivery) => [delivery.delivery, delivery.redelivered, delivery.outcome])).toEqual([
        [1, false, 'requeue'],
        [2, true, 'ack'],
      ]);
      expect(await effects('kit-transactional', orderId)).toBe(1);
      expect(await effects('kit-deferred', orderId)).toBe(1);
      expect(await inboxRow('kit-deferred', messageId)).toMatchObject({ status: MessageStatus.DONE, attempts: 1 });
    });

    it('gives a handler that always fails up (MANUAL_REQUIRED) after maxAttempts, dead-lettering a transactional delivery', async () => {
      const { orderId, messageId } = await publishEvent({ alwaysFail: true });
      const result = await kit.flush(deliver);
      const outcomes = kit.deliveries.filter((delivery) => delivery.message.messageId === messageId && delivery.consumer === 'kit-transactional');
      expect(outcomes.map((delivery) => delivery.outcome)).toEqual(['requeue', 'requeue', 'dead-letter']);
      expect(kit.deadLettered.map((delivery) => [delivery.consumer, delivery.message.messageId])).toEqual([['kit-transactional', messageId]]);
      expect(await inboxRow('kit-transactional', messageId)).toMatchObject({ status: MessageStatus.MANUAL_REQUIRED, attempts: 3 });
      expect(await inboxRow('kit-deferred', messageId)).toMatchObject({ status: MessageStatus.MANUAL_REQUIRED, attempts: 3 });
      expect(result.inboxRuns).toBe(3);
      // The failed attempts' effects and publications rolled back.
      expect(await effects('kit-transactional', orderId)).toBe(0);
      expect(await effects('kit-deferred', orderId)).toBe(0);
      expect(transport.ofType('inventory.reserved')).toHaveLength(0);
    });
  });
});

describe('bindingMatches (AMQP routing of loopback delivery)', () => {
  it.each([
    ['topic', 'order.paid', 'order.paid', true],
    ['topic', 'order.*', 'order.paid', true],
    ['topic', 'order.*', 'order.paid.eu', false],
    ['topic', 'order.*', 'order', false],
    ['topic', 'order.#', 'order', true],
    ['topic', 'order.#', 'order.paid.eu', true],
    ['topic', '#', 'anything.at.all', true],
    ['topic', '#.eu', 'order.paid.eu', true],
    ['topic', '*.paid.#', 'order.paid', true],
    ['topic', 'order.paid', 'order.shipped', false],
    ['direct', 'order.*', 'order.paid', false],
    ['direct', 'order.paid', 'order.paid', true],
    ['fanout', 'ignored', 'order.paid', true],
  ] as const)('%s binding %s, key %s: %s', (type, binding, key, expected) => {
    expect(bindingMatches(type, binding, key)).toBe(expected);
  });
});
