import { INestApplicationContext } from '@nestjs/common';
import { TransactionHost } from '@nestjs-cls/transactional';
import { MessageStatus, OutboxService } from '../../lib';
import { OutboxAdmin, OutboxDispatcher } from '../../lib/entries/admin';
import { ChildApp, killAllChildren, STOP_TIMEOUT_MS } from '../support/child-app';
import { DATABASE_KIND, testDatabase } from '../support/database';
import { FlakySendsConfig, flakyTransport } from '../support/flaky-transport';
import { assertExchange, QueueProbe } from '../support/queue-probe';
import { createTestApp } from '../support/test-app';
import { STARTUP_TIMEOUT_MS, timeoutFor, WAIT_TIMEOUT_MS, waitUntil } from '../support/wait';

const db = testDatabase('it_ordering');
const EXCHANGE = `it.ordering.${DATABASE_KIND}`;
const KEYS = ['key-a', 'key-b', 'key-c', 'key-d', 'key-e'];
const PER_KEY = 50;
const POISON_HEADER = 'x-test-poison';
/** Short, so retries of the 10 % failed sends come quickly; many attempts, so none gives up by chance. */
const RETRYING = { backoffBaseMs: 20, backoffMaxMs: 200, maxAttempts: 60, pollIntervalMs: 200 };
/** Sending the 250 messages of the first test, with retries, which takes seconds on a quiet machine. */
const BACKLOG_TIMEOUT_MS = 2 * WAIT_TIMEOUT_MS;

interface Sequenced {
  key: string;
  seq: number;
}

/** Writes `rounds` transactions, each holding the next message of every key in a shuffled order. */
async function publishInterleaved(
  app: INestApplicationContext,
  group: string,
  keys: string[],
  rounds: number,
  extra?: (key: string, seq: number) => Record<string, unknown> | undefined,
) {
  const txHost = app.get(TransactionHost);
  const outbox = app.get(OutboxService);
  for (let seq = 0; seq < rounds; seq++) {
    const shuffled = [...keys].sort(() => Math.random() - 0.5);
    await txHost.withTransaction(async () => {
      for (const key of shuffled) {
        await outbox.publish({
          type: 'it.ordered',
          exchange: EXCHANGE,
          routingKey: `${group}.${key}`,
          orderingKey: key,
          payload: { key, seq } satisfies Sequenced,
          headers: extra?.(key, seq),
        });
      }
    });
  }
}

/** Per key, the sequence numbers in the order they first arrived (redeliveries after a lost confirm ignored). */
function firstArrivals(probe: QueueProbe): Map<string, number[]> {
  const seen = new Set<string>();
  const byKey = new Map<string, number[]>();
  probe.messages.forEach((message) => {
    const id = message.properties.messageId as string;
    if (seen.has(id)) return;
    seen.add(id);
    const { key, seq } = JSON.parse(message.content.toString()) as Sequenced;
    byKey.set(key, [...(byKey.get(key) ?? []), seq]);
  });
  return byKey;
}

const inOrder = (n: number) => Array.from({ length: n }, (_, i) => i);

describe(`Per-key ordering (${DATABASE_KIND} + RabbitMQ)`, () => {
  let publisher: INestApplicationContext;

  beforeAll(async () => {
    await db.reset();
    await assertExchange(EXCHANGE);
    // Creates the tables before any dispatcher starts, and only publishes.
    publisher = await createTestApp({ database: db, outbox: { dispatcherEnabled: false, notifyEnabled: false } });
  }, timeoutFor(STARTUP_TIMEOUT_MS));

  afterAll(async () => {
    await killAllChildren();
    await publisher?.close();
  });

  it(
    '3 instances with 10 % of sends failing deliver each key in the order it was written',
    async () => {
      const probe = await QueueProbe.bind(EXCHANGE, 'interleaved.#', `${EXCHANGE}.interleaved`);
      let children: ChildApp[] = [];
      try {
        const flakySends: FlakySendsConfig = { failBeforeSendRate: 0.07, failAfterSendRate: 0.03 };
        children = await Promise.all(
          ['it-order-1', 'it-order-2', 'it-order-3'].map((instanceId) =>
            // Polling often: an instance that just settled a key's head claims the next at once, and
            // on SQLite (one writer at a time) the others would otherwise rarely find a row free.
            ChildApp.start(instanceId, {
              database: { kind: db.kind, name: db.name },
              flakySends,
              outbox: { instanceId, batchSize: 20, ...RETRYING, pollIntervalMs: 50 },
            }),
          ),
        );
        await publishInterleaved(publisher, 'interleaved', KEYS, PER_KEY);

        await waitUntil(() => new Set(probe.messageIds).size === KEYS.length * PER_KEY, 'every message arrived', BACKLOG_TIMEOUT_MS);
        const arrivals = firstArrivals(probe);
        for (const key of KEYS) expect({ key, seqs: arrivals.get(key) }).toEqual({ key, seqs: inOrder(PER_KEY) });

        await waitUntil(async () => (await db.statusCounts()).DONE === KEYS.length * PER_KEY, 'every row is DONE');
        // The failures were real: some rows needed more than one attempt, and every instance sent some.
        const [{ retried }] = await db.sql<{ retried: number }>(`SELECT count(*) AS retried FROM {outbox_message} WHERE attempts > 0`);
        expect(Number(retried)).toBeGreaterThan(0);
        const senders = await db.sql<{ claimed_by: string }>(`SELECT DISTINCT claimed_by FROM {outbox_message}`);
        // SQLite has one writer at a time: on a loaded machine one instance can win every claim.
        if (db.kind !== 'sqlite') expect(senders.length).toBeGreaterThan(1);
      } finally {
        // Stopped whatever failed: a dispatcher left running would claim the next cases' rows.
        for (const child of children) await child.stop();
        await probe.close();
      }
    },
    timeoutFor(STARTUP_TIMEOUT_MS, BACKLOG_TIMEOUT_MS, WAIT_TIMEOUT_MS, 3 * STOP_TIMEOUT_MS),
  );

  it(
    'a key whose head is poisoned is parked while other keys complete, and released in order',
    async () => {
      const probe = await QueueProbe.bind(EXCHANGE, 'parked.#', `${EXCHANGE}.parked`);
      const sends: FlakySendsConfig = { failBeforeSendRate: 0, poisonHeader: POISON_HEADER };
      const dispatcher = await createTestApp({
        database: db,
        outbox: { notifyEnabled: false, ...RETRYING },
        statics: { transport: flakyTransport(sends) },
      });
      try {
        const admin = dispatcher.get(OutboxAdmin);
        const keys = ['parked-poisoned', 'parked-ok-1', 'parked-ok-2'];
        // The poisoned key's third message (seq 2) cannot be sent; the two before it can.
        await publishInterleaved(dispatcher, 'parked', keys, 10, (key, seq) =>
          key === 'parked-poisoned' && seq === 2 ? { [POISON_HEADER]: true } : undefined,
        );

        await waitUntil(() => probe.messages.length === 10 + 10 + 2, 'the healthy keys and the poisoned key up to its head arrived');
        await waitUntil(async () => (await admin.parkedKeys()).length === 1, 'the poisoned key is parked');
        // Had a later message of the parked key been claimable, a claim pass after the key was parked
        // would have sent it, and drain() waits for the confirms: it would be in the probe's queue
        // ahead of flush()'s marker.
        await dispatcher.get(OutboxDispatcher).drain();
        await probe.flush();
        expect(firstArrivals(probe).get('parked-poisoned')).toEqual([0, 1]);

        const parked = await admin.parkedKeys();
        expect(parked).toEqual([expect.objectContaining({ orderingKey: 'parked-poisoned', consumer: null, type: 'it.ordered', attempts: 1, waiting: 7 })]);
        expect(parked[0].lastError).toMatch(/poisoned message/);
        expect(await admin.findMessage({ messageId: parked[0].messageId })).toEqual(expect.objectContaining({ status: MessageStatus.MANUAL_REQUIRED }));

        // Messages without an ordering key keep flowing past the parked key.
        const txHost = dispatcher.get(TransactionHost);
        await txHost.withTransaction(async () => {
          for (let n = 0; n < 5; n++) {
            await dispatcher
              .get(OutboxService)
              .publish({ type: 'it.unordered', exchange: EXCHANGE, routingKey: 'parked.unordered', payload: { key: 'unordered', seq: n } });
          }
        });
        await waitUntil(() => probe.messages.length === 22 + 5, 'unordered messages arrived while the key is parked');

        // The operator fixes the cause and requeues the head: the key resumes, in order.
        sends.poisonHeader = undefined;
        expect(await admin.requeue(parked[0].messageId)).toBe(true);
        await waitUntil(() => probe.messages.length === 35, 'the parked key drained');
        expect(firstArrivals(probe).get('parked-poisoned')).toEqual(inOrder(10));
        expect(await admin.parkedKeys()).toEqual([]);
      } finally {
        await dispatcher.close();
        await probe.close();
      }
    },
    timeoutFor(STARTUP_TIMEOUT_MS, 5 * WAIT_TIMEOUT_MS),
  );

  it(
    'abandoning a parked head lets the rest of its key go on without it',
    async () => {
      const probe = await QueueProbe.bind(EXCHANGE, 'abandon.#', `${EXCHANGE}.abandon`);
      const dispatcher = await createTestApp({
        database: db,
        outbox: { notifyEnabled: false, ...RETRYING },
        statics: { transport: flakyTransport({ failBeforeSendRate: 0, poisonHeader: POISON_HEADER }) },
      });
      try {
        const admin = dispatcher.get(OutboxAdmin);
        await publishInterleaved(dispatcher, 'abandon', ['abandon-key'], 5, (_, seq) => (seq === 0 ? { [POISON_HEADER]: true } : undefined));
        await waitUntil(async () => (await admin.parkedKeys()).length === 1, 'the key is parked');
        // Nothing of the key went past its parked head, not even in a claim pass after it was parked.
        await dispatcher.get(OutboxDispatcher).drain();
        await probe.flush();
        expect(probe.messages).toHaveLength(0);

        const [head] = await admin.parkedKeys();
        expect(await admin.abandon(head.messageId)).toBe(true);
        await waitUntil(() => probe.messages.length === 4, 'the rest of the key arrived');
        expect(firstArrivals(probe).get('abandon-key')).toEqual([1, 2, 3, 4]);
        expect(await admin.findMessage({ messageId: head.messageId })).toEqual(expect.objectContaining({ status: MessageStatus.ABANDONED }));
      } finally {
        await dispatcher.close();
        await probe.close();
      }
    },
    timeoutFor(STARTUP_TIMEOUT_MS, 3 * WAIT_TIMEOUT_MS),
  );
});
