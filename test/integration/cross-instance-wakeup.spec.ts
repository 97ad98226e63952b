import { INestApplicationContext } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { OutboxModuleOptionsInput, OutboxService } from '../../lib';
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

/** A dispatching and a writing instance on this file's database, and a probe on EXCHANGE. */
interface Instances {
  dispatcher: INestApplicationContext;
  writer: INestApplicationContext;
  probe: QueueProbe;
}

/**
 * Starts the instances before the enclosing describe's tests and closes them after. Both take
 * `wakeup`, the options of the wake-up under test; the writer's dispatcher is off. `settle` runs
 * once both are up.
 */
function startInstances(probeQueue: string, wakeup: OutboxModuleOptionsInput, settle?: (instances: Instances) => Promise<void>): Instances {
  const instances = {} as Instances;
  beforeAll(
    async () => {
      await database.reset();
      await assertExchange(EXCHANGE);
      instances.probe = await QueueProbe.bind(EXCHANGE, '#', probeQueue);
      instances.dispatcher = await createTestApp({ database, outbox: { pollIntervalMs: HOUR, ...wakeup } });
      instances.writer = await createTestApp({ database, outbox: { dispatcherEnabled: false, ...wakeup } });
      await settle?.(instances);
    },
    timeoutFor(2 * STARTUP_TIMEOUT_MS),
  );
  afterAll(async () => {
    await instances.writer?.close();
    await instances.dispatcher?.close();
    await instances.probe?.close();
  });
  return instances;
}

/** Publishes message `n` through the writer, in a transaction of its own. */
const publish = ({ writer }: Instances, n: number) =>
  writer
    .get(DataSource)
    .transaction((manager) => writer.get(OutboxService).publish({ type: 'wake.test', exchange: EXCHANGE, routingKey: 'wake', payload: { n } }, { manager }));

/** The test that the first message the writer commits reaches the probe, alone. */
const sendsTheFirstMessage = (instances: Instances) => async () => {
  const { messageId } = await publish(instances, 1);
  await instances.probe.waitFor(1);
  expect(instances.probe.messageIds).toEqual([messageId]);
};

describeOn(['postgres'], 'Waking another instance through PostgreSQL NOTIFY (NOTIFY/LISTEN exist on PostgreSQL only)', () => {
  // The dispatching instance polls once an hour, so only a wake-up can make it send promptly.
  const instances = startInstances(`${EXCHANGE}.probe`, { notifyMinIntervalMs: 0, notifyChannel: CHANNEL });

  it('sends a message written by another instance without waiting for a poll', sendsTheFirstMessage(instances), timeoutFor(WAIT_TIMEOUT_MS));

  it(
    'keeps working after the listening connection is killed',
    async () => {
      const wakes = jest.spyOn(instances.dispatcher.get(OutboxWakeup), 'wake');
      const killed = await database.sql(`SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE query = ?`, [`LISTEN "${CHANNEL}"`]);
      expect(killed).toHaveLength(1);
      // The listener notices and listens again (it retries after a second), then looks once for
      // what it missed: that look must be over before publishing, or it, not a wake-up, would
      // find the message.
      await waitUntil(() => wakes.mock.calls.length > 0, 'the dispatcher listens again');
      await instances.dispatcher.get(OutboxDispatcher).drain();
      const { messageId } = await publish(instances, 2);
      await instances.probe.waitFor(2);
      expect(instances.probe.messageIds[1]).toBe(messageId);
    },
    timeoutFor(2 * WAIT_TIMEOUT_MS),
  );
});

describeOn(['mariadb', 'mysql'], 'Waking another instance on MySQL and MariaDB (no NOTIFY: a look at the newest PENDING ids)', () => {
  // The dispatching instance polls once an hour and runs with the default look interval, so
  // only the look can make it send within the wait, which is far shorter than the poll.
  const instances = startInstances(`${EXCHANGE}.mysql-probe`, {}, async ({ dispatcher }) => {
    // What start-up found is sent; from here on only a wake-up sends.
    await dispatcher.get(OutboxDispatcher).drain();
  });

  it(
    'sends a message committed by an instance whose dispatcher is off without waiting for a poll',
    sendsTheFirstMessage(instances),
    timeoutFor(WAIT_TIMEOUT_MS),
  );

  it(
    'sends every message of a stream committed by the other instance, one after another',
    async () => {
      const ids: string[] = [];
      for (let n = 2; n <= 4; n++) {
        ids.push((await publish(instances, n)).messageId);
        await instances.probe.waitFor(n);
      }
      expect(instances.probe.messageIds.slice(1)).toEqual(ids);
    },
    timeoutFor(3 * WAIT_TIMEOUT_MS),
  );
});
