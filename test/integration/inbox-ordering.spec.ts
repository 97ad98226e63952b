import { RabbitSubscribe } from '@golevelup/nestjs-rabbitmq';
import { INestApplicationContext, Injectable } from '@nestjs/common';
import { randomUUID } from 'node:crypto';
import { InboxHandler, MessageStatus, NonRetryableError } from '../../lib';
import { InboxWorker, OutboxAdmin } from '../../lib/entries/admin';
import { BrokerConnection } from '../support/broker-connection';
import { brokerName } from '../support/broker-names';
import { DATABASE_KIND, testDatabase } from '../support/database';
import { createTestApp } from '../support/test-app';
import { budget, STARTUP_TIMEOUT_MS, timeoutFor, WAIT_TIMEOUT_MS, waitUntil } from '../support/wait';

const database = testDatabase('it_inbox_ordering');
const PREFIX = brokerName('it.inbox-ordering');
const EXCHANGE = `${PREFIX}.in`;
const QUEUE = `${PREFIX}.ordered`;
const CONSUMER = 'ordered-consumer';
const KEYS = ['acct-1', 'acct-2', 'acct-3'];
const PER_KEY = 20;
/** Storing a test's deliveries one at a time, which takes a second or two on a quiet machine. */
const STORING_TIMEOUT_MS = 2 * WAIT_TIMEOUT_MS;

interface Entry {
  key: string;
  seq: number;
  poison?: boolean;
}

/** What the handler saw, in the order its transactions committed, and the failures to inject. */
const handled: Entry[] = [];
const faults = { failRate: 0.1, poisonFatal: true };

@Injectable()
class OrderedConsumer {
  @RabbitSubscribe({ exchange: EXCHANGE, routingKey: 'ordered.#', queue: QUEUE, queueOptions: { durable: false } })
  @InboxHandler({ consumer: CONSUMER, mode: 'deferred', maxAttempts: 50, orderingKey: (entry: Entry) => entry.key })
  async handle(entry: Entry): Promise<void> {
    if (entry.poison && faults.poisonFatal) throw new NonRetryableError(`poisoned entry ${entry.key}/${entry.seq}`);
    if (Math.random() < faults.failRate) throw new Error('injected handler failure');
    handled.push({ key: entry.key, seq: entry.seq });
  }
}

const sequence = (key: string) => handled.filter((e) => e.key === key).map((e) => e.seq);

/** Per key, the order in which the deliveries were stored (their ids). */
async function storedOrder(key: string): Promise<number[]> {
  const rows = await database.sql<{ payload: string }>(`SELECT payload FROM {inbox_message} WHERE consumer = ? AND ordering_key = ? ORDER BY id`, [
    CONSUMER,
    key,
  ]);
  return rows.map((row) => (JSON.parse(row.payload) as Entry).seq);
}
const inOrder = (n: number) => Array.from({ length: n }, (_, i) => i);

describe(`Deferred @InboxHandler with an orderingKey (${DATABASE_KIND})`, () => {
  let app: INestApplicationContext;
  let broker: BrokerConnection;

  beforeAll(async () => {
    await database.reset();
    broker = await BrokerConnection.open();
    await broker.assertExchange(EXCHANGE);
    await broker.freshQueues([QUEUE]);
    app = await createTestApp({
      database,
      outbox: { pollIntervalMs: 100, backoffBaseMs: 20, backoffMaxMs: 100, notifyEnabled: false, inboxBatchSize: 10 },
      providers: [OrderedConsumer],
    });
  }, timeoutFor(STARTUP_TIMEOUT_MS));

  afterAll(async () => {
    await app?.close();
    await broker?.close();
  });

  const deliver = (entry: Entry) =>
    broker.channel.publish(EXCHANGE, `ordered.${entry.key}`, Buffer.from(JSON.stringify(entry)), { messageId: randomUUID(), type: 'ledger.entry' });

  /**
   * Publishes `entry` and waits until its row is stored. golevelup hands a channel's deliveries to
   * the handler concurrently, up to the prefetch, and two deliveries of one key stored at once are
   * ordered by id only among committed rows: the later id may commit, and be handled, first (see
   * the README's non-guarantees). One at a time, the stored order is the publishing order.
   */
  const store = async (entry: Entry, timeoutMs: number) => {
    const count = async () => Number((await database.sql(`SELECT count(*) AS n FROM {inbox_message}`))[0].n);
    const before = await count();
    deliver(entry);
    await waitUntil(async () => (await count()) === before + 1, `${entry.key}/${entry.seq} is stored`, timeoutMs);
  };

  it(
    'processes each key one delivery at a time, in the order stored, with 10 % of attempts failing',
    async () => {
      const timeLeft = budget(STORING_TIMEOUT_MS);
      for (let seq = 0; seq < PER_KEY; seq++) for (const key of KEYS) await store({ key, seq }, timeLeft());
      await waitUntil(() => handled.length === KEYS.length * PER_KEY, 'every delivery handled', 2 * WAIT_TIMEOUT_MS);
      for (const key of KEYS) {
        expect({ key, stored: await storedOrder(key) }).toEqual({ key, stored: inOrder(PER_KEY) });
        expect({ key, handled: sequence(key) }).toEqual({ key, handled: inOrder(PER_KEY) });
      }
      const [{ retried }] = await database.sql<{ retried: number }>(`SELECT count(*) AS retried FROM {inbox_message} WHERE attempts > 0`);
      expect(Number(retried)).toBeGreaterThan(0);
    },
    timeoutFor(STORING_TIMEOUT_MS, 2 * WAIT_TIMEOUT_MS),
  );

  it(
    'parks a key behind a poisoned delivery, and requeuing it releases the key in order',
    async () => {
      handled.length = 0;
      faults.failRate = 0;
      const timeLeft = budget(STORING_TIMEOUT_MS);
      for (let seq = 0; seq < 5; seq++) {
        for (const entry of [
          { key: 'acct-poisoned', seq, poison: seq === 1 },
          { key: 'acct-healthy', seq },
        ])
          await store(entry, timeLeft());
      }
      await waitUntil(() => sequence('acct-healthy').length === 5, 'the healthy key is handled');
      const admin = app.get(OutboxAdmin);
      await waitUntil(async () => (await admin.parkedInboxKeys()).length === 1, 'the poisoned key is parked');
      // Every delivery is stored: had one behind the parked head been claimable, this claim pass
      // (after the key was parked) would have handled it before drain() returns.
      await app.get(InboxWorker).drain();
      expect(sequence('acct-poisoned')).toEqual([0]);
      const [parked] = await admin.parkedInboxKeys();
      expect(parked).toEqual(expect.objectContaining({ orderingKey: 'acct-poisoned', consumer: CONSUMER, waiting: 3 }));
      expect(parked.lastError).toMatch(/poisoned entry/);

      faults.poisonFatal = false;
      expect(await admin.requeueInbox(CONSUMER, parked.messageId)).toBe(true);
      await waitUntil(() => sequence('acct-poisoned').length === 5, 'the parked key drained');
      expect(sequence('acct-poisoned')).toEqual(inOrder(5));
      expect(await admin.parkedInboxKeys()).toEqual([]);
      const [row] = await database.sql(`SELECT status FROM {inbox_message} WHERE message_id = ?`, [parked.messageId]);
      expect(row.status).toBe(MessageStatus.DONE);
    },
    timeoutFor(STORING_TIMEOUT_MS, 3 * WAIT_TIMEOUT_MS),
  );
});
