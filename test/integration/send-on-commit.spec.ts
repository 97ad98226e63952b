import { INestApplicationContext } from '@nestjs/common';
import fc from 'fast-check';
import { randomUUID } from 'node:crypto';
import { DataSource, EntityManager, EntitySubscriberInterface, InsertEvent } from 'typeorm';
import { OutboxMessage, OutboxService } from '../../lib';
import { OutboxDispatcher, StuckDetector } from '../../lib/entries/admin';
import { brokerName } from '../support/broker-names';
import { DATABASE_KIND, testDatabase } from '../support/database';
import { assertExchange, nothingMoreArrives as nothingMoreArrivesFrom, QueueProbe } from '../support/queue-probe';
import { ChildApp, killAllChildren, STOP_TIMEOUT_MS } from '../support/child-app';
import { sessionsOf } from '../support/database-sessions';
import { AMQP_URL } from '../support/environment';
import { TcpProxy } from '../support/tcp-proxy';
import { createTestApp } from '../support/test-app';
import { TestOrder } from '../support/test-entities';
import { sleep, STARTUP_TIMEOUT_MS, timeoutFor, WAIT_TIMEOUT_MS, waitUntil } from '../support/wait';

const database = testDatabase('it_send_on_commit');
const EXCHANGE = brokerName('it.send-on-commit');
const INSTANCE_ID = 'it-send-on-commit';
/** Where messages are inserted claimed and sent from memory; elsewhere they are claimed as before. */
const SENDS_ON_COMMIT = DATABASE_KIND === 'postgres';
const onlyWhereSentOnCommit = SENDS_ON_COMMIT ? it : it.skip;
const BATCH_SIZE = 50;
/** The claim lease (`stuckReclaimAfterMs`, renewed every third of it) and send timeout of the test's app. */
const LEASE_MS = 12_000;
const SEND_TIMEOUT_MS = 3_000;
/** How long a transaction may hold a message before its hand-off is confirmed (and its lease renewed). */
const CONFIRM_AFTER_MS = LEASE_MS - 2 * Math.floor(LEASE_MS / 3);

/** One level of a transaction: messages published in it, savepoints inside it, and how it ends. */
interface Level {
  publishes: number;
  children: Level[];
  commits: boolean;
}

const levels: fc.Arbitrary<Level> = fc.letrec<{ level: Level }>((tie) => ({
  level: fc.record({
    publishes: fc.integer({ min: 0, max: 2 }),
    children: fc.oneof({ depthSize: 'small', withCrossShrink: true }, fc.constant<Level[]>([]), fc.array(tie('level'), { maxLength: 2 })),
    commits: fc.boolean(),
  }),
})).level;

class RolledBack extends Error {}

/**
 * Messages of an unordered, undelayed kind are inserted claimed by the publishing process and
 * sent from memory once their transaction commits. What a transaction or savepoint rolls back is
 * never sent; what commits is sent, by that path or by the claims.
 */
describe('Sending on commit', () => {
  let app: INestApplicationContext;
  let probe: QueueProbe;
  let outbox: OutboxService;
  let dataSource: DataSource;

  beforeAll(async () => {
    await database.reset();
    await assertExchange(EXCHANGE);
    // Polling only as the backstop it is: a message left behind would take a minute, and fail the
    // wait. The stuck detector runs only when a test asks it to, against a short lease.
    app = await createTestApp({
      database,
      outbox: {
        instanceId: INSTANCE_ID,
        pollIntervalMs: 60_000,
        batchSize: BATCH_SIZE,
        stuckReclaimAfterMs: LEASE_MS,
        stuckWarnAfterMs: LEASE_MS / 2,
        stuckCheckIntervalMs: 600_000,
        sendTimeoutMs: SEND_TIMEOUT_MS,
      },
    });
    outbox = app.get(OutboxService);
    dataSource = app.get(DataSource);
    probe = await QueueProbe.bind(EXCHANGE, '#', `${EXCHANGE}.probe`);
  }, timeoutFor(STARTUP_TIMEOUT_MS));

  afterAll(async () => {
    await killAllChildren();
    await probe?.close();
    await app?.close();
  });

  const message = (extra: Partial<OutboxMessage> = {}): OutboxMessage => ({
    messageId: randomUUID(),
    type: 'order.paid',
    exchange: EXCHANGE,
    routingKey: 'order.paid',
    payload: { at: Date.now() },
    ...extra,
  });

  const rowOf = async (manager: EntityManager, messageId: string) =>
    (await database.sqlOn(manager, `SELECT status, claimed_by, claim_token FROM {outbox_message} WHERE message_id = ?`, [messageId]))[0];

  const nothingMoreArrives = () => nothingMoreArrivesFrom(database, probe);

  onlyWhereSentOnCommit(
    'inserts a message claimed by this instance and sends it once the transaction commits',
    async () => {
      const sent = message();
      await dataSource.transaction(async (manager) => {
        await outbox.publish(sent, { manager });
        expect(await rowOf(manager, sent.messageId!)).toMatchObject({ status: 'PROCESSING', claimed_by: INSTANCE_ID });
      });
      await probe.waitFor(1);
      expect(probe.messageIds).toEqual([sent.messageId]);
      await nothingMoreArrives();
      const [row] = await database.sql(`SELECT status, claim_token, attempts FROM {outbox_message} WHERE message_id = ?`, [sent.messageId]);
      expect(row).toMatchObject({ status: 'DONE', claim_token: null });
      expect(Number(row.attempts)).toBe(0);
      probe.messages.length = 0;
    },
    timeoutFor(WAIT_TIMEOUT_MS, WAIT_TIMEOUT_MS),
  );

  it(
    'inserts ordered and delayed messages PENDING, for the claims that order and time them',
    async () => {
      const ordered = message({ orderingKey: 'order-7' });
      const delayed = message({ delayMs: 1 });
      await dataSource.transaction(async (manager) => {
        await outbox.publish(ordered, { manager });
        await outbox.publish(delayed, { manager });
        expect(await rowOf(manager, ordered.messageId!)).toMatchObject({ status: 'PENDING', claim_token: null });
        expect(await rowOf(manager, delayed.messageId!)).toMatchObject({ status: 'PENDING', claim_token: null });
      });
      await app.get(OutboxDispatcher).drain();
      await nothingMoreArrives();
      expect(probe.messageIds.sort()).toEqual([ordered.messageId, delayed.messageId].sort());
      probe.messages.length = 0;
    },
    timeoutFor(WAIT_TIMEOUT_MS, WAIT_TIMEOUT_MS),
  );

  it(
    'abandons a message cancelled by the transaction that published it, and sends none of it',
    async () => {
      const cancelled = message({ bizKey: 'order-8:paid' });
      const kept = message({ bizKey: 'order-9:paid' });
      await dataSource.transaction(async (manager) => {
        await outbox.publish(cancelled, { manager });
        await outbox.publish(kept, { manager });
        expect(await outbox.cancel('order-8:paid', undefined, { manager })).toBe(1);
        // A cancel in a savepoint that rolls back cancels nothing.
        await manager
          .transaction(async (inner) => {
            expect(await outbox.cancel('order-9:paid', undefined, { manager: inner })).toBe(1);
            throw new RolledBack();
          })
          .catch((error) => expect(error).toBeInstanceOf(RolledBack));
      });
      await nothingMoreArrives();
      expect(probe.messageIds).toEqual([kept.messageId]);
      const statuses = await database.sql(`SELECT message_id, status FROM {outbox_message} WHERE message_id IN (?, ?) ORDER BY biz_key`, [
        cancelled.messageId,
        kept.messageId,
      ]);
      expect(statuses).toEqual([
        { message_id: cancelled.messageId, status: 'ABANDONED' },
        { message_id: kept.messageId, status: 'DONE' },
      ]);
      probe.messages.length = 0;
    },
    timeoutFor(WAIT_TIMEOUT_MS, WAIT_TIMEOUT_MS),
  );

  it(
    'sends exactly the messages of the levels that committed, through any nesting of savepoints',
    async () => {
      const published = new Map<string, boolean>();
      /** Publishes the level's messages around its savepoints; true when it committed. */
      async function run(manager: EntityManager, level: Level, outerCommits: boolean): Promise<void> {
        const mine: string[] = [];
        const publishOne = async () => {
          const sent = message();
          await outbox.publish(sent, { manager });
          mine.push(sent.messageId!);
        };
        if (level.publishes > 0) await publishOne();
        for (const child of level.children) {
          await manager
            .transaction((inner) => run(inner, child, outerCommits && level.commits))
            .catch((error) => {
              if (!(error instanceof RolledBack)) throw error;
            });
        }
        for (let i = 1; i < level.publishes; i++) await publishOne();
        for (const id of mine) published.set(id, outerCommits && level.commits);
        if (!level.commits) throw new RolledBack();
      }

      await fc.assert(
        fc.asyncProperty(levels, async (top) => {
          await dataSource
            .transaction((manager) => run(manager, top, true))
            .catch((error) => {
              if (!(error instanceof RolledBack)) throw error;
            });
        }),
        { numRuns: 40 },
      );
      await nothingMoreArrives();
      const committed = [...published].filter(([, commits]) => commits).map(([id]) => id);
      // Each once, and nothing of what was rolled back.
      expect(probe.messageIds.sort()).toEqual(committed.sort());
      if (committed.length > 0) {
        const done = await database.sql(`SELECT message_id FROM {outbox_message} WHERE status = 'DONE' AND message_id IN (?)`, [committed]);
        expect(done).toHaveLength(committed.length);
      }
      const rolledBack = [...published].filter(([, commits]) => !commits).map(([id]) => id);
      if (rolledBack.length > 0) {
        const ghosts = await database.sql(`SELECT message_id FROM {outbox_message} WHERE message_id IN (?)`, [rolledBack]);
        expect(ghosts).toEqual([]);
      }
      probe.messages.length = 0;
    },
    timeoutFor(WAIT_TIMEOUT_MS, WAIT_TIMEOUT_MS),
  );

  /** The rows of `messageIds`, as (message id, status). */
  const statusesOf = (messageIds: string[]) =>
    database.sql(`SELECT message_id, status FROM {outbox_message} WHERE message_id IN (?) ORDER BY id`, [messageIds]);

  /** `kept` arrived once and is DONE; `undone` neither arrived nor has a row. */
  const expectOnlySent = async (kept: OutboxMessage, undone: OutboxMessage) => {
    await probe.waitFor(1);
    await nothingMoreArrives();
    expect(probe.messageIds).toEqual([kept.messageId]);
    expect(await statusesOf([kept.messageId!, undone.messageId!])).toEqual([{ message_id: kept.messageId, status: 'DONE' }]);
    probe.messages.length = 0;
  };

  onlyWhereSentOnCommit.each([
    'ROLLBACK TO SAVEPOINT before_undone',
    '/* past the failed insert */ rollback to savepoint before_undone',
    '-- past the failed insert\n  ROLLBACK TO before_undone',
    // PostgreSQL ends a -- comment at a carriage return too.
    '-- undo\rROLLBACK TO SAVEPOINT before_undone',
    // What opens a comment inside a string or a comment opens none.
    "SELECT '/*'; ROLLBACK TO SAVEPOINT before_undone; -- */",
    'SELECT 1 -- /*\n; ROLLBACK TO SAVEPOINT before_undone; -- */',
  ])(
    'sends nothing a raw ROLLBACK TO SAVEPOINT undid, and what stood around it once (%j)',
    async (rollbackTo) => {
      const kept = message();
      const undone = message();
      await dataSource.transaction(async (manager) => {
        // PostgreSQL's way past a failed statement, written by hand: TypeORM's depth never changes.
        await manager.query('SAVEPOINT before_undone');
        await outbox.publish(undone, { manager });
        await manager.query(rollbackTo);
        await outbox.publish(kept, { manager });
      });
      await expectOnlySent(kept, undone);
    },
    timeoutFor(WAIT_TIMEOUT_MS, WAIT_TIMEOUT_MS),
  );

  onlyWhereSentOnCommit(
    'sees a raw ROLLBACK TO SAVEPOINT after one of TypeORM’s own transaction statements failed',
    async () => {
      const undone = message();
      const kept = message();
      const runner = dataSource.createQueryRunner();
      try {
        await runner.startTransaction();
        await runner.startTransaction();
        await outbox.publish(undone, { manager: runner.manager });
        await runner.query('SELECT 1 / 0').catch(() => undefined);
        // RELEASE SAVEPOINT fails in the aborted transaction; the caller goes on by hand.
        await expect(runner.commitTransaction()).rejects.toThrow();
        await runner.query('ROLLBACK TO SAVEPOINT typeorm_1');
        await outbox.publish(kept, { manager: runner.manager });
        await runner.commitTransaction();
        await runner.commitTransaction();
      } finally {
        await runner.release();
      }
      await expectOnlySent(kept, undone);
    },
    timeoutFor(WAIT_TIMEOUT_MS, WAIT_TIMEOUT_MS),
  );

  onlyWhereSentOnCommit(
    'sends nothing of a transaction whose COMMIT rolled back (an error caught inside it)',
    async () => {
      const lost = message();
      await dataSource.transaction(async (manager) => {
        await outbox.publish(lost, { manager });
        // The transaction is aborted now; PostgreSQL answers its COMMIT with ROLLBACK, and no error.
        await manager.query('SELECT 1 / 0').catch(() => undefined);
      });
      await nothingMoreArrives();
      expect(probe.messageIds).toEqual([]);
      expect(await statusesOf([lost.messageId!])).toEqual([]);
    },
    timeoutFor(WAIT_TIMEOUT_MS),
  );

  onlyWhereSentOnCommit(
    'renews the lease of a message its transaction held until too little of it was left, and sends it once',
    async () => {
      const held = message();
      await dataSource.transaction(async (manager) => {
        await outbox.publish(held, { manager });
        await sleep(CONFIRM_AFTER_MS + 500);
      });
      await probe.waitFor(1);
      // Renewed as it was handed off: the stuck detector finds nothing expired.
      expect((await app.get(StuckDetector).check()).reclaimed).toBe(0);
      await nothingMoreArrives();
      expect(probe.messageIds).toEqual([held.messageId]);
      const [row] = await database.sql(
        `SELECT status, attempts, extract(epoch FROM claimed_at - created_at) * 1000 AS held_ms FROM {outbox_message} WHERE message_id = ?`,
        [held.messageId],
      );
      expect({ status: row.status, attempts: Number(row.attempts) }).toEqual({ status: 'DONE', attempts: 0 });
      expect(Number(row.held_ms)).toBeGreaterThanOrEqual(CONFIRM_AFTER_MS + 500);
      probe.messages.length = 0;
    },
    timeoutFor(LEASE_MS, WAIT_TIMEOUT_MS, WAIT_TIMEOUT_MS),
  );

  onlyWhereSentOnCommit(
    'inserts at most a batch of one transaction claimed, the rest for the claims',
    async () => {
      const messages = Array.from({ length: BATCH_SIZE + 10 }, () => message());
      await dataSource.transaction(async (manager) => {
        for (const m of messages) await outbox.publish(m, { manager });
        const counts = await database.sqlOn(
          manager,
          `SELECT status, count(*) AS n FROM {outbox_message} WHERE message_id IN (?) GROUP BY status ORDER BY status`,
          [messages.map((m) => m.messageId)],
        );
        expect(counts.map((c) => [c.status, Number(c.n)])).toEqual([
          ['PENDING', 10],
          ['PROCESSING', BATCH_SIZE],
        ]);
      });
      await probe.waitFor(messages.length);
      await nothingMoreArrives();
      expect(probe.messageIds.sort()).toEqual(messages.map((m) => m.messageId).sort());
      probe.messages.length = 0;
    },
    timeoutFor(WAIT_TIMEOUT_MS, WAIT_TIMEOUT_MS),
  );

  onlyWhereSentOnCommit(
    'sends a message an entity subscriber publishes during save(…, { data })',
    async () => {
      const fromSubscriber = message();
      // TypeORM lends the query runner the caller's `data` for the save's length.
      const subscriber: EntitySubscriberInterface<TestOrder> = {
        listenTo: () => TestOrder,
        afterInsert: async (event: InsertEvent<TestOrder>) => {
          if ((event.queryRunner.data as { publish?: boolean }).publish) await outbox.publish(fromSubscriber, { manager: event.manager });
        },
      };
      dataSource.subscribers.push(subscriber);
      try {
        await dataSource.transaction((manager) => manager.save(TestOrder, { status: 'PAID' }, { data: { publish: true } }));
      } finally {
        dataSource.subscribers.splice(dataSource.subscribers.indexOf(subscriber), 1);
      }
      await probe.waitFor(1);
      await nothingMoreArrives();
      expect(probe.messageIds).toEqual([fromSubscriber.messageId]);
      probe.messages.length = 0;
    },
    timeoutFor(WAIT_TIMEOUT_MS, WAIT_TIMEOUT_MS),
  );

  onlyWhereSentOnCommit(
    'a publisher killed after its commits, before its sends, loses nothing: the stuck detector reclaims its messages',
    async () => {
      const type = 'it.send-on-commit.crash';
      // The victim's broker connection goes through a proxy that stops forwarding: what it sends never arrives.
      const proxy = await TcpProxy.inFrontOf(AMQP_URL);
      try {
        const victim = await ChildApp.start('it-send-on-commit-victim', {
          database,
          amqpUrl: proxy.rewrite(AMQP_URL),
          publisher: { exchange: EXCHANGE, type },
          outbox: { instanceId: 'it-send-on-commit-victim', pollIntervalMs: 60_000, sendTimeoutMs: 60_000, stuckReclaimAfterMs: 600_000 },
        });
        proxy.blackHole();
        const published = await victim.publish(20);
        await victim.kill('SIGKILL');
        await waitUntil(async () => (await sessionsOf(database, victim.name)) === 0, 'the server ended the victim’s sessions');
        const left = await database.sql(`SELECT status, claimed_by FROM {outbox_message} WHERE message_type = ?`, [type]);
        // Claimed by the victim as they were inserted: no claim statement could have reached them.
        expect(left).toEqual(Array(20).fill({ status: 'PROCESSING', claimed_by: 'it-send-on-commit-victim' }));

        const rescuer = await ChildApp.start('it-send-on-commit-rescuer', {
          database,
          outbox: {
            instanceId: 'it-send-on-commit-rescuer',
            stuckReclaimAfterMs: 2_000,
            stuckWarnAfterMs: 1_000,
            stuckCheckIntervalMs: 200,
            sendTimeoutMs: 1_000,
            pollIntervalMs: 100,
          },
        });
        await waitUntil(async () => {
          const rows = await database.sql(`SELECT status FROM {outbox_message} WHERE message_type = ?`, [type]);
          return rows.every((row) => row.status === 'DONE');
        }, 'the rescuer sent every reclaimed message');
        await rescuer.stop();
        await probe.flush();
        expect(new Set(probe.messageIds)).toEqual(new Set(published));
        const rows = await database.sql(`SELECT attempts, claimed_by FROM {outbox_message} WHERE message_type = ?`, [type]);
        // The expired claim counted as an attempt. Reclaimed, a row is any live dispatcher's: the
        // rescuer's, or this file's own, whose once-a-minute poll may come first.
        expect(rows).toHaveLength(20);
        for (const row of rows) expect([Number(row.attempts), ['it-send-on-commit-rescuer', INSTANCE_ID].includes(row.claimed_by)]).toEqual([1, true]);
        expect(rescuer.stderr).toBe('');
        probe.messages.length = 0;
      } finally {
        await proxy.close();
      }
    },
    timeoutFor(2 * STARTUP_TIMEOUT_MS, 3 * WAIT_TIMEOUT_MS, STOP_TIMEOUT_MS),
  );
});
