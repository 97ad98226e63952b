import { INestApplicationContext } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { OutboxOutsideTransactionError, OutboxService } from '../../lib';
import { OutboxDispatcher } from '../../lib/entries/admin';
import { brokerName } from '../support/broker-names';
import { testDatabase } from '../support/database';
import { assertExchange, nothingMoreArrives as nothingMoreArrivesFrom, QueueProbe } from '../support/queue-probe';
import { toDate } from '../support/sql-values';
import { createTestApp, OrderPayments } from '../support/test-app';
import { sleep, STARTUP_TIMEOUT_MS, timeoutFor, WAIT_TIMEOUT_MS, waitUntil } from '../support/wait';

const database = testDatabase('it_outbox_publish');
const EXCHANGE = brokerName('it.outbox-publish');

describe('Outbox publishing', () => {
  let app: INestApplicationContext;
  let probe: QueueProbe;
  let payments: OrderPayments;

  beforeAll(async () => {
    await database.reset();
    await assertExchange(EXCHANGE);
    app = await createTestApp({ database, outbox: { pollIntervalMs: 200 } });
    payments = app.get(OrderPayments);
  }, timeoutFor(STARTUP_TIMEOUT_MS));

  beforeEach(async () => {
    probe = await QueueProbe.bind(EXCHANGE, '#', `${EXCHANGE}.probe`);
  });

  afterEach(() => probe.close());
  afterAll(() => app.close());

  const nothingMoreArrives = () => nothingMoreArrivesFrom(database, probe);

  it(
    'delivers a committed message to a bound queue with its messageId',
    async () => {
      const { messageId, order } = await payments.pay(EXCHANGE);
      await probe.waitFor(1);
      expect(probe.messageIds).toEqual([messageId]);
      expect(probe.bodies()).toEqual([{ orderId: order.id }]);
      const message = probe.messages[0];
      expect(message.properties.type).toBe('order.paid');
      expect(message.properties.deliveryMode).toBe(2);
      expect(message.properties.contentType).toBe('application/json');
      // Marked DONE after the confirm, with other batches' sent rows (within 10 ms).
      const stored = () => database.sql(`SELECT status, attempts, processed_at, created_at FROM {outbox_message} WHERE message_id = ?`, [messageId]);
      await waitUntil(async () => (await stored())[0]?.status === 'DONE', 'the message is DONE');
      const rows = await stored();
      // The delivery headers: the first attempt, and the publish time as the row records it.
      expect(message.properties.headers).toEqual({ 'outbox-attempt': 1, 'outbox-published-at': toDate(rows[0].created_at)!.toISOString() });
      expect(rows).toEqual([expect.objectContaining({ status: 'DONE' })]);
      expect(Number(rows[0].attempts)).toBe(0);
      // Set when it was sent: a moment ago by the database's clock.
      expect(Math.abs(Date.now() - toDate(rows[0].processed_at)!.getTime())).toBeLessThan(60_000);
    },
    timeoutFor(WAIT_TIMEOUT_MS),
  );

  it(
    'does not publish a message whose transaction rolled back',
    async () => {
      const count = async () => {
        const [row] = await database.sql(`SELECT (SELECT count(*) FROM {outbox_message}) AS messages, (SELECT count(*) FROM {test_order}) AS orders`);
        return { messages: Number(row.messages), orders: Number(row.orders) };
      };
      const before = await count();
      await expect(payments.pay(EXCHANGE, { fail: true })).rejects.toThrow('payment rejected');
      await app.get(OutboxDispatcher).drain();
      // A row that survived the rollback would be sent.
      await nothingMoreArrives();
      expect(probe.messages).toHaveLength(0);
      // Neither the business row nor the message survived the rollback.
      expect(await count()).toEqual(before);
    },
    timeoutFor(2 * WAIT_TIMEOUT_MS),
  );

  it(
    'sends nothing before COMMIT, even when the transaction stays open for seconds',
    async () => {
      let arrivedBeforeCommit: number | undefined;
      const paying = payments.pay(EXCHANGE, { holdMs: 2_500, beforeCommit: () => (arrivedBeforeCommit = probe.messages.length) });
      // Time for polls (every 200 ms) to run while the transaction is open, before the explicit
      // pass below. A slow machine may run fewer of them before COMMIT; it cannot make one send early.
      await sleep(2_000);
      // A dispatch pass while the transaction is open. On SQLite it waits for the one connection
      // to leave the transaction, so it is not awaited here: what counts is what arrived before COMMIT.
      const draining = app.get(OutboxDispatcher).drain();
      const { messageId } = await paying;
      expect(arrivedBeforeCommit).toBe(0);
      await draining;
      await probe.waitFor(1);
      expect(probe.messageIds).toEqual([messageId]);
    },
    timeoutFor(WAIT_TIMEOUT_MS),
  );

  it('refuses to publish outside a transaction, with a typed error, and writes nothing', async () => {
    const outbox = app.get(OutboxService);
    const message = { type: 'order.paid', exchange: EXCHANGE, routingKey: 'order.paid', payload: {}, bizKey: 'loose:paid' };
    await expect(outbox.publish(message)).rejects.toBeInstanceOf(OutboxOutsideTransactionError);
    await expect(outbox.publish(message)).rejects.toThrow(/@Transactional\(\)/);
    const manager = app.get(DataSource).manager;
    await expect(outbox.publish(message, { manager })).rejects.toBeInstanceOf(OutboxOutsideTransactionError);
    expect(await database.sql(`SELECT * FROM {outbox_message} WHERE biz_key = ?`, ['loose:paid'])).toEqual([]);
  });

  it(
    'publishes a duplicate (type, bizKey) once, reporting the duplicate',
    async () => {
      const first = await payments.pay(EXCHANGE, { bizKey: 'order-dup:paid' });
      const second = await payments.pay(EXCHANGE, { bizKey: 'order-dup:paid' });
      expect(first.duplicate).toBe(false);
      expect(second).toMatchObject({ duplicate: true, messageId: first.messageId });
      await probe.waitFor(1);
      await app.get(OutboxDispatcher).drain();
      // A second row, had the duplicate written one, would be sent.
      await nothingMoreArrives();
      expect(probe.messageIds).toEqual([first.messageId]);
    },
    timeoutFor(3 * WAIT_TIMEOUT_MS),
  );

  it(
    'publishes with an explicit manager of an open transaction',
    async () => {
      const outbox = app.get(OutboxService);
      const { messageId } = await app
        .get(DataSource)
        .transaction((manager) => outbox.publish({ type: 'order.shipped', exchange: EXCHANGE, routingKey: 'order.shipped', payload: { n: 1 } }, { manager }));
      await probe.waitFor(1);
      expect(probe.messageIds).toEqual([messageId]);
      await waitUntil(async () => (await database.statusCounts()).PROCESSING === undefined, 'the message is settled');
      expect(await database.statusCounts()).toEqual({ DONE: expect.any(Number) });
    },
    timeoutFor(WAIT_TIMEOUT_MS),
  );
});
