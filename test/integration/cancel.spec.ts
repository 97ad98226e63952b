import { INestApplicationContext } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { OutboxError, OutboxOutsideTransactionError, OutboxService } from '../../lib';
import { OutboxAdmin, OutboxDispatcher } from '../../lib/entries/admin';
import { brokerName } from '../support/broker-names';
import { testDatabase } from '../support/database';
import { assertExchange, nothingMoreArrives, QueueProbe } from '../support/queue-probe';
import { createTestApp } from '../support/test-app';
import { STARTUP_TIMEOUT_MS, timeoutFor, WAIT_TIMEOUT_MS } from '../support/wait';

const database = testDatabase('it_cancel');
const EXCHANGE = brokerName('it.cancel');

describe('Cancelling a business event', () => {
  let writer: INestApplicationContext;
  let dispatcher: INestApplicationContext;
  let probe: QueueProbe;

  const publish = (bizKey: string, type = 'order.paid') =>
    writer
      .get(DataSource)
      .transaction((manager) => writer.get(OutboxService).publish({ type, exchange: EXCHANGE, routingKey: type, payload: { bizKey }, bizKey }, { manager }));
  const cancel = (bizKey: string, type?: string) =>
    writer.get(DataSource).transaction((manager) => writer.get(OutboxService).cancel(bizKey, type, { manager }));
  const statusOf = async (messageId: string) => (await database.sql(`SELECT status FROM {outbox_message} WHERE message_id = ?`, [messageId]))[0].status;

  beforeAll(async () => {
    await database.reset();
    await assertExchange(EXCHANGE);
    probe = await QueueProbe.bind(EXCHANGE, '#', `${EXCHANGE}.probe`);
    // Writes only, so that a message stays unsent until the test says so.
    writer = await createTestApp({ database, outbox: { dispatcherEnabled: false } });
  }, timeoutFor(STARTUP_TIMEOUT_MS));

  afterAll(async () => {
    await dispatcher?.close();
    await writer.close();
    await probe.close();
  });

  it(
    'never delivers a message cancelled before it was sent',
    async () => {
      const cancelled = await publish('order-1:paid');
      const kept = await publish('order-2:paid');
      expect(await cancel('order-1:paid')).toBe(1);
      expect(await statusOf(cancelled.messageId)).toBe('ABANDONED');

      dispatcher = await createTestApp({ database, outbox: { pollIntervalMs: 50 } });
      await dispatcher.get(OutboxDispatcher).drain();
      await probe.waitFor(1);
      // The kept message arrived, so it was claimed; claims take due rows in id order, so the
      // cancelled one, had it been claimable, was claimed no later. Once no row is left to send,
      // such a send was confirmed: it is in the probe's queue ahead of flush()'s marker.
      await nothingMoreArrives(database, probe);
      expect(probe.messageIds).toEqual([kept.messageId]);
      expect(await statusOf(cancelled.messageId)).toBe('ABANDONED');
    },
    timeoutFor(STARTUP_TIMEOUT_MS, 3 * WAIT_TIMEOUT_MS),
  );

  it(
    'changes nothing when the message was already sent',
    async () => {
      const sent = await publish('order-3:paid');
      await probe.waitFor(2);
      await dispatcher.get(OutboxDispatcher).drain();
      expect(await statusOf(sent.messageId)).toBe('DONE');
      expect(await cancel('order-3:paid')).toBe(0);
      expect(await statusOf(sent.messageId)).toBe('DONE');
    },
    timeoutFor(WAIT_TIMEOUT_MS),
  );

  it('cancels only the given event type when one is named', async () => {
    await dispatcher.close();
    dispatcher = undefined as unknown as INestApplicationContext;
    const paid = await publish('order-4', 'order.paid');
    const shipped = await publish('order-4', 'order.shipped');
    expect(await cancel('order-4', 'order.shipped')).toBe(1);
    expect(await statusOf(paid.messageId)).toBe('PENDING');
    expect(await statusOf(shipped.messageId)).toBe('ABANDONED');
  });

  it('refuses to cancel outside a transaction', async () => {
    await expect(writer.get(OutboxService).cancel('order-5:paid')).rejects.toBeInstanceOf(OutboxOutsideTransactionError);
  });

  it('refuses, with a typed error naming the field, a key or type no message can have', async () => {
    for (const [bizKey, type, field] of [
      ['order\u00006:paid', undefined, 'bizKey'],
      ['', undefined, 'bizKey'],
      ['k'.repeat(256), undefined, 'bizKey'],
      ['order-6:paid', 'order\u0000.paid', 'type'],
      ['order-6:paid', '€'.repeat(100), 'type'],
    ] as const) {
      await expect(cancel(bizKey, type)).rejects.toMatchObject({ name: 'OutboxMessageInvalidError', field });
    }
  });

  it('refuses, with a typed error, operator queries no row can answer', async () => {
    const admin = writer.get(OutboxAdmin);
    await expect(admin.findMessage({ bizKey: 'order\u00007', type: 'order.paid' })).rejects.toMatchObject({
      name: 'OutboxMessageInvalidError',
      field: 'bizKey',
    });
    await expect(admin.findMessage({ messageId: 'not-a-uuid' })).rejects.toBeInstanceOf(OutboxError);
    await expect(admin.requeueInbox('consumer', 'id\u0000')).rejects.toThrow(/messageId contains a NUL character/);
    await expect(admin.abandonInbox('con\u0000sumer', 'id')).rejects.toThrow(/consumer contains a NUL character/);
    expect(await admin.findMessage({ bizKey: 'order-7', type: 'order.paid' })).toBeNull();
  });
});
