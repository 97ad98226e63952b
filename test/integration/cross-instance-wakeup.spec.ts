import { INestApplicationContext } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { OutboxService } from '../../lib';
import { describeOn, testDatabase } from '../support/database';
import { assertExchange, QueueProbe } from '../support/queue-probe';
import { createTestApp } from '../support/test-app';

const database = testDatabase('it_cross_instance_wakeup');
const EXCHANGE = 'it.cross-instance-wakeup';
const HOUR = 3_600_000;
/** A channel of this file's own, so that killing its listener disturbs no other test file. */
const CHANNEL = 'it_cross_instance_wakeup';

describeOn(['postgres'], 'Waking another instance through PostgreSQL NOTIFY (NOTIFY/LISTEN exist on PostgreSQL only)', () => {
  let writer: INestApplicationContext;
  let dispatcher: INestApplicationContext;
  let probe: QueueProbe;

  beforeAll(async () => {
    await database.reset();
    await assertExchange(EXCHANGE);
    probe = await QueueProbe.bind(EXCHANGE, '#', `${EXCHANGE}.probe`);
    // The dispatching instance polls once an hour, so only a wake-up can make it send promptly.
    dispatcher = await createTestApp({ database, outbox: { pollIntervalMs: HOUR, notifyMinIntervalMs: 0, notifyChannel: CHANNEL } });
    writer = await createTestApp({ database, outbox: { dispatcherEnabled: false, notifyMinIntervalMs: 0, notifyChannel: CHANNEL } });
  });

  afterAll(async () => {
    await writer.close();
    await dispatcher.close();
    await probe.close();
  });

  const publish = (n: number) =>
    writer.get(DataSource).transaction((manager) =>
      writer.get(OutboxService).publish({ type: 'wake.test', exchange: EXCHANGE, routingKey: 'wake', payload: { n } }, { manager }),
    );

  it('sends a message written by another instance without waiting for a poll', async () => {
    const { messageId } = await publish(1);
    await probe.waitFor(1, 10_000);
    expect(probe.messageIds).toEqual([messageId]);
  });

  it('keeps working after the listening connection is killed', async () => {
    const killed = await database.sql(`SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE query = ?`, [`LISTEN "${CHANNEL}"`]);
    expect(killed).toHaveLength(1);
    // Give the listener time to notice and re-subscribe (it retries after a second).
    await new Promise((resolve) => setTimeout(resolve, 2_500));
    const { messageId } = await publish(2);
    await probe.waitFor(2, 10_000);
    expect(probe.messageIds[1]).toBe(messageId);
  });
});
