import { RabbitSubscribe } from '@golevelup/nestjs-rabbitmq';
import { INestApplicationContext, Injectable, Logger } from '@nestjs/common';
import { randomUUID } from 'node:crypto';
import { InboxHandler, MessageStatus } from '../../lib';
import { InboxWorker, OutboxAdmin } from '../../lib/entries/admin';
import { BrokerConnection } from '../support/broker-connection';
import { brokerName } from '../support/broker-names';
import { DATABASE_KIND, testDatabase } from '../support/database';
import { createTestApp } from '../support/test-app';
import { STARTUP_TIMEOUT_MS, timeoutFor, WAIT_TIMEOUT_MS, waitUntil } from '../support/wait';

const database = testDatabase('it_inbox_ordering_reduced');
const PREFIX = brokerName('it.inbox-ordering-reduced');
const EXCHANGE = `${PREFIX}.in`;
const QUEUE = `${PREFIX}.ordered`;
const CONSUMER = 'ordered-reduced';
const KEY = 'acct-refused';

interface Entry {
  key: string;
  seq: number;
}

/** What the handler saw, in the order its transactions committed. */
const handled: Entry[] = [];

@Injectable()
class OrderedConsumer {
  @RabbitSubscribe({ exchange: EXCHANGE, routingKey: 'ordered.#', queue: QUEUE, queueOptions: { durable: false } })
  @InboxHandler({ consumer: CONSUMER, mode: 'deferred', orderingKey: (entry: Entry) => entry.key })
  async handle(entry: Entry): Promise<void> {
    handled.push({ key: entry.key, seq: entry.seq });
  }
}

/**
 * Makes the database refuse, with an error about the data, the row of a delivery whose message id
 * starts with `refuse-`: the inbox then records it in its reduced form (message id
 * `unrecordable:…`), which the database takes.
 */
const REFUSE_DELIVERY: Record<string, string[]> = {
  postgres: [
    `CREATE FUNCTION {schema}.refuse_delivery() RETURNS trigger LANGUAGE plpgsql AS $$
     BEGIN IF NEW.message_id LIKE 'refuse-%' THEN RAISE EXCEPTION 'this delivery is refused'; END IF; RETURN NEW; END $$`,
    `CREATE TRIGGER refuse_delivery BEFORE INSERT ON {inbox_message} FOR EACH ROW EXECUTE FUNCTION {schema}.refuse_delivery()`,
  ],
  mariadb: [
    `CREATE TRIGGER {schema}.refuse_delivery BEFORE INSERT ON {inbox_message} FOR EACH ROW
     BEGIN IF NEW.message_id LIKE 'refuse-%' THEN SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT = 'this delivery is refused'; END IF; END`,
  ],
  sqlite: [
    `CREATE TRIGGER refuse_delivery BEFORE INSERT ON {inbox_message} FOR EACH ROW WHEN NEW.message_id LIKE 'refuse-%'
     BEGIN SELECT RAISE(ABORT, 'this delivery is refused'); END`,
  ],
};
REFUSE_DELIVERY.mysql = REFUSE_DELIVERY.mariadb;

/**
 * A delivery the inbox cannot record as it came is recorded in a reduced form, MANUAL_REQUIRED,
 * and dead-lettered. That form once dropped its ordering key, so the next delivery of the key ran
 * at once, ahead of it, though a key whose first unfinished message is MANUAL_REQUIRED is parked.
 */
describe(`A deferred ordered delivery recorded in its reduced form (${DATABASE_KIND})`, () => {
  let app: INestApplicationContext;
  let broker: BrokerConnection;

  beforeAll(async () => {
    await database.reset();
    broker = await BrokerConnection.open();
    await broker.assertExchange(EXCHANGE);
    await broker.freshQueues([QUEUE]);
    app = await createTestApp({ database, outbox: { pollIntervalMs: 100, notifyEnabled: false }, providers: [OrderedConsumer] });
    const schema = DATABASE_KIND === 'postgres' ? `"${database.name}"` : `\`${database.name}\``;
    for (const statement of REFUSE_DELIVERY[DATABASE_KIND]) await database.sql(statement.replace(/\{schema\}/g, schema));
    // The refused delivery is logged as an error, as it should be.
    jest.spyOn(Logger.prototype, 'error').mockImplementation(() => undefined);
  }, timeoutFor(STARTUP_TIMEOUT_MS));

  afterAll(async () => {
    jest.restoreAllMocks();
    await app?.close();
    await broker?.close();
  });

  const deliver = (entry: Entry, messageId: string = randomUUID()) =>
    broker.channel.publish(EXCHANGE, `ordered.${entry.key}`, Buffer.from(JSON.stringify(entry)), { messageId, type: 'ledger.entry' });
  const rowCount = async () => Number((await database.sql(`SELECT count(*) AS n FROM {inbox_message}`))[0].n);

  it(
    'keeps its ordering key, so later deliveries of the key wait behind it until an operator requeues it',
    async () => {
      const refusedId = `refuse-${randomUUID()}`;
      deliver({ key: KEY, seq: 0 }, refusedId);
      await waitUntil(async () => (await rowCount()) === 1, 'the refused delivery is recorded in its reduced form', WAIT_TIMEOUT_MS);
      const [reduced] = await database.sql(`SELECT message_id, ordering_key, status, last_error FROM {inbox_message}`);
      expect(reduced).toMatchObject({ message_id: expect.stringMatching(/^unrecordable:/), status: MessageStatus.MANUAL_REQUIRED });
      expect(reduced.last_error).toContain(`recorded in a reduced form (received as messageId "${refusedId}"`);

      // The next delivery of the key, then one of another key that proves the worker ran after it was stored.
      deliver({ key: KEY, seq: 1 });
      await waitUntil(async () => (await rowCount()) === 2, 'the next delivery of the key is stored', WAIT_TIMEOUT_MS);
      deliver({ key: 'acct-other', seq: 0 });
      await waitUntil(() => handled.some((entry) => entry.key === 'acct-other'), 'a delivery of another key is handled', WAIT_TIMEOUT_MS);
      await app.get(InboxWorker).drain();

      expect(handled.filter((entry) => entry.key === KEY)).toEqual([]);
      expect(reduced.ordering_key).toBe(KEY);
      const admin = app.get(OutboxAdmin);
      const [parked] = await admin.parkedInboxKeys();
      expect(parked).toEqual(expect.objectContaining({ orderingKey: KEY, consumer: CONSUMER, messageId: reduced.message_id, waiting: 1 }));

      // The reduced form kept the body: requeued, it runs first, and the key goes on in order.
      expect(await admin.requeueInbox(CONSUMER, reduced.message_id)).toBe(true);
      await waitUntil(() => handled.filter((entry) => entry.key === KEY).length === 2, 'the key drains', WAIT_TIMEOUT_MS);
      expect(handled.filter((entry) => entry.key === KEY).map((entry) => entry.seq)).toEqual([0, 1]);
    },
    timeoutFor(WAIT_TIMEOUT_MS, WAIT_TIMEOUT_MS, WAIT_TIMEOUT_MS, WAIT_TIMEOUT_MS),
  );
});
