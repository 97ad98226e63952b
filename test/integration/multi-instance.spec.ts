import { INestApplicationContext } from '@nestjs/common';
import { ChildApp, killAllChildren, STOP_TIMEOUT_MS } from '../support/child-app';
import { brokerName } from '../support/broker-names';
import { testDatabase } from '../support/database';
import { runExclusively } from '../support/exclusive-run';
import { publishMany } from '../support/publish-many';
import { duplicatesOf } from '../support/repeated-ids';
import { assertExchange, QueueProbe } from '../support/queue-probe';
import { createTestApp } from '../support/test-app';
import { STARTUP_TIMEOUT_MS, timeoutFor, WAIT_TIMEOUT_MS, waitUntil } from '../support/wait';

const database = testDatabase('it_multi_instance');
const EXCHANGE = brokerName('it.multi-instance');
const MESSAGES = 2_000;
const INSTANCES = ['it-multi-a', 'it-multi-b'];
/** Longest to wait for another run of this file to end. */
const EXCLUSIVE_RUN_WAIT_MS = 45_000;
/** Dispatching 2,000 messages, which takes seconds on a quiet machine. */
const BACKLOG_TIMEOUT_MS = 2 * WAIT_TIMEOUT_MS;

/**
 * Two dispatching applications, each in a process of its own, share one outbox table while a
 * third application (dispatcher off) keeps publishing into it.
 */
describe('Several dispatcher instances on one outbox', () => {
  let publisher: INestApplicationContext;
  let probe: QueueProbe;
  let endExclusiveRun: (() => Promise<void>) | undefined;

  beforeAll(
    async () => {
      // Another run of this file (another developer's) would drop our database and probe queue.
      endExclusiveRun = await runExclusively(database, EXCLUSIVE_RUN_WAIT_MS);
      await database.reset();
      await assertExchange(EXCHANGE);
      // Creates the tables (synchronize) before any dispatcher starts, and only publishes.
      publisher = await createTestApp({ database, outbox: { dispatcherEnabled: false } });
      probe = await QueueProbe.bind(EXCHANGE, '#', `${EXCHANGE}.probe`);
    },
    timeoutFor(EXCLUSIVE_RUN_WAIT_MS, STARTUP_TIMEOUT_MS),
  );

  afterAll(async () => {
    await killAllChildren();
    await probe?.close();
    await publisher?.close();
    await endExclusiveRun?.();
  });

  it(
    'two app instances dispatching 2,000 messages deliver every message exactly once',
    async () => {
      const children = await Promise.all(
        INSTANCES.map((instanceId) =>
          ChildApp.start(instanceId, { database, outbox: { instanceId, batchSize: 50, dispatchConcurrency: 2, pollIntervalMs: 200 } }),
        ),
      );

      // Publish while both dispatchers run: committed batches wake them as they land where the
      // database can signal (NOTIFY on PostgreSQL); elsewhere their polls find them.
      const published = await publishMany(
        publisher,
        MESSAGES,
        (n) => ({ type: 'it.multi', exchange: EXCHANGE, routingKey: 'multi.sent', bizKey: `message-${n}:sent`, payload: { n } }),
        { perTransaction: 100, parallel: 2 },
      );
      expect(new Set(published).size).toBe(MESSAGES);

      await probe.waitFor(MESSAGES, BACKLOG_TIMEOUT_MS);
      await waitUntil(async () => (await database.statusCounts()).DONE === MESSAGES, 'every row is DONE');
      // Both ran without an error log, and shut down cleanly when asked.
      for (const child of children) expect(child.stderr).toBe('');
      expect(await Promise.all(children.map((child) => child.stop()))).toEqual([
        { code: 0, signal: null },
        { code: 0, signal: null },
      ]);
      // Nothing more can arrive: both dispatchers have exited, and what they sent before closing
      // their connections is in the probe's queue, ahead of the marker flush() waits for.
      await probe.flush();

      const arrived = probe.messageIds;
      expect(duplicatesOf(arrived)).toEqual([]);
      expect(new Set(arrived)).toEqual(new Set(published));
      expect(arrived).toHaveLength(MESSAGES);

      expect(await database.statusCounts()).toEqual({ DONE: MESSAGES });
      const [retried] = await database.sql(`SELECT count(*) AS n FROM {outbox_message} WHERE attempts > 0`);
      expect(Number(retried.n)).toBe(0);

      // DONE rows keep the claimant that sent them: both instances did part of the work.
      const shares = await database.sql<{ claimed_by: string }>(`SELECT claimed_by FROM {outbox_message} GROUP BY claimed_by ORDER BY claimed_by`);
      expect(shares.map((s) => s.claimed_by)).toEqual(INSTANCES);
    },
    timeoutFor(STARTUP_TIMEOUT_MS, BACKLOG_TIMEOUT_MS, WAIT_TIMEOUT_MS, STOP_TIMEOUT_MS, WAIT_TIMEOUT_MS),
  );
});
