import { randomUUID } from 'node:crypto';
import { BrokerConnection } from '../support/broker-connection';
import { brokerName } from '../support/broker-names';
import { ChildApp, killAllChildren, STOP_TIMEOUT_MS } from '../support/child-app';
import { testDatabase } from '../support/database';
import { InboxFixtureConfig } from '../support/inbox-fixture';
import { STARTUP_TIMEOUT_MS, timeoutFor, WAIT_TIMEOUT_MS, waitUntil } from '../support/wait';

const database = testDatabase('it_inbox_crash');
const PREFIX = brokerName('it.inbox-crash');

const fixture = (mode: 'transactional' | 'deferred', crash?: InboxFixtureConfig['crash']): InboxFixtureConfig => ({
  exchange: `${PREFIX}.in`,
  routingKey: `order.${mode}`,
  outExchange: `${PREFIX}.out`,
  deadLetterExchange: `${PREFIX}.dlx`,
  consumers: [{ name: `crash-${mode}`, queue: `${PREFIX}.${mode}` }],
  mode,
  crash,
});

/**
 * Short timings so that a dead claimant's rows are reclaimed within seconds; long enough that the
 * rescuer's own claims, handled in moments, never expire on a loaded machine (the test counts
 * attempts exactly).
 */
const RESCUE_TIMINGS = {
  stuckReclaimAfterMs: 6_000,
  sendTimeoutMs: 5_000,
  stuckWarnAfterMs: 1_000,
  stuckCheckIntervalMs: 300,
  backoffBaseMs: 50,
  backoffMaxMs: 200,
  pollIntervalMs: 100,
};

describe('Inbox recovery from a SIGKILLed consumer (real processes)', () => {
  let broker: BrokerConnection;

  beforeAll(async () => {
    await database.reset();
    broker = await BrokerConnection.open();
    await broker.prepareInboxes([fixture('transactional'), fixture('deferred')], { outExchange: true });
  });

  afterEach(() => killAllChildren());

  afterAll(async () => {
    await broker.close();
  });

  // The children create test_effect at start-up (synchronize), with the library's tables.
  const effects = async (orderId: number) => Number((await database.sql(`SELECT count(*) AS n FROM {test_effect} WHERE order_id = ?`, [orderId]))[0].n);
  const inboxRow = async (messageId: string) => {
    const [row] = await database.sql(`SELECT status, attempts, claimed_by FROM {inbox_message} WHERE message_id = ?`, [messageId]);
    return row && { ...row, attempts: Number(row.attempts) };
  };
  const readyInQueue = async (queue: string) => (await broker.channel.checkQueue(queue)).messageCount;
  const consumersOf = async (queue: string) => (await broker.channel.checkQueue(queue)).consumerCount;

  it(
    'recognises the redelivery of a message whose handler committed just before the crash, without rerunning it',
    async () => {
      const config = fixture('transactional', 'after-commit');
      const crashing = await ChildApp.start('it-inbox-crash-a', { database, inbox: config });
      const messageId = randomUUID();
      broker.channel.publish(config.exchange, config.routingKey, Buffer.from(JSON.stringify({ orderId: 1 })), { messageId, type: 'order.paid' });

      const exit = await crashing.waitForExit();
      expect(exit.signal).toBe('SIGKILL');
      expect(await effects(1)).toBe(1);
      expect(await inboxRow(messageId)).toMatchObject({ status: 'DONE' });
      // Never acknowledged: the broker gives the message back once the dead connection is noticed.
      await waitUntil(async () => (await readyInQueue(config.consumers[0].queue)) === 1, 'the unacknowledged message is back in the queue');

      const restarted = await ChildApp.start('it-inbox-crash-b', { database, inbox: fixture('transactional') });
      await waitUntil(async () => (await readyInQueue(config.consumers[0].queue)) === 0, 'the redelivery is consumed');
      await restarted.stop();
      // Had the restarted consumer not acknowledged it, the message would be back in the queue.
      expect(await readyInQueue(config.consumers[0].queue)).toBe(0);
      expect(await effects(1)).toBe(1);
    },
    timeoutFor(2 * STARTUP_TIMEOUT_MS, 3 * WAIT_TIMEOUT_MS, STOP_TIMEOUT_MS),
  );

  it(
    'acknowledges a deferred delivery before processing, and completes a crashed processing once after reclaim',
    async () => {
      const config = fixture('deferred', 'in-handler');
      const crashing = await ChildApp.start('it-inbox-crash-c', { database, inbox: config });
      const messageId = randomUUID();
      broker.channel.publish(config.exchange, config.routingKey, Buffer.from(JSON.stringify({ orderId: 2 })), { messageId, type: 'order.paid' });

      const exit = await crashing.waitForExit();
      expect(exit.signal).toBe('SIGKILL');
      // Acknowledged before the handler ran: nothing comes back to the queue. The broker puts a dead
      // consumer's unacknowledged deliveries back in the same step that removes the consumer, so
      // once the queue has no consumer, an unacknowledged delivery would be counted here.
      await waitUntil(async () => (await consumersOf(config.consumers[0].queue)) === 0, 'the broker dropped the killed consumer');
      expect(await readyInQueue(config.consumers[0].queue)).toBe(0);
      expect(await inboxRow(messageId)).toMatchObject({ status: 'PROCESSING', claimed_by: expect.any(String) });
      expect(await effects(2)).toBe(0); // the crashed handler's transaction never committed

      const rescuer = await ChildApp.start('it-inbox-crash-d', { database, inbox: fixture('deferred'), outbox: RESCUE_TIMINGS });
      await waitUntil(async () => (await inboxRow(messageId)).status === 'DONE', 'the reclaimed delivery is processed');
      await rescuer.stop();
      expect(await inboxRow(messageId)).toMatchObject({ status: 'DONE', attempts: 1 });
      expect(await effects(2)).toBe(1);
    },
    timeoutFor(2 * STARTUP_TIMEOUT_MS, 3 * WAIT_TIMEOUT_MS, STOP_TIMEOUT_MS),
  );
});
