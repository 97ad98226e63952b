import { INestApplicationContext } from '@nestjs/common';
import { randomUUID } from 'node:crypto';
import { OutboxMessage } from '../../lib';
import { BrokerConnection } from '../support/broker-connection';
import { brokerName } from '../support/broker-names';
import { ChildApp, killAllChildren } from '../support/child-app';
import { testDatabase } from '../support/database';
import { InboxFixtureConfig } from '../support/inbox-fixture';
import { publishMany } from '../support/publish-many';
import { QueueProbe } from '../support/queue-probe';
import { createTestApp } from '../support/test-app';
import { STARTUP_TIMEOUT_MS, timeoutFor, WAIT_TIMEOUT_MS, waitUntil } from '../support/wait';

const database = testDatabase('it_hostile_outbox_rows');
const PREFIX = brokerName('it.hostile-rows');

const inbox: InboxFixtureConfig = {
  exchange: `${PREFIX}.in`,
  routingKey: 'order.paid',
  outExchange: `${PREFIX}.out`,
  deadLetterExchange: `${PREFIX}.dlx`,
  consumers: [{ name: 'hostile-rows', queue: `${PREFIX}.consumer` }],
  mode: 'transactional',
};

const ORDERS = 50;
const GOOD = 200;

/**
 * Rows the broker or amqplib refuse, written as an older version of the library or a hand-written
 * INSERT could have (publish() refuses them today). Each once killed the dispatching process, or
 * dropped the connection its consumers share.
 */
const UNCHECKED_ROWS: Record<string, { exchange?: string; routingKey?: string; headers?: Record<string, unknown> }> = {
  'an exchange name of 400 bytes': { exchange: 'é'.repeat(200) },
  'a routing key of 300 bytes': { routingKey: '€'.repeat(100) },
  'a header key of 256 bytes': { headers: { ['k'.repeat(256)]: 1 } },
  'headers over the 64 KB of an AMQP field table': { headers: { big: 'x'.repeat(70_000) } },
  'a CC header the broker refuses': { headers: { CC: 'not-an-array' } },
};

interface Row {
  message_id: string;
  status: string;
  attempts: number;
  last_error: string | null;
}

describe('A dispatching process meets rows it cannot send (real process)', () => {
  let broker: BrokerConnection;
  let probe: QueueProbe;
  let writer: INestApplicationContext;
  let child: ChildApp;

  beforeAll(
    async () => {
      await database.reset();
      broker = await BrokerConnection.open();
      await broker.prepareInboxes([inbox]);
      probe = await QueueProbe.bind(inbox.outExchange, '#', `${PREFIX}.probe`);
      // The test process only writes; the child claims, sends, and consumes.
      writer = await createTestApp({ database, outbox: { dispatcherEnabled: false } });
      child = await ChildApp.start(
        'it-hostile-outbox-rows',
        { database, inbox, outbox: { pollIntervalMs: 100, maxAttempts: 2, backoffBaseMs: 50, backoffMaxMs: 100 } },
        STARTUP_TIMEOUT_MS,
      );
    },
    timeoutFor(STARTUP_TIMEOUT_MS, STARTUP_TIMEOUT_MS),
  );

  afterAll(async () => {
    await killAllChildren();
    await writer?.close();
    await probe?.close();
    await broker?.close();
  });

  const rowsOf = async (ids: string[]): Promise<Row[]> =>
    (await database.sql(`SELECT message_id, status, attempts, last_error FROM {outbox_message} WHERE message_id IN (?)`, [ids])).map((row) => ({
      ...row,
      attempts: Number(row.attempts),
    }));

  it(
    'keeps running and consuming: only the bad rows fail, every other message is sent unattempted and every delivery handled once',
    async () => {
      const bad = new Map<string, string>();
      for (const [what, row] of Object.entries(UNCHECKED_ROWS)) {
        const messageId = randomUUID();
        await database.sql(
          `INSERT INTO {outbox_message} (message_id, message_type, exchange, routing_key, payload, headers, status, max_attempts)
           VALUES (?, 'test.unchecked', ?, ?, '{}', ?, 'PENDING', 2)`,
          [messageId, row.exchange ?? inbox.outExchange, row.routingKey ?? 'unchecked', JSON.stringify(row.headers ?? {})],
        );
        bad.set(messageId, what);
      }
      const missingExchange = `${PREFIX}.missing-${randomUUID()}`;
      const published = await publishMany(
        writer,
        GOOD + 2,
        (n): OutboxMessage => ({ type: 'test.good', exchange: n < 2 ? missingExchange : inbox.outExchange, routingKey: 'good', payload: { n } }),
        { perTransaction: 50 },
      );
      for (const id of published.slice(0, 2)) bad.set(id, 'an exchange that does not exist');
      const good = published.slice(2);
      // Deliveries to the child's consumer meanwhile: its channel shares the connection.
      for (let orderId = 1; orderId <= ORDERS; orderId++) {
        broker.channel.publish(inbox.exchange, inbox.routingKey, Buffer.from(JSON.stringify({ orderId })), { messageId: randomUUID(), type: 'order.paid' });
      }

      const effects = async () => Number((await database.sql(`SELECT count(DISTINCT order_id) AS n FROM {test_effect}`))[0].n);
      await waitUntil(async () => (await effects()) === ORDERS, 'every delivery is handled', WAIT_TIMEOUT_MS);
      const allIds = [...bad.keys(), ...good];
      await waitUntil(async () => (await rowsOf(allIds)).every((row) => row.status === 'DONE' || row.status === 'MANUAL_REQUIRED'), 'every row is settled');

      expect(child.isRunning).toBe(true);
      expect(Number((await database.sql(`SELECT count(*) AS n FROM {test_effect}`))[0].n)).toBe(ORDERS);
      for (const row of await rowsOf([...bad.keys()])) {
        expect({ what: bad.get(row.message_id), status: row.status }).toEqual({ what: bad.get(row.message_id), status: 'MANUAL_REQUIRED' });
        expect(row.last_error).toMatch(/ExchangeNotFoundError|cannot be sent over AMQP|BrokerChannelError/);
      }
      expect((await rowsOf(good)).filter((row) => row.status !== 'DONE' || row.attempts !== 0)).toEqual([]);
      await probe.flush();
      expect(new Set(probe.messageIds.filter((id) => good.includes(id))).size).toBe(GOOD);
      expect(child.isRunning).toBe(true);
    },
    timeoutFor(WAIT_TIMEOUT_MS, WAIT_TIMEOUT_MS, WAIT_TIMEOUT_MS),
  );
});
