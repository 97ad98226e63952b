import { ConsoleLogger, INestApplicationContext } from '@nestjs/common';
import { randomUUID } from 'node:crypto';
import { BrokerConnection } from '../support/broker-connection';
import { brokerName } from '../support/broker-names';
import { DATABASE_KIND, testDatabase } from '../support/database';
import { FixtureEvent, InboxFixtureConfig, inboxFixtureProviders } from '../support/inbox-fixture';
import { QueueProbe } from '../support/queue-probe';
import { createTestApp } from '../support/test-app';
import { STARTUP_TIMEOUT_MS, timeoutFor, WAIT_TIMEOUT_MS, waitUntil } from '../support/wait';

const database = testDatabase('it_inbox_hostile');
const PREFIX = brokerName('it.inbox-hostile');
const DEAD_LETTERS = `${PREFIX}.dlx`;

/** Both modes consume every delivery of the exchange, whatever its routing key. */
const fixture = (name: string, mode: 'transactional' | 'deferred', exchange: string): InboxFixtureConfig => ({
  exchange,
  routingKey: '#',
  outExchange: `${PREFIX}.out`,
  deadLetterExchange: DEAD_LETTERS,
  consumers: [{ name, queue: `${PREFIX}.${name}` }],
  mode,
  maxAttempts: 3,
});
const HOSTILE = `${PREFIX}.in`;
const fixtures = [
  fixture('hostile-tx', 'transactional', HOSTILE),
  fixture('hostile-deferred', 'deferred', HOSTILE),
  fixture('refused', 'transactional', `${PREFIX}.refused-in`),
];

/** Makes every inbox row of consumer `refused` fail to insert, with an error about its data. */
const REFUSE_CONSUMER: Record<string, string[]> = {
  postgres: [
    `CREATE FUNCTION {schema}.refuse_consumer() RETURNS trigger LANGUAGE plpgsql AS $$
     BEGIN IF NEW.consumer = 'refused' THEN RAISE EXCEPTION 'rows of consumer refused are refused'; END IF; RETURN NEW; END $$`,
    `CREATE TRIGGER refuse_consumer BEFORE INSERT ON {inbox_message} FOR EACH ROW EXECUTE FUNCTION {schema}.refuse_consumer()`,
  ],
  mariadb: [
    `CREATE TRIGGER {schema}.refuse_consumer BEFORE INSERT ON {inbox_message} FOR EACH ROW
     BEGIN IF NEW.consumer = 'refused' THEN SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT = 'rows of consumer refused are refused'; END IF; END`,
  ],
  sqlite: [
    `CREATE TRIGGER refuse_consumer BEFORE INSERT ON {inbox_message} FOR EACH ROW WHEN NEW.consumer = 'refused'
     BEGIN SELECT RAISE(ABORT, 'rows of consumer refused are refused'); END`,
  ],
};
REFUSE_CONSUMER.mysql = REFUSE_CONSUMER.mariadb;

describe('Inbound messages the inbox cannot store never stall a consumer', () => {
  let app: INestApplicationContext;
  let broker: BrokerConnection;
  let dead: QueueProbe;
  const errorLines: string[] = [];

  beforeAll(async () => {
    await database.reset();
    broker = await BrokerConnection.open();
    await broker.prepareInboxes(fixtures, { outExchange: true });
    dead = await QueueProbe.bind(DEAD_LETTERS, '#', `${PREFIX}.dead`);
    const error = ConsoleLogger.prototype.error;
    jest.spyOn(ConsoleLogger.prototype, 'error').mockImplementation(function (this: ConsoleLogger, message: unknown, ...rest: unknown[]) {
      errorLines.push(String(message));
      return error.call(this, message, ...rest);
    });
    // golevelup's default prefetch (10): ten stuck deliveries would stop a queue.
    app = await createTestApp({
      database,
      outbox: { pollIntervalMs: 50, backoffBaseMs: 50, backoffMaxMs: 100 },
      providers: fixtures.flatMap((config) => inboxFixtureProviders(config)),
    });
    const schema = DATABASE_KIND === 'postgres' ? `"${database.name}"` : `\`${database.name}\``;
    for (const statement of REFUSE_CONSUMER[DATABASE_KIND]) await database.sql(statement.replace(/\{schema\}/g, schema));
  }, timeoutFor(STARTUP_TIMEOUT_MS));

  afterAll(async () => {
    await app?.close();
    await dead.close();
    await broker.close();
    jest.restoreAllMocks();
  });

  const deliver = (
    exchange: string,
    event: FixtureEvent,
    properties: { messageId?: string; type?: string; headers?: Record<string, unknown> },
    routingKey = 'order.paid',
  ) => broker.channel.publish(exchange, routingKey, Buffer.from(JSON.stringify(event)), { type: 'order.paid', ...properties });
  const effects = async (consumer: string, orderId: number) =>
    Number((await database.sql(`SELECT count(*) AS n FROM {test_effect} WHERE consumer = ? AND order_id = ?`, [consumer, orderId]))[0].n);
  const rowsWithError = async (consumer: string, pattern: string) =>
    database.sql<{ message_id: string; status: string; last_error: string; payload: string }>(
      `SELECT message_id, status, last_error, payload FROM {inbox_message} WHERE consumer = ? AND last_error LIKE ?`,
      [consumer, pattern],
    );
  const deadOrderIds = (exchangeName = HOSTILE) =>
    dead.messages
      .filter((m) => m.fields.exchange === DEAD_LETTERS && m.properties.headers?.['x-death']?.[0]?.exchange === exchangeName)
      .map((m) => JSON.parse(m.content.toString()).orderId as number);

  it(
    'dead-letters deliveries whose messageId or type holds a NUL, keeps them as MANUAL_REQUIRED with their body, and processes everything else',
    async () => {
      const nulIds = [1, 2, 3, 4, 5, 6];
      const nulTypes = [11, 12, 13, 14, 15, 16];
      const nulRoutingKeys = [21, 22, 23];
      const nulHeaders = [31, 32, 33];
      const good = [41, 42, 43];
      for (const orderId of nulIds) deliver(HOSTILE, { orderId }, { messageId: `order-${orderId}\u0000paid` });
      for (const orderId of nulTypes) deliver(HOSTILE, { orderId }, { messageId: randomUUID(), type: `order\u0000.paid` });
      for (const orderId of nulRoutingKeys) deliver(HOSTILE, { orderId }, { messageId: randomUUID() }, `order\u0000.paid`);
      for (const orderId of nulHeaders) deliver(HOSTILE, { orderId }, { messageId: randomUUID(), headers: { 'x-note\u0000': `v\u0000${orderId}` } });
      for (const orderId of good) deliver(HOSTILE, { orderId }, { messageId: randomUUID() });
      const processed = [...nulRoutingKeys, ...nulHeaders, ...good];

      for (const consumer of ['hostile-tx', 'hostile-deferred']) {
        for (const orderId of processed)
          await waitUntil(async () => (await effects(consumer, orderId)) === 1, `${consumer} processed order ${orderId}`, 60_000);
      }
      // Both consumers dead-letter each of the twelve.
      await waitUntil(() => deadOrderIds().length >= 24, 'the undeliverable ones are dead-lettered', 60_000);
      expect(deadOrderIds().sort((a, b) => a - b)).toEqual([...nulIds, ...nulTypes].flatMap((id) => [id, id]));

      for (const consumer of ['hostile-tx', 'hostile-deferred']) {
        const byId = await rowsWithError(consumer, '%messageId contains a NUL character%');
        expect(byId).toHaveLength(nulIds.length);
        for (const row of byId) {
          expect(row).toMatchObject({ status: 'MANUAL_REQUIRED', message_id: expect.stringMatching(/^rejected:/) });
          expect(row.last_error).toMatch(/"order-\d\\u0000paid"/);
          expect(nulIds).toContain(JSON.parse(row.payload).orderId);
        }
        const byType = await rowsWithError(consumer, '%type contains a NUL character%');
        expect(byType.map((row) => row.status)).toEqual(nulTypes.map(() => 'MANUAL_REQUIRED'));
        expect(byType.map((row) => JSON.parse(row.payload).orderId).sort()).toEqual(nulTypes);
        for (const orderId of [...nulIds, ...nulTypes]) expect(await effects(consumer, orderId)).toBe(0);
      }
      // The identity text went to the logs escaped.
      expect(errorLines.some((line) => line.includes('order-1\\u0000paid'))).toBe(true);
      expect(errorLines.some((line) => line.includes('\u0000'))).toBe(false);
    },
    timeoutFor(WAIT_TIMEOUT_MS, WAIT_TIMEOUT_MS),
  );

  it(
    'dead-letters, with an error that says how to find it, a delivery that cannot be recorded at all',
    async () => {
      const messageId = randomUUID();
      deliver(`${PREFIX}.refused-in`, { orderId: 51 }, { messageId });
      await waitUntil(() => deadOrderIds(`${PREFIX}.refused-in`).includes(51), 'the unrecordable delivery is dead-lettered', 60_000);
      expect(await database.sql(`SELECT message_id FROM {inbox_message} WHERE consumer = 'refused'`)).toEqual([]);
      expect(errorLines.find((line) => line.includes('UNRECORDED DELIVERY'))).toMatch(
        new RegExp(
          `consumer "refused", messageId "${messageId}", type "order.paid", .*body \\d+ bytes, sha256 [0-9a-f]{64}.*rows of consumer refused are refused`,
        ),
      );
    },
    timeoutFor(WAIT_TIMEOUT_MS),
  );
});
