import { RabbitSubscribe } from '@golevelup/nestjs-rabbitmq';
import { Transactional, TransactionHost } from '@nestjs-cls/transactional';
import { TransactionalAdapterTypeOrm } from '@nestjs-cls/transactional-adapter-typeorm';
import { INestApplicationContext, Injectable } from '@nestjs/common';
import { randomUUID } from 'node:crypto';
import { InboxHandler, OutboxService, OutboxTransactionRolledBackError } from '../../lib';
import { OutboxDispatcher } from '../../lib/entries/admin';
import { BrokerConnection } from '../support/broker-connection';
import { brokerName } from '../support/broker-names';
import { describeOn, testDatabase } from '../support/database';
import { MysqlTestDatabase } from '../support/databases/mysql-test-database';
import { DeadlockRival } from '../support/innodb-deadlock';
import { assertExchange, nothingMoreArrives, QueueProbe } from '../support/queue-probe';
import { createTestApp, TestEffect, TestOrder } from '../support/test-app';
import { STARTUP_TIMEOUT_MS, timeoutFor, WAIT_TIMEOUT_MS, waitUntil } from '../support/wait';

const database = testDatabase('it_server_rollback') as MysqlTestDatabase;
const EXCHANGE = brokerName('it.server-rollback');
const IN_EXCHANGE = brokerName('it.server-rollback.in');
const QUEUES = { transactional: brokerName('it.server-rollback.transactional'), deferred: brokerName('it.server-rollback.deferred') };

/** Business code that catches a deadlock and goes on, as a retry-less `try/catch` around one statement would. */
@Injectable()
class DeadlockedPayments {
  constructor(
    private readonly txHost: TransactionHost<TransactionalAdapterTypeOrm>,
    private readonly outbox: OutboxService,
  ) {}

  @Transactional()
  async pay(bizKey: string): Promise<void> {
    await this.txHost.tx.getRepository(TestOrder).save({ status: 'DEADLOCKED' });
    await DeadlockRival.loseDeadlock(database, this.txHost.tx);
    await this.outbox.publish({ type: 'order.paid', exchange: EXCHANGE, routingKey: 'order.paid', bizKey, payload: {} });
  }

  /** Catches a duplicate key (InnoDB undoes the statement only) and publishes. */
  @Transactional()
  async payAfterDuplicateKey(bizKey: string): Promise<void> {
    const order = await this.txHost.tx.getRepository(TestOrder).save({ status: 'DUPLICATE' });
    await this.txHost.tx.query('INSERT INTO test_order (id, status) VALUES (?, ?)', [order.id, 'DUPLICATE']).then(
      () => Promise.reject(new Error('the duplicate key was accepted')),
      () => undefined,
    );
    await this.outbox.publish({ type: 'order.paid', exchange: EXCHANGE, routingKey: 'order.paid', bizKey, payload: {} });
  }

  /** Catches a failed statement and publishes. */
  @Transactional()
  async payAfterCaughtError(bizKey: string): Promise<void> {
    await this.txHost.tx.getRepository(TestOrder).save({ status: 'CAUGHT' });
    await this.txHost.tx.query('SELECT 1 / 0').catch(() => undefined);
    await this.outbox.publish({ type: 'order.paid', exchange: EXCHANGE, routingKey: 'order.paid', bizKey, payload: {} });
  }

  /** Ends the transaction on the server with `statement`, behind TypeORM's back, and publishes. */
  @Transactional()
  async payAfter(statement: string, bizKey: string): Promise<void> {
    await this.txHost.tx.getRepository(TestOrder).save({ status: 'RAW-ENDED' });
    await this.txHost.tx.query(statement);
    await this.outbox.publish({ type: 'order.paid', exchange: EXCHANGE, routingKey: 'order.paid', bizKey, payload: {} });
  }
}

/** An inbox handler of each mode that writes its effect, then loses a deadlock on its first run and goes on. */
function deadlockingConsumer(mode: 'transactional' | 'deferred') {
  @Injectable()
  class DeadlockingConsumer {
    readonly runs = new Map<string, number>();
    constructor(private readonly txHost: TransactionHost<TransactionalAdapterTypeOrm>) {}

    @RabbitSubscribe({ exchange: IN_EXCHANGE, routingKey: mode, queue: QUEUES[mode], queueOptions: { durable: false } })
    @InboxHandler({ consumer: `deadlock-${mode}`, mode })
    async handle(event: { orderId: number }, message: { properties: { messageId: string } }): Promise<void> {
      const id = message.properties.messageId;
      this.runs.set(id, (this.runs.get(id) ?? 0) + 1);
      await this.txHost.tx.getRepository(TestEffect).insert({ consumer: `deadlock-${mode}`, orderId: event.orderId, messageId: id });
      if (this.runs.get(id) === 1) await DeadlockRival.loseDeadlock(database, this.txHost.tx);
    }
  }
  Object.defineProperty(DeadlockingConsumer, 'name', { value: `DeadlockingConsumer_${mode}` });
  return DeadlockingConsumer;
}
const consumers = { transactional: deadlockingConsumer('transactional'), deferred: deadlockingConsumer('deferred') };

describeOn(['mariadb', 'mysql'], 'A transaction the server rolled back after a caught deadlock', () => {
  let app: INestApplicationContext;
  let probe: QueueProbe;
  let broker: BrokerConnection;

  beforeAll(async () => {
    await database.reset();
    await assertExchange(EXCHANGE);
    broker = await BrokerConnection.open();
    await broker.assertExchange(IN_EXCHANGE);
    await broker.freshQueues(Object.values(QUEUES));
    probe = await QueueProbe.bind(EXCHANGE, '#', `${EXCHANGE}.probe`);
    app = await createTestApp({
      database,
      outbox: { pollIntervalMs: 50, backoffBaseMs: 50, backoffMaxMs: 100 },
      providers: [DeadlockedPayments, ...Object.values(consumers)],
    });
    await DeadlockRival.prepare(database);
  }, timeoutFor(STARTUP_TIMEOUT_MS));

  afterAll(async () => {
    await app?.close();
    await probe?.close();
    await broker?.close();
  });

  it(
    'refuses to publish with a typed error, and neither stores nor sends the message',
    async () => {
      const bizKey = `order-${randomUUID()}:paid`;
      const outcome = await app
        .get(DeadlockedPayments)
        .pay(bizKey)
        .then(
          () => undefined,
          (error: unknown) => error,
        );
      await app.get(OutboxDispatcher).drain();
      await nothingMoreArrives(database, probe);
      // InnoDB rolled back the business row with the deadlock; the message must not outlive it.
      expect(await database.sql(`SELECT status FROM {outbox_message} WHERE biz_key = ?`, [bizKey])).toEqual([]);
      expect(probe.messages).toHaveLength(0);
      expect(await database.sql(`SELECT id FROM {test_order} WHERE status = 'DEADLOCKED'`)).toEqual([]);
      expect(outcome).toBeInstanceOf(OutboxTransactionRolledBackError);
      expect((outcome as Error).message).toMatch(/already rolled back this transaction \(.*Deadlock.*\).*retry it as a whole/s);
    },
    timeoutFor(2 * WAIT_TIMEOUT_MS),
  );

  it.each(['COMMIT', 'ROLLBACK', 'CREATE TABLE IF NOT EXISTS implicit_commit (id INT PRIMARY KEY)'])(
    'refuses to publish after the statement %j ended the transaction on the server',
    async (statement) => {
      const bizKey = `order-${randomUUID()}:paid`;
      const outcome = await app
        .get(DeadlockedPayments)
        .payAfter(statement, bizKey)
        .then(
          () => undefined,
          (error: unknown) => error,
        );
      // The row would have committed on its own, whatever became of the transaction.
      expect(await database.sql(`SELECT status FROM {outbox_message} WHERE biz_key = ?`, [bizKey])).toEqual([]);
      expect(outcome).toBeInstanceOf(OutboxTransactionRolledBackError);
      expect((outcome as Error).message).toContain(`no transaction open since the statement ${JSON.stringify(statement)}`);
    },
    timeoutFor(),
  );

  it('lets a transaction that caught an error InnoDB undoes alone (a duplicate key) go on and publish', async () => {
    const bizKey = `order-${randomUUID()}:paid`;
    await app.get(DeadlockedPayments).payAfterDuplicateKey(bizKey);
    expect(await database.sql(`SELECT biz_key FROM {outbox_message} WHERE biz_key = ?`, [bizKey])).toEqual([{ biz_key: bizKey }]);
  });

  for (const mode of ['transactional', 'deferred'] as const) {
    it(
      `runs a ${mode} handler again rather than record as handled a run whose transaction the server rolled back`,
      async () => {
        const messageId = randomUUID();
        const orderId = mode === 'transactional' ? 1 : 2;
        broker.channel.publish(IN_EXCHANGE, mode, Buffer.from(JSON.stringify({ orderId })), { messageId, contentType: 'application/json' });
        const inboxRow = async () =>
          (await database.sql(`SELECT status FROM {inbox_message} WHERE consumer = ? AND message_id = ?`, [`deadlock-${mode}`, messageId]))[0];
        await waitUntil(async () => (await inboxRow())?.status === 'DONE', `the ${mode} delivery is recorded as handled`);
        // The first run's effect went with the deadlock; the one that stands is the second run's.
        expect(app.get(consumers[mode]).runs.get(messageId)).toBe(2);
        expect(await database.sql(`SELECT id FROM {test_effect} WHERE message_id = ?`, [messageId])).toHaveLength(1);
      },
      timeoutFor(WAIT_TIMEOUT_MS),
    );
  }
});

describeOn(['postgres'], 'A PostgreSQL transaction that failed or was ended behind TypeORM', () => {
  let app: INestApplicationContext;

  beforeAll(async () => {
    await database.reset();
    app = await createTestApp({ database, providers: [DeadlockedPayments] });
  }, timeoutFor(STARTUP_TIMEOUT_MS));

  afterAll(() => app?.close());

  it.each(['COMMIT', 'ROLLBACK'])('refuses to publish after the raw statement %j ended the transaction', async (statement) => {
    const bizKey = `order-${randomUUID()}:paid`;
    const outcome = await app
      .get(DeadlockedPayments)
      .payAfter(statement, bizKey)
      .then(
        () => undefined,
        (error: unknown) => error,
      );
    // The row would have committed on its own, whatever became of the transaction.
    expect(await database.sql(`SELECT status FROM {outbox_message} WHERE biz_key = ?`, [bizKey])).toEqual([]);
    expect(outcome).toBeInstanceOf(OutboxTransactionRolledBackError);
  });

  it('refuses every statement after a caught error, publish() too, so nothing is stored', async () => {
    const bizKey = `order-${randomUUID()}:paid`;
    // 25P02: the server refuses statements until the transaction ends; no autocommit to fall into.
    await expect(app.get(DeadlockedPayments).payAfterCaughtError(bizKey)).rejects.toMatchObject({ code: '25P02' });
    expect(await database.sql(`SELECT status FROM {outbox_message} WHERE biz_key = ?`, [bizKey])).toEqual([]);
    expect(await database.sql(`SELECT id FROM {test_order} WHERE status = 'CAUGHT'`)).toEqual([]);
  });
});
