import { INestApplicationContext } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { OutboxService } from '../../lib';
import { OutboxDispatcher } from '../../lib/entries/admin';
import { OutboxWakeup } from '../../lib/outbox/outbox-wakeup';
import { brokerName } from '../support/broker-names';
import { describeOn, testDatabase } from '../support/database';
import { assertExchange, QueueProbe } from '../support/queue-probe';
import { createTestApp } from '../support/test-app';
import { STARTUP_TIMEOUT_MS, timeoutFor, WAIT_TIMEOUT_MS, waitUntil } from '../support/wait';

const database = testDatabase('it_cross_instance_wakeup');
/** Of this database's project alone: the projects share one broker and run at once. */
const EXCHANGE = brokerName('it.cross-instance-wakeup');
const HOUR = 3_600_000;
/** A channel of this file's own, so that killing its listener disturbs no other test file. */
const CHANNEL = 'it_cross_instance_wakeup';

describeOn(['postgres'], 'Waking another instance through PostgreSQL NOTIFY (NOTIFY/LISTEN exist on PostgreSQL only)', () => {
  let writer: INestApplicationContext;
  let dispatcher: INestApplicationContext;
  let probe: QueueProbe;

  beforeAll(
    async () => {
      await database.reset();
      await assertExchange(EXCHANGE);
      probe = await QueueProbe.bind(EXCHANGE, '#', `${EXCHANGE}.probe`);
      // The dispatching instance polls once an hour, so only a wake-up can make it send promptly.
      dispatcher = await createTestApp({ database, outbox: { pollIntervalMs: HOUR, notifyMinIntervalMs: 0, notifyChannel: CHANNEL } });
      writer = await createTestApp({ database, outbox: { dispatcherEnabled: false, notifyMinIntervalMs: 0, notifyChannel: CHANNEL } });
    },
    timeoutFor(2 * STARTUP_TIMEOUT_MS),
  );

  afterAll(async () => {
    await writer.close();
    await dispatcher.close();
    await probe.close();
  });

  const publish = (n: number) =>
    writer
      .get(DataSource)
      .transaction((manager) => writer.get(OutboxService).publish({ type: 'wake.test', exchange: EXCHANGE, routingKey: 'wake', payload: { n } }, { manager }));

  it(
    'sends a message written by another instance without waiting for a poll',
    async () => {
      const { messageId } = await publish(1);
      await probe.waitFor(1);
      expect(probe.messageIds).toEqual([messageId]);
    },
    timeoutFor(WAIT_TIMEOUT_MS),
  );

  it(
    'keeps working after the listening connection is killed',
    async () => {
      const wakes = jest.spyOn(dispatcher.get(OutboxWakeup), 'wake');
      const killed = await database.sql(`SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE query = ?`, [`LISTEN "${CHANNEL}"`]);
      expect(killed).toHaveLength(1);
      // The listener notices and listens again (it retries after a second), then looks once for
      // what it missed: that look must be over before publishing, or it, not a wake-up, would
      // find the message.
      await waitUntil(() => wakes.mock.calls.length > 0, 'the dispatcher listens again');
      await dispatcher.get(OutboxDispatcher).drain();
      const { messageId } = await publish(2);
      await probe.waitFor(2);
      expect(probe.messageIds[1]).toBe(messageId);
    },
    timeoutFor(2 * WAIT_TIMEOUT_MS),
  );
});

describeOn(['mariadb', 'mysql'], 'Waking another instance on MySQL and MariaDB (no NOTIFY: a look at the newest PENDING ids)', () => {
  let writer: INestApplicationContext;
  let dispatcher: INestApplicationContext;
  let probe: QueueProbe;
  const QUEUE = `${EXCHANGE}.mysql-probe`;

  beforeAll(
    async () => {
      await database.reset();
      await assertExchange(EXCHANGE);
      probe = await QueueProbe.bind(EXCHANGE, '#', QUEUE);
      // The dispatching instance polls once an hour and runs with the default look interval, so
      // only the look can make it send within the wait, which is far shorter than the poll.
      dispatcher = await createTestApp({ database, outbox: { pollIntervalMs: HOUR } });
      writer = await createTestApp({ database, outbox: { dispatcherEnabled: false } });
      // What start-up found is sent; from here on only a wake-up sends.
      await dispatcher.get(OutboxDispatcher).drain();
    },
    timeoutFor(2 * STARTUP_TIMEOUT_MS),
  );

  afterAll(async () => {
    await writer?.close();
    await dispatcher?.close();
    await probe?.close();
  });

  const publish = (n: number) =>
    writer
      .get(DataSource)
      .transaction((manager) => writer.get(OutboxService).publish({ type: 'wake.test', exchange: EXCHANGE, routingKey: 'wake', payload: { n } }, { manager }));

  it(
    'sends a message committed by an instance whose dispatcher is off without waiting for a poll',
    async () => {
      const { messageId } = await publish(1);
      await probe.waitFor(1);
      expect(probe.messageIds).toEqual([messageId]);
    },
    timeoutFor(WAIT_TIMEOUT_MS),
  );

  it(
    'sends every message of a stream committed by the other instance, one after another',
    async () => {
      const ids: string[] = [];
      for (let n = 2; n <= 4; n++) {
        ids.push((await publish(n)).messageId);
        await probe.waitFor(n);
      }
      expect(probe.messageIds.slice(1)).toEqual(ids);
    },
    timeoutFor(3 * WAIT_TIMEOUT_MS),
  );
});
