import { INestApplicationContext } from '@nestjs/common';
import { randomUUID } from 'node:crypto';
import { InboxWorker } from '../../lib/entries/admin';
import { BrokerConnection } from '../support/broker-connection';
import { brokerName } from '../support/broker-names';
import { testDatabase } from '../support/database';
import { DeliveriesInFlight } from '../support/deliveries-in-flight';
import { InboxFixtureConfig, inboxFixtureProviders } from '../support/inbox-fixture';
import { QueueProbe } from '../support/queue-probe';
import { createTestApp } from '../support/test-app';
import { STARTUP_TIMEOUT_MS, timeoutFor, WAIT_TIMEOUT_MS, waitUntil } from '../support/wait';

const database = testDatabase('it_inbox_deferred');
const PREFIX = brokerName('it.inbox-deferred');

const config: InboxFixtureConfig = {
  exchange: `${PREFIX}.in`,
  routingKey: 'order.paid',
  outExchange: `${PREFIX}.out`,
  deadLetterExchange: `${PREFIX}.dlx`,
  consumers: [{ name: 'deferred-inventory', queue: `${PREFIX}.inventory` }],
  mode: 'deferred',
  maxAttempts: 3,
};

describe('@InboxHandler in deferred mode', () => {
  let app: INestApplicationContext;
  let broker: BrokerConnection;
  let outgoing: QueueProbe;
  const deliveries = new DeliveriesInFlight();

  beforeAll(async () => {
    await database.reset();
    broker = await BrokerConnection.open();
    await broker.prepareInboxes([config]);
    outgoing = await QueueProbe.bind(config.outExchange, '#', `${PREFIX}.out-probe`);
    app = await createTestApp({
      database,
      outbox: { pollIntervalMs: 50, backoffBaseMs: 100, backoffMaxMs: 200 },
      providers: [...inboxFixtureProviders(config), ...deliveries.providers],
    });
  }, timeoutFor(STARTUP_TIMEOUT_MS));

  afterAll(async () => {
    await app.close();
    await outgoing.close();
    await broker.close();
  });

  const deliver = (body: unknown, messageId: string) =>
    broker.channel.publish(config.exchange, config.routingKey, Buffer.from(JSON.stringify(body)), { messageId, type: 'order.paid' });
  const effects = async (orderId: number) => Number((await database.sql(`SELECT count(*) AS n FROM {test_effect} WHERE order_id = ?`, [orderId]))[0].n);
  const inboxRow = async (messageId: string) => {
    const [row] = await database.sql(`SELECT status, attempts, last_error FROM {inbox_message} WHERE message_id = ?`, [messageId]);
    return row && { ...row, attempts: Number(row.attempts) };
  };
  const unsent = async () =>
    Number((await database.sql(`SELECT count(*) AS n FROM {outbox_message} WHERE status IN ('PENDING', 'PROCESSING', 'FAILED')`))[0].n);

  it(
    'acknowledges at once and processes later, once, however often the message is delivered',
    async () => {
      const messageId = randomUUID();
      deliver({ orderId: 1, holdMs: 1_500 }, messageId);
      await waitUntil(async () => (await inboxRow(messageId))?.status === 'PROCESSING', 'the worker runs the handler');
      // The handler is still running, yet the delivery is acknowledged.
      expect((await broker.channel.checkQueue(config.consumers[0].queue)).messageCount).toBe(0);
      deliver({ orderId: 1, holdMs: 1_500 }, messageId);
      deliver({ orderId: 1, holdMs: 1_500 }, messageId);
      await waitUntil(async () => (await inboxRow(messageId)).status === 'DONE', 'processed');
      // Every delivery is stored (or found a duplicate) before drain() looks for what to process: a
      // marker delivered after them is stored after them, since the queue hands it over later and
      // they were by then counted in flight (see DeliveriesInFlight); none is once it is stored.
      const marker = randomUUID();
      deliver({ orderId: 101 }, marker);
      await waitUntil(async () => (await inboxRow(marker)) !== undefined, 'a later delivery is stored');
      await waitUntil(() => deliveries.idle, 'no delivery is being stored');
      await app.get(InboxWorker).drain();
      expect(await effects(1)).toBe(1);
      await waitUntil(() => outgoing.bodies<{ orderId: number }>().filter((b) => b.orderId === 1).length === 2, 'two outgoing messages');
    },
    timeoutFor(5 * WAIT_TIMEOUT_MS),
  );

  it(
    'retries a failing handler with backoff and commits nothing of the failed attempts',
    async () => {
      const messageId = randomUUID();
      deliver({ orderId: 2, failTimes: 2 }, messageId);
      await waitUntil(async () => (await inboxRow(messageId))?.status === 'DONE', 'processed on the third attempt');
      expect(await inboxRow(messageId)).toMatchObject({ status: 'DONE', attempts: 2 });
      expect(await effects(2)).toBe(1);
      // What the handler published, in any attempt that committed, is sent once the outbox has
      // nothing left to send, each send confirmed: in the probe's queue ahead of flush()'s marker.
      await waitUntil(async () => (await unsent()) === 0, 'the outbox has sent everything');
      await outgoing.flush();
      expect(outgoing.bodies<{ orderId: number }>().filter((b) => b.orderId === 2)).toHaveLength(2);
    },
    timeoutFor(3 * WAIT_TIMEOUT_MS),
  );

  it(
    'gives up after maxAttempts with the error kept',
    async () => {
      const messageId = randomUUID();
      deliver({ orderId: 3, alwaysFail: true }, messageId);
      await waitUntil(async () => (await inboxRow(messageId))?.status === 'MANUAL_REQUIRED', 'given up');
      expect(await inboxRow(messageId)).toMatchObject({ attempts: 3, last_error: expect.stringMatching(/handler failure on attempt 3/) });
      expect(await effects(3)).toBe(0);
    },
    timeoutFor(WAIT_TIMEOUT_MS),
  );
});
