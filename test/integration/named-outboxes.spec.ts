import { RabbitMQModule, RabbitSubscribe } from '@golevelup/nestjs-rabbitmq';
import { ClsPluginTransactional, InjectTransactionHost, Transactional, TransactionHost } from '@nestjs-cls/transactional';
import { TransactionalAdapterTypeOrm } from '@nestjs-cls/transactional-adapter-typeorm';
import { ConsoleLogger, Injectable, Module, Provider, Type } from '@nestjs/common';
import { ScheduleModule } from '@nestjs/schedule';
import { Test, TestingModule } from '@nestjs/testing';
import { getDataSourceToken, TypeOrmModule } from '@nestjs/typeorm';
import { Channel, ChannelModel, connect } from 'amqplib';
import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import { ClsModule } from 'nestjs-cls';
import {
  getOutboxServiceToken,
  InboxHandler,
  InjectOutbox,
  OUTBOX_EVENTS,
  OutboxError,
  OutboxModule,
  OutboxOutsideTransactionError,
  OutboxService,
  ReceivedEvent,
} from '../../lib';
import { getOutboxAdminToken, getOutboxDispatcherToken, OutboxAdmin } from '../../lib/entries/admin';
import { brokerName } from '../support/broker-names';
import { DatabaseKind, describeOn, TestDatabase, testDatabase } from '../support/database';
import { AMQP_URL } from '../support/environment';
import { closeFailedStart } from '../support/failed-start';
import { assertExchange, QueueProbe } from '../support/queue-probe';
import { TestEffect, TestOrder } from '../support/test-entities';
import { STARTUP_TIMEOUT_MS, timeoutFor, waitUntil } from '../support/wait';

/**
 * One application with two outboxes on two databases, each joining the transactions of its own
 * nestjs-cls connection: PostgreSQL holds the orders outbox (the default outbox, or one named
 * `orders`), the second database the `billing` outbox. Runs in the PostgreSQL project and opens
 * the second database itself.
 */
interface Pairing {
  second: Extract<DatabaseKind, 'mariadb' | 'sqlite'>;
  /** The PostgreSQL outbox's name (and its cls connection's); undefined: the default outbox on the unnamed connection. */
  ordersOutbox: string | undefined;
}

const PAIRINGS: Pairing[] = [
  { second: 'mariadb', ordersOutbox: undefined },
  { second: 'sqlite', ordersOutbox: 'orders' },
];

describeOn(['postgres'], 'several outboxes on several DataSources', () => {
  describe.each(PAIRINGS)('PostgreSQL and $second (orders outbox: $ordersOutbox)', ({ second, ordersOutbox }) => {
    const postgres = testDatabase(`it_named_outboxes_${second}`, 'postgres');
    const billingDatabase = testDatabase(`it_named_outboxes_${second}`, second);
    const prefix = brokerName(`it.named-outboxes.${second}`);
    const exchanges = { orders: `${prefix}.orders`, billing: `${prefix}.billing` };
    const fixture = namedOutboxesFixture(ordersOutbox, exchanges, `${prefix}.inbox`);
    let connection: ChannelModel;
    let channel: Channel;
    let ordersProbe: QueueProbe;
    let billingProbe: QueueProbe;
    let app: TestingModule;
    const received: ReceivedEvent[] = [];
    const duplicates: ReceivedEvent[] = [];
    const onReceived = (event: unknown) => received.push(event as ReceivedEvent);
    const onDuplicate = (event: unknown) => duplicates.push(event as ReceivedEvent);

    beforeAll(async () => {
      await Promise.all([postgres.reset(), billingDatabase.reset()]);
      await assertExchange(exchanges.orders);
      await assertExchange(exchanges.billing);
      ordersProbe = await QueueProbe.bind(exchanges.orders, '#', `${prefix}.orders-probe`);
      billingProbe = await QueueProbe.bind(exchanges.billing, '#', `${prefix}.billing-probe`);
      connection = await connect(AMQP_URL);
      channel = await connection.createChannel();
      subscribe(OUTBOX_EVENTS.received, onReceived);
      subscribe(OUTBOX_EVENTS.duplicate, onDuplicate);
      app = await startApp(postgres, billingDatabase, fixture, `named-outboxes-${second}`);
    }, timeoutFor(STARTUP_TIMEOUT_MS));

    afterAll(async () => {
      unsubscribe(OUTBOX_EVENTS.received, onReceived);
      unsubscribe(OUTBOX_EVENTS.duplicate, onDuplicate);
      await app?.close();
      for (const queue of fixture.inboxQueues) await channel?.deleteQueue(queue).catch(() => undefined);
      await ordersProbe?.close();
      await billingProbe?.close();
      await connection?.close();
    });

    it('registers each outbox under its own tokens, as different instances', () => {
      const orders = app.get<OutboxService>(getOutboxServiceToken(ordersOutbox), { strict: false });
      const billing = app.get<OutboxService>(getOutboxServiceToken('billing'), { strict: false });
      expect(orders).toBeInstanceOf(OutboxService);
      expect(billing).toBeInstanceOf(OutboxService);
      expect(billing).not.toBe(orders);
      expect(app.get(getOutboxAdminToken('billing'), { strict: false })).not.toBe(app.get(getOutboxAdminToken(ordersOutbox), { strict: false }));
      expect(app.get(getOutboxDispatcherToken('billing'), { strict: false })).not.toBe(app.get(getOutboxDispatcherToken(ordersOutbox), { strict: false }));
      // @InjectOutbox() resolved the same instances.
      const payments = app.get(fixture.Payments);
      expect(payments.ordersOutbox).toBe(orders);
      expect(payments.billingOutbox).toBe(billing);
      expect(app.get(getOutboxAdminToken('billing'), { strict: false })).toBeInstanceOf(OutboxAdmin);
    });

    it('sends the messages of both outboxes, each from its own database', async () => {
      const payments = app.get(fixture.Payments);
      const order = await payments.payOrder('order-1:paid');
      const invoice = await payments.invoice('invoice-1:issued');
      await ordersProbe.waitFor(1);
      await billingProbe.waitFor(1);
      expect(ordersProbe.messageIds).toContain(order.messageId);
      expect(billingProbe.messageIds).toContain(invoice.messageId);
      expect(await postgres.sql('SELECT biz_key FROM {outbox_message}')).toEqual([{ biz_key: 'order-1:paid' }]);
      expect(await billingDatabase.sql('SELECT biz_key FROM {outbox_message}')).toEqual([{ biz_key: 'invoice-1:issued' }]);
    });

    it("rolls back one outbox's transaction without touching the other's committed message", async () => {
      const payments = app.get(fixture.Payments);
      // The billing transaction commits; the orders transaction inside it rolls back on its own connection.
      const invoice = await payments.invoiceThenFailOrder('invoice-2:issued', 'order-2:paid');
      const marker = await payments.payOrder('order-3:paid');
      await billingProbe.waitFor(2);
      await waitUntil(() => ordersProbe.messageIds.includes(marker.messageId), 'the orders marker reached its queue');
      await ordersProbe.flush();
      expect(billingProbe.messageIds).toContain(invoice.messageId);
      expect(ordersProbe.bodies<{ bizKey: string }>().map((body) => body.bizKey)).not.toContain('order-2:paid');
      expect(await postgres.sql("SELECT id FROM {outbox_message} WHERE biz_key = 'order-2:paid'")).toEqual([]);
      expect(await billingDatabase.sql("SELECT status FROM {outbox_message} WHERE biz_key = 'invoice-2:issued'")).toEqual([{ status: 'DONE' }]);
    });

    it("refuses to publish in another outbox's transaction", async () => {
      const payments = app.get(fixture.Payments);
      await expect(payments.invoiceInOrdersTransaction('invoice-3:issued')).rejects.toBeInstanceOf(OutboxOutsideTransactionError);
      await expect(payments.orderInBillingTransaction('order-4:paid')).rejects.toBeInstanceOf(OutboxOutsideTransactionError);
    });

    it('records each inbox handler in its own inbox table, and skips a duplicate there', async () => {
      await waitUntil(
        async () => (await effectCount(postgres)) >= 2 && (await effectCount(billingDatabase)) >= 2,
        'both inbox handlers processed their messages',
      );
      const orderConsumers = await postgres.sql<{ consumer: string }>('SELECT DISTINCT consumer FROM {inbox_message}');
      const billingConsumers = await billingDatabase.sql<{ consumer: string }>('SELECT DISTINCT consumer FROM {inbox_message}');
      expect(orderConsumers.map((row) => row.consumer)).toEqual(['orders-ledger']);
      expect(billingConsumers.map((row) => row.consumer)).toEqual(['billing-ledger']);
      // Events say which outbox they are about.
      expect(received.find((event) => event.consumer === 'billing-ledger')?.outbox).toBe('billing');
      expect(received.find((event) => event.consumer === 'orders-ledger')?.outbox).toBe(ordersOutbox);

      const [{ message_id: messageId }] = await billingDatabase.sql<{ message_id: string }>(
        "SELECT message_id FROM {outbox_message} WHERE biz_key = 'invoice-1:issued'",
      );
      const body = Buffer.from(JSON.stringify({ orderId: 1, bizKey: 'invoice-1:issued' }));
      channel.publish(exchanges.billing, 'invoice.issued', body, { messageId, contentType: 'application/json' });
      await waitUntil(() => duplicates.some((event) => event.messageId === messageId), 'the redelivered invoice was skipped as a duplicate');
      expect(duplicates.find((event) => event.messageId === messageId)).toMatchObject({ consumer: 'billing-ledger', outbox: 'billing' });
      expect(await billingDatabase.sql('SELECT id FROM {test_effect} WHERE message_id = ?', [messageId])).toHaveLength(1);
    });

    it(
      'fails start-up for a handler that names an outbox the application does not configure',
      async () => {
        const failing = startApp(postgres, billingDatabase, fixture, `named-outboxes-${second}-unknown`, [fixture.UnknownOutboxConsumer]);
        await expect(failing).rejects.toThrow(OutboxError);
        await expect(failing).rejects.toThrow(
          /@InboxHandler on UnknownOutboxConsumer\.onInvoice uses the outbox "shipping", which the application does not configure/,
        );
      },
      timeoutFor(STARTUP_TIMEOUT_MS),
    );
  });
});

async function effectCount(database: TestDatabase): Promise<number> {
  const rows = await database.sql<{ id: number }>('SELECT id FROM {test_effect}');
  return rows.length;
}

/** The fixture's classes, for one naming of the orders outbox. */
function namedOutboxesFixture(ordersOutbox: string | undefined, exchanges: { orders: string; billing: string }, queuePrefix: string) {
  const queues = { orders: `${queuePrefix}.orders-ledger`, billing: `${queuePrefix}.billing-ledger` };

  @Injectable()
  class Payments {
    constructor(
      @InjectOutbox(ordersOutbox) readonly ordersOutbox: OutboxService,
      @InjectOutbox('billing') readonly billingOutbox: OutboxService,
      @InjectTransactionHost(ordersOutbox) private readonly ordersTx: TransactionHost<TransactionalAdapterTypeOrm>,
      @InjectTransactionHost('billing') private readonly billingTx: TransactionHost<TransactionalAdapterTypeOrm>,
    ) {}

    @Transactional(ordersOutbox)
    async payOrder(bizKey: string, options: { fail?: boolean } = {}) {
      const order = await this.ordersTx.tx.getRepository(TestOrder).save({ status: 'PAID' });
      const result = await this.ordersOutbox.publish({
        type: 'order.paid',
        exchange: exchanges.orders,
        routingKey: 'order.paid',
        bizKey,
        payload: { orderId: order.id, bizKey },
      });
      if (options.fail) throw new Error('payment rejected after publishing');
      return result;
    }

    @Transactional('billing')
    async invoice(bizKey: string) {
      const order = await this.billingTx.tx.getRepository(TestOrder).save({ status: 'INVOICED' });
      return this.billingOutbox.publish({
        type: 'invoice.issued',
        exchange: exchanges.billing,
        routingKey: 'invoice.issued',
        bizKey,
        payload: { orderId: order.id, bizKey },
      });
    }

    @Transactional('billing')
    async invoiceThenFailOrder(invoiceKey: string, orderKey: string) {
      const result = await this.billingOutbox.publish({
        type: 'invoice.issued',
        exchange: exchanges.billing,
        routingKey: 'invoice.issued',
        bizKey: invoiceKey,
        payload: { orderId: 0, bizKey: invoiceKey },
      });
      await this.payOrder(orderKey, { fail: true }).catch(() => undefined);
      return result;
    }

    @Transactional(ordersOutbox)
    async invoiceInOrdersTransaction(bizKey: string) {
      return this.billingOutbox.publish({ type: 'invoice.issued', exchange: exchanges.billing, routingKey: 'invoice.issued', bizKey, payload: {} });
    }

    @Transactional('billing')
    async orderInBillingTransaction(bizKey: string) {
      return this.ordersOutbox.publish({ type: 'order.paid', exchange: exchanges.orders, routingKey: 'order.paid', bizKey, payload: {} });
    }
  }

  /** Writes an effect through the transaction of the inbox's outbox, so that it commits with the inbox mark. */
  function writeEffect(txHost: TransactionHost<TransactionalAdapterTypeOrm>, consumer: string, event: { orderId: number }, messageId: string | undefined) {
    return txHost.tx.getRepository(TestEffect).save({ consumer, orderId: event.orderId, messageId: messageId ?? null });
  }

  @Injectable()
  class OrdersLedger {
    constructor(@InjectTransactionHost(ordersOutbox) private readonly txHost: TransactionHost<TransactionalAdapterTypeOrm>) {}

    @RabbitSubscribe({ exchange: exchanges.orders, routingKey: 'order.paid', queue: queues.orders })
    @InboxHandler({ consumer: 'orders-ledger', ...(ordersOutbox === undefined ? {} : { outbox: ordersOutbox }) })
    async onOrderPaid(event: { orderId: number }, message: { properties: { messageId?: string } }) {
      await writeEffect(this.txHost, 'orders-ledger', event, message.properties.messageId);
    }
  }

  @Injectable()
  class BillingLedger {
    constructor(@InjectTransactionHost('billing') private readonly txHost: TransactionHost<TransactionalAdapterTypeOrm>) {}

    @RabbitSubscribe({ exchange: exchanges.billing, routingKey: 'invoice.issued', queue: queues.billing })
    @InboxHandler({ outbox: 'billing', consumer: 'billing-ledger' })
    async onInvoice(event: { orderId: number }, message: { properties: { messageId?: string } }) {
      await writeEffect(this.txHost, 'billing-ledger', event, message.properties.messageId);
    }
  }

  @Injectable()
  class UnknownOutboxConsumer {
    @RabbitSubscribe({ exchange: exchanges.billing, routingKey: 'invoice.issued', queue: `${queuePrefix}.unknown` })
    @InboxHandler({ outbox: 'shipping' })
    async onInvoice(): Promise<void> {}
  }

  return {
    ordersOutbox,
    Payments,
    providers: [Payments, OrdersLedger, BillingLedger] as Provider[],
    UnknownOutboxConsumer,
    inboxQueues: [...Object.values(queues), `${queuePrefix}.unknown`],
  };
}

/** The application: two DataSources, a nestjs-cls connection and an outbox on each, one broker connection. */
async function startApp(
  postgres: TestDatabase,
  billingDatabase: TestDatabase,
  fixture: ReturnType<typeof namedOutboxesFixture>,
  rabbitName: string,
  extraProviders: Type[] = [],
): Promise<TestingModule> {
  const entities = [TestOrder, TestEffect];
  // The orders outbox's name is also its cls connection's (undefined: the default outbox, the unnamed connection).
  const ordersConnection = fixture.ordersOutbox;
  @Module({
    imports: [
      ClsModule.forRoot({
        global: true,
        plugins: [
          new ClsPluginTransactional({
            connectionName: ordersConnection,
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
      TypeOrmModule.forRootAsync({ useFactory: () => ({ ...postgres.dataSourceOptions(), entities, autoLoadEntities: true }) }),
      TypeOrmModule.forRootAsync({
        name: 'billing',
        useFactory: () => ({ ...billingDatabase.dataSourceOptions(), name: 'billing', entities, autoLoadEntities: true }),
      }),
      ScheduleModule.forRoot(),
      RabbitMQModule.forRoot({ name: rabbitName, uri: AMQP_URL, connectionInitOptions: { wait: false } }),
      OutboxModule.forRoot({ name: ordersConnection, transactionConnectionName: ordersConnection, pollIntervalMs: 100 }),
      OutboxModule.forRoot({ name: 'billing', dataSourceName: 'billing', transactionConnectionName: 'billing', pollIntervalMs: 100 }),
    ],
    providers: [...fixture.providers, ...extraProviders],
  })
  class NamedOutboxesModule {}

  const module = await Test.createTestingModule({ imports: [NamedOutboxesModule] })
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
