import { INestApplicationContext } from '@nestjs/common';
import { randomUUID } from 'node:crypto';
import { BrokerConnection } from '../support/broker-connection';
import { brokerName } from '../support/broker-names';
import { testDatabase } from '../support/database';
import { DeliveriesInFlight } from '../support/deliveries-in-flight';
import { InboxFixtureConfig, inboxFixtureProviders } from '../support/inbox-fixture';
import { QueueProbe } from '../support/queue-probe';
import { createTestApp } from '../support/test-app';
import { STARTUP_TIMEOUT_MS, timeoutFor, WAIT_TIMEOUT_MS, waitUntil } from '../support/wait';

const database = testDatabase('it_inbox_transactional');
const PREFIX = brokerName('it.inbox-tx');

const config: InboxFixtureConfig = {
  exchange: `${PREFIX}.in`,
  routingKey: 'order.paid',
  outExchange: `${PREFIX}.out`,
  deadLetterExchange: `${PREFIX}.dlx`,
  consumers: [
    { name: 'inventory', queue: `${PREFIX}.inventory` },
    { name: 'billing', queue: `${PREFIX}.billing` },
  ],
  maxAttempts: 3,
};

/** The waits of `settled()`. */
const SETTLE_TIMEOUT_MS = 4 * WAIT_TIMEOUT_MS;

describe('@InboxHandler in transactional mode', () => {
  let app: INestApplicationContext;
  let broker: BrokerConnection;
  let outgoing: QueueProbe;
  let dead: QueueProbe;
  const deliveries = new DeliveriesInFlight();
  /** Order ids of the marker messages `settled()` delivers, apart from the tests' own. */
  let nextMarkerOrderId = 1_000;

  beforeAll(async () => {
    await database.reset();
    broker = await BrokerConnection.open();
    await broker.prepareInboxes([config]);
    outgoing = await QueueProbe.bind(config.outExchange, '#', `${PREFIX}.out-probe`);
    dead = await QueueProbe.bind(config.deadLetterExchange, '#', `${PREFIX}.dead`);
    app = await createTestApp({
      database,
      outbox: { pollIntervalMs: 50, backoffBaseMs: 50, backoffMaxMs: 100 },
      providers: [...inboxFixtureProviders(config), ...deliveries.providers],
    });
  }, timeoutFor(STARTUP_TIMEOUT_MS));

  afterAll(async () => {
    await app.close();
    await outgoing.close();
    await dead.close();
    await broker.close();
  });

  const deliver = (body: unknown, properties: { messageId?: string; type?: string } = {}) =>
    broker.channel.publish(config.exchange, config.routingKey, Buffer.isBuffer(body) ? body : Buffer.from(JSON.stringify(body)), {
      type: 'order.paid',
      contentType: 'application/json',
      ...properties,
    });
  const effects = async (orderId: number) =>
    (
      await database.sql<{ consumer: string; n: unknown }>(
        `SELECT consumer, count(*) AS n FROM {test_effect} WHERE order_id = ? GROUP BY consumer ORDER BY consumer`,
        [orderId],
      )
    ).map((row) => ({ consumer: row.consumer, n: Number(row.n) }));
  const inboxRows = async (messageId: string) =>
    (await database.sql(`SELECT consumer, status, attempts, last_error, payload FROM {inbox_message} WHERE message_id = ? ORDER BY consumer`, [messageId])).map(
      (row) => ({ ...row, attempts: Number(row.attempts) }),
    );
  const outgoingFor = (orderId: number) => outgoing.bodies<{ orderId: number; consumer: string }>().filter((b) => b.orderId === orderId);
  const unsent = async () =>
    Number((await database.sql(`SELECT count(*) AS n FROM {outbox_message} WHERE status IN ('PENDING', 'PROCESSING', 'FAILED')`))[0].n);

  /**
   * Returns once every delivery made so far has been handled and all it published has arrived, so
   * that a test can assert that nothing more happened. A marker delivered after them is handed to
   * each consumer after the earlier deliveries, which were by then counted in flight (see
   * DeliveriesInFlight): once the marker is handled and none is in flight, all are done. What
   * they published is sent once the outbox has nothing left to send, each send confirmed, so it
   * is in the outgoing probe's queue ahead of flush()'s marker.
   */
  async function settled(): Promise<void> {
    const orderId = nextMarkerOrderId++;
    deliver({ orderId }, { messageId: randomUUID() });
    await waitUntil(async () => (await effects(orderId)).length === 2, 'a later message was handled by both consumers');
    await waitUntil(() => deliveries.idle, 'no delivery is being handled');
    await waitUntil(async () => (await unsent()) === 0, 'the outbox has sent everything');
    await outgoing.flush();
  }

  it(
    'applies a message delivered 3 times in a row once, and publishes its outgoing messages once',
    async () => {
      const messageId = randomUUID();
      for (let i = 0; i < 3; i++) {
        deliver({ orderId: 1 }, { messageId });
        await waitUntil(async () => (await inboxRows(messageId)).length === 2, 'both consumers recorded it');
      }
      await waitUntil(() => outgoingFor(1).length >= 4, 'outgoing messages arrive');
      await settled();
      expect(await effects(1)).toEqual([
        { consumer: 'billing', n: 1 },
        { consumer: 'inventory', n: 1 },
      ]);
      expect(outgoingFor(1)).toHaveLength(4); // two per consumer, once each
    },
    timeoutFor(4 * WAIT_TIMEOUT_MS, SETTLE_TIMEOUT_MS),
  );

  it(
    'applies a message delivered 3 times at once once per consumer',
    async () => {
      const messageId = randomUUID();
      for (let i = 0; i < 3; i++) deliver({ orderId: 2, holdMs: 200 }, { messageId });
      await waitUntil(async () => (await inboxRows(messageId)).length === 2, 'both consumers recorded it');
      await waitUntil(() => outgoingFor(2).length >= 4, 'outgoing messages arrive');
      await settled();
      expect(await effects(2)).toEqual([
        { consumer: 'billing', n: 1 },
        { consumer: 'inventory', n: 1 },
      ]);
      expect(outgoingFor(2)).toHaveLength(4);
    },
    timeoutFor(2 * WAIT_TIMEOUT_MS, SETTLE_TIMEOUT_MS),
  );

  it(
    'keeps nothing of a failed attempt: downstream sees the messages of the successful attempt once',
    async () => {
      const messageId = randomUUID();
      deliver({ orderId: 3, failTimes: 1 }, { messageId });
      await waitUntil(
        async () => (await inboxRows(messageId)).every((r) => r.status === 'DONE') && (await inboxRows(messageId)).length === 2,
        'processed after a retry',
      );
      await waitUntil(() => outgoingFor(3).length >= 4, 'outgoing messages arrive');
      await settled();
      expect(await effects(3)).toEqual([
        { consumer: 'billing', n: 1 },
        { consumer: 'inventory', n: 1 },
      ]);
      expect(outgoingFor(3)).toHaveLength(4);
      expect((await inboxRows(messageId)).map((r) => r.attempts)).toEqual([1, 1]);
    },
    timeoutFor(2 * WAIT_TIMEOUT_MS, SETTLE_TIMEOUT_MS),
  );

  it(
    'dedupes per consumer: two consumers of one event each process it once',
    async () => {
      const messageId = randomUUID();
      deliver({ orderId: 4 }, { messageId });
      await waitUntil(async () => (await effects(4)).length === 2, 'both consumers applied it');
      expect(await effects(4)).toEqual([
        { consumer: 'billing', n: 1 },
        { consumer: 'inventory', n: 1 },
      ]);
    },
    timeoutFor(WAIT_TIMEOUT_MS),
  );

  it.each([
    ['invalid JSON', Buffer.from('{"orderId": 5,'), { messageId: randomUUID() }, /not valid JSON/],
    ['an empty body', Buffer.alloc(0), { messageId: randomUUID() }, /body is empty/],
    // Parses once decoded, but only because the decoder put U+FFFD where the broken bytes were.
    [
      'JSON with invalid UTF-8 in a string',
      Buffer.from([...Buffer.from('{"orderId": 950, "note": "'), 0xc3, 0x28, ...Buffer.from('"}')]),
      { messageId: randomUUID() },
      /not valid UTF-8/,
    ],
    ['no message id', { orderId: 6 }, {}, /no messageId/],
  ])(
    'dead-letters a message with %s and keeps it as MANUAL_REQUIRED with its error',
    async (_, body, properties, error) => {
      const before = dead.messages.length;
      deliver(body, properties);
      await waitUntil(() => dead.messages.length >= before + 2, 'both consumers dead-lettered it');
      const rows = (await database.sql(`SELECT consumer, status, last_error, payload FROM {inbox_message} WHERE status = 'MANUAL_REQUIRED'`)).filter((row) =>
        error.test(row.last_error),
      );
      expect(rows.map((r) => r.consumer).sort()).toEqual(['billing', 'inventory']);
      expect(rows[0].payload).toBe(Buffer.isBuffer(body) ? body.toString() : JSON.stringify(body));
      // The queue keeps flowing.
      const next = randomUUID();
      deliver({ orderId: 100 + before }, { messageId: next });
      await waitUntil(async () => (await inboxRows(next)).length === 2, 'the next message is processed');
    },
    timeoutFor(2 * WAIT_TIMEOUT_MS),
  );

  it(
    'gives up on an always-failing handler after maxAttempts, without a requeue spin',
    async () => {
      const messageId = randomUUID();
      const before = dead.messages.length;
      deliver({ orderId: 7, alwaysFail: true }, { messageId });
      await waitUntil(() => dead.messages.length >= before + 2, 'both consumers dead-lettered it');
      await settled();
      // The dead letters of those deliveries were routed as the broker took their rejections, sent
      // before settled() returned; flush() passes a marker through the dead-letter queue after that.
      await dead.flush();
      const rows = await inboxRows(messageId);
      expect(rows).toEqual([
        expect.objectContaining({
          consumer: 'billing',
          status: 'MANUAL_REQUIRED',
          attempts: 3,
          last_error: expect.stringMatching(/handler failure on attempt 3/),
        }),
        expect.objectContaining({
          consumer: 'inventory',
          status: 'MANUAL_REQUIRED',
          attempts: 3,
          last_error: expect.stringMatching(/handler failure on attempt 3/),
        }),
      ]);
      expect(await effects(7)).toEqual([]);
      expect(dead.messages.filter((m) => m.properties.messageId === messageId)).toHaveLength(2);
    },
    timeoutFor(WAIT_TIMEOUT_MS, SETTLE_TIMEOUT_MS, WAIT_TIMEOUT_MS),
  );

  it(
    'treats a producer resending the same fact under a new message id as a duplicate when a bizKey is given',
    async () => {
      const first = randomUUID();
      const resent = randomUUID();
      deliver({ orderId: 8, bizKey: 'order-8:paid' }, { messageId: first });
      await waitUntil(async () => (await inboxRows(first)).length === 2, 'first delivery recorded');
      deliver({ orderId: 8, bizKey: 'order-8:paid' }, { messageId: resent });
      await settled();
      expect(await effects(8)).toEqual([
        { consumer: 'billing', n: 1 },
        { consumer: 'inventory', n: 1 },
      ]);
      expect(await inboxRows(resent)).toEqual([]);
    },
    timeoutFor(WAIT_TIMEOUT_MS, SETTLE_TIMEOUT_MS),
  );

  it(
    'dedupes by bizKey also for messages without an AMQP type',
    async () => {
      deliver({ orderId: 11, bizKey: 'order-11:paid' }, { messageId: randomUUID(), type: undefined });
      deliver({ orderId: 11, bizKey: 'order-11:paid' }, { messageId: randomUUID(), type: undefined });
      await waitUntil(async () => (await effects(11)).length === 2, 'both consumers applied it');
      await settled();
      expect(await effects(11)).toEqual([
        { consumer: 'billing', n: 1 },
        { consumer: 'inventory', n: 1 },
      ]);
    },
    timeoutFor(WAIT_TIMEOUT_MS, SETTLE_TIMEOUT_MS),
  );

  it(
    'accepts a message without a message id when a bizKey identifies it',
    async () => {
      deliver({ orderId: 10, bizKey: 'order-10:paid' });
      deliver({ orderId: 10, bizKey: 'order-10:paid' });
      await waitUntil(async () => (await effects(10)).length === 2, 'both consumers applied it');
      await settled();
      expect(await effects(10)).toEqual([
        { consumer: 'billing', n: 1 },
        { consumer: 'inventory', n: 1 },
      ]);
    },
    timeoutFor(WAIT_TIMEOUT_MS, SETTLE_TIMEOUT_MS),
  );
});
