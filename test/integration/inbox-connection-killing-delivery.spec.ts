import { INestApplicationContext } from '@nestjs/common';
import { randomUUID } from 'node:crypto';
import { BrokerConnection } from '../support/broker-connection';
import { brokerName } from '../support/broker-names';
import { describeOn, testDatabase } from '../support/database';
import { FixtureEvent, InboxFixtureConfig, inboxFixtureProviders } from '../support/inbox-fixture';
import { QueueProbe } from '../support/queue-probe';
import { createTestApp } from '../support/test-app';
import { sleep, STARTUP_TIMEOUT_MS, timeoutFor, waitUntil } from '../support/wait';

const database = testDatabase('it_inbox_connection_killer');
const PREFIX = brokerName('it.inbox-connection-killer');
const CONSUMER = 'killer-tx';

const config: InboxFixtureConfig = {
  exchange: `${PREFIX}.in`,
  routingKey: 'order.paid',
  outExchange: `${PREFIX}.out`,
  deadLetterExchange: `${PREFIX}.dlx`,
  consumers: [{ name: CONSUMER, queue: `${PREFIX}.orders` }],
  maxAttempts: 3,
};

/**
 * A delivery that the database answers by dropping the connection, every time and only this one:
 * a trigger that terminates its own session on inserting a `kill-` message id. Its errors say
 * "database unavailable", yet the database serves every other delivery.
 */
const KILLER_TRIGGER = [
  `CREATE FUNCTION "${database.name}".kill_own_session() RETURNS trigger LANGUAGE plpgsql AS $$
   BEGIN IF NEW.message_id LIKE 'kill-%' THEN PERFORM pg_terminate_backend(pg_backend_pid()); END IF; RETURN NEW; END $$`,
  `CREATE TRIGGER kill_own_session BEFORE INSERT ON {inbox_message} FOR EACH ROW EXECUTE FUNCTION "${database.name}".kill_own_session()`,
];

describeOn(['postgres'], 'A delivery whose recording keeps dropping the database connection', () => {
  let app: INestApplicationContext;
  let broker: BrokerConnection;
  let dead: QueueProbe;

  beforeAll(async () => {
    await database.reset();
    broker = await BrokerConnection.open();
    await broker.prepareInboxes([config], { outExchange: true });
    dead = await QueueProbe.bind(config.deadLetterExchange, '#', `${PREFIX}.dead`);
    app = await createTestApp({ database, outbox: { pollIntervalMs: 50 }, providers: inboxFixtureProviders(config) });
    for (const statement of KILLER_TRIGGER) await database.sql(statement);
  }, timeoutFor(STARTUP_TIMEOUT_MS));

  afterAll(async () => {
    await app?.close();
    await dead.close();
    await broker.close();
  });

  const deliver = (event: FixtureEvent, messageId: string) =>
    broker.channel.publish(config.exchange, config.routingKey, Buffer.from(JSON.stringify(event)), { messageId, type: 'order.paid' });
  const effects = async (orderId: number) => Number((await database.sql(`SELECT count(*) AS n FROM {test_effect} WHERE order_id = ?`, [orderId]))[0].n);

  it(
    'is given up, recorded in a reduced form and dead-lettered, when it keeps failing while other deliveries are recorded',
    async () => {
      const messageId = `kill-${randomUUID()}`;
      deliver({ orderId: 1 }, messageId);
      // Other deliveries keep arriving and are recorded while the killer is handed back (it is held
      // 1 s before each return, so this takes some seconds however fast the machine is).
      const deadline = Date.now() + 90_000;
      let orderId = 100;
      while (!dead.messageIds.includes(messageId)) {
        if (Date.now() > deadline) throw new Error('the killing delivery was never given up');
        const current = ++orderId;
        deliver({ orderId: current }, randomUUID());
        await waitUntil(async () => (await effects(current)) === 1, `order ${current} is processed beside the killer`, 30_000);
        await sleep(100);
      }

      const row = await reducedRowOf(messageId);
      expect(row).toMatchObject({ status: 'MANUAL_REQUIRED', payload: JSON.stringify({ orderId: 1 }) });
      expect(row.last_error).toMatch(/could not record it (\d+) times in a row, each time with an error of an unavailable database/);
      expect(Number(/(\d+) times in a row/.exec(row.last_error)![1])).toBeLessThanOrEqual(10);
      expect(row.last_error).toContain(`received as messageId "${messageId}"`);
      expect(await effects(1)).toBe(0);
    },
    timeoutFor(90_000, 30_000),
  );

  it('is given up after more tries when nothing else is recorded meanwhile, which may be an outage', async () => {
    const messageId = `kill-${randomUUID()}`;
    deliver({ orderId: 2 }, messageId);
    await waitUntil(() => dead.messageIds.includes(messageId), 'the killing delivery is dead-lettered', 90_000);
    const row = await reducedRowOf(messageId);
    expect(row).toMatchObject({ status: 'MANUAL_REQUIRED', payload: JSON.stringify({ orderId: 2 }) });
    expect(row.last_error).toMatch(/could not record it 10 times in a row/);
    expect(await effects(2)).toBe(0);
  }, 120_000);
});

async function reducedRowOf(messageId: string) {
  const rows = await database.sql(`SELECT message_id, status, last_error, payload FROM {inbox_message} WHERE message_id LIKE 'unrecordable:%'`);
  return rows.find((row) => row.last_error.includes(`received as messageId "${messageId}"`));
}
