import { INestApplicationContext } from '@nestjs/common';
import { ChildApp, killAllChildren } from '../support/child-app';
import { brokerName } from '../support/broker-names';
import { testDatabase } from '../support/database';
import { runExclusively } from '../support/exclusive-run';
import { publishMany } from '../support/publish-many';
import { assertExchange, QueueProbe } from '../support/queue-probe';
import { createTestApp } from '../support/test-app';
import { sleep, waitUntil } from '../support/wait';

const database = testDatabase('it_multi_instance');
const EXCHANGE = brokerName('it.multi-instance');
const MESSAGES = 2_000;
const INSTANCES = ['it-multi-a', 'it-multi-b'];

/**
 * Two dispatching applications, each in a process of its own, share one outbox table while a
 * third application (dispatcher off) keeps publishing into it.
 */
describe('Several dispatcher instances on one outbox', () => {
  let publisher: INestApplicationContext;
  let probe: QueueProbe;
  let endExclusiveRun: (() => Promise<void>) | undefined;

  beforeAll(async () => {
    // Another run of this file (another developer's) would drop our database and probe queue.
    endExclusiveRun = await runExclusively(database);
    await database.reset();
    await assertExchange(EXCHANGE);
    // Creates the tables (synchronize) before any dispatcher starts, and only publishes.
    publisher = await createTestApp({ database, outbox: { dispatcherEnabled: false } });
    probe = await QueueProbe.bind(EXCHANGE, '#', `${EXCHANGE}.probe`);
  }, 90_000);

  afterAll(async () => {
    await killAllChildren();
    await probe?.close();
    await publisher?.close();
    await endExclusiveRun?.();
  });

  it('two app instances dispatching 2,000 messages deliver every message exactly once', async () => {
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

    await probe.waitFor(MESSAGES, 40_000);
    await waitUntil(async () => (await database.statusCounts()).DONE === MESSAGES, 'every row is DONE', 20_000);
    await sleep(1_000); // room for a late duplicate to show up

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

    // Both ran without an error log, and shut down cleanly when asked.
    for (const child of children) expect(child.stderr).toBe('');
    expect(await Promise.all(children.map((child) => child.stop()))).toEqual([
      { code: 0, signal: null },
      { code: 0, signal: null },
    ]);
  }, 60_000);
});

function duplicatesOf(ids: string[]): string[] {
  const seen = new Set<string>();
  return ids.filter((id) => seen.has(id) || !seen.add(id));
}
