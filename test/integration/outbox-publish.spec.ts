import { INestApplicationContext } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { OutboxDispatcher, OutboxOutsideTransactionError, OutboxService } from '../../lib';
import { freshSchema, sql, statusCounts } from '../support/database';
import { assertExchange, QueueProbe } from '../support/queue-probe';
import { createTestApp, OrderPayments } from '../support/test-app';
import { sleep } from '../support/wait';

const SCHEMA = 'it_outbox_publish';
const EXCHANGE = 'it.outbox-publish';

describe('Outbox publishing (PostgreSQL + RabbitMQ)', () => {
  let app: INestApplicationContext;
  let probe: QueueProbe;
  let payments: OrderPayments;

  beforeAll(async () => {
    await freshSchema(SCHEMA);
    await assertExchange(EXCHANGE);
    app = await createTestApp({ schema: SCHEMA, outbox: { pollIntervalMs: 200 } });
    payments = app.get(OrderPayments);
  });

  beforeEach(async () => {
    probe = await QueueProbe.bind(EXCHANGE, '#', `${EXCHANGE}.probe`);
  });

  afterEach(() => probe.close());
  afterAll(() => app.close());

  it('delivers a committed message to a bound queue with its messageId', async () => {
    const { messageId, order } = await payments.pay(EXCHANGE);
    await probe.waitFor(1);
    expect(probe.messageIds).toEqual([messageId]);
    expect(probe.bodies()).toEqual([{ orderId: order.id }]);
    const message = probe.messages[0];
    expect(message.properties.type).toBe('order.paid');
    expect(message.properties.deliveryMode).toBe(2);
    expect(message.properties.contentType).toBe('application/json');
    const rows = await sql(`SELECT status, attempts, processed_at FROM "${SCHEMA}".outbox_message WHERE message_id = $1`, [messageId]);
    expect(rows).toEqual([expect.objectContaining({ status: 'DONE', attempts: 0 })]);
    expect(rows[0].processed_at).toBeInstanceOf(Date);
  });

  it('does not publish a message whose transaction rolled back', async () => {
    const count = async () => (await sql(`SELECT
        (SELECT count(*)::int FROM "${SCHEMA}".outbox_message) AS messages,
        (SELECT count(*)::int FROM "${SCHEMA}".test_order) AS orders`))[0];
    const before = await count();
    await expect(payments.pay(EXCHANGE, { fail: true })).rejects.toThrow('payment rejected');
    await app.get(OutboxDispatcher).drain();
    await sleep(500);
    expect(probe.messages).toHaveLength(0);
    // Neither the business row nor the message survived the rollback.
    expect(await count()).toEqual(before);
  });

  it('sends nothing before COMMIT, even when the transaction stays open for seconds', async () => {
    const paying = payments.pay(EXCHANGE, { holdMs: 2_500 });
    await sleep(2_000);
    await app.get(OutboxDispatcher).drain();
    expect(probe.messages).toHaveLength(0);
    const { messageId } = await paying;
    await probe.waitFor(1);
    expect(probe.messageIds).toEqual([messageId]);
  });

  it('refuses to publish outside a transaction, with a typed error, and writes nothing', async () => {
    const outbox = app.get(OutboxService);
    const message = { type: 'order.paid', exchange: EXCHANGE, routingKey: 'order.paid', payload: {}, bizKey: 'loose:paid' };
    await expect(outbox.publish(message)).rejects.toBeInstanceOf(OutboxOutsideTransactionError);
    await expect(outbox.publish(message)).rejects.toThrow(/@Transactional\(\)/);
    const manager = app.get(DataSource).manager;
    await expect(outbox.publish(message, { manager })).rejects.toBeInstanceOf(OutboxOutsideTransactionError);
    expect(await sql(`SELECT * FROM "${SCHEMA}".outbox_message WHERE biz_key = 'loose:paid'`)).toEqual([]);
  });

  it('publishes a duplicate (type, bizKey) once, reporting the duplicate', async () => {
    const first = await payments.pay(EXCHANGE, { bizKey: 'order-dup:paid' });
    const second = await payments.pay(EXCHANGE, { bizKey: 'order-dup:paid' });
    expect(first.duplicate).toBe(false);
    expect(second).toMatchObject({ duplicate: true, messageId: first.messageId });
    await probe.waitFor(1);
    await app.get(OutboxDispatcher).drain();
    await sleep(300);
    expect(probe.messageIds).toEqual([first.messageId]);
  });

  it('publishes with an explicit manager of an open transaction', async () => {
    const outbox = app.get(OutboxService);
    const { messageId } = await app.get(DataSource).transaction((manager) =>
      outbox.publish({ type: 'order.shipped', exchange: EXCHANGE, routingKey: 'order.shipped', payload: { n: 1 } }, { manager }),
    );
    await probe.waitFor(1);
    expect(probe.messageIds).toEqual([messageId]);
    expect((await statusCounts(SCHEMA)).PROCESSING).toBeUndefined();
  });
});
