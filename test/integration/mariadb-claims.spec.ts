import { Connection } from 'mysql2/promise';
import { randomUUID } from 'node:crypto';
import { ClaimedMessage } from '../../lib/dialects/outbox-dialect';
import { ConditionalUpdateClaim } from '../../lib/dialects/mysql/mysql-conditional-claim';
import { ClaimRef, FailedSettlement } from '../../lib/engine/state-table';
import { MessageStatus } from '../../lib/message/message-status';
import {
  describeOnMysql,
  DialectTables,
  dropDatabase,
  openSession,
  openWithTables,
  outboxRow,
  OUTBOX_TABLE,
  publish,
  publishMany,
  recreateDatabase,
  SERVER,
  sleep,
} from './mariadb-test-database';

const { PENDING, PROCESSING, DONE, FAILED, MANUAL_REQUIRED, ABANDONED } = MessageStatus;
const DATABASE = 'it_mariadb_claims';

/** The MySQL/MariaDB dialect's outbox claims, settles and admin transitions, on a real MariaDB. */
describeOnMysql(`${SERVER.name} outbox dialect`, () => {
  let tables: DialectTables;

  beforeAll(async () => {
    await recreateDatabase(DATABASE);
    tables = await openWithTables(DATABASE);
  });

  beforeEach(() => tables.dataSource.query(`DELETE FROM \`${OUTBOX_TABLE}\``));

  afterAll(async () => {
    await tables?.dataSource.destroy();
    await dropDatabase(DATABASE);
  });

  const claimedBy = 'test-instance';
  const claim = (limit = 100, on: DialectTables = tables) => on.outbox.claim(on.dataSource, limit, randomUUID(), claimedBy);
  const failure = (claimed: ClaimRef, status: FailedSettlement['status'], delayMs: number, error = 'boom'): FailedSettlement => ({
    id: claimed.id,
    claimToken: claimed.claimToken,
    status,
    delayMs,
    error,
  });
  const stateOf = async (messageId: string) => (await tables.outbox.findMessage(tables.dataSource, { messageId }))!;
  const idOf = async (messageId: string): Promise<string> =>
    (await tables.dataSource.query(`SELECT CAST(id AS CHAR) AS id FROM \`${OUTBOX_TABLE}\` WHERE message_id = ?`, [messageId]))[0].id;
  const makeDue = () => tables.dataSource.query(`UPDATE \`${OUTBOX_TABLE}\` SET next_attempt_at = UTC_TIMESTAMP(6)`);

  it('describes itself with the server version and SKIP LOCKED claims', () => {
    expect(tables.dialect.description).toMatch(new RegExp(`^${SERVER.flavor} \\d+\\.\\d+\\.\\d+ \\(SKIP LOCKED\\)$`));
  });

  describe('inserts', () => {
    it('stores a row once per message id and per (type, bizKey), and names the duplicate', async () => {
      const first = outboxRow({ bizKey: 'order-1:paid' });
      const [results, duplicateOf] = await tables.dataSource.transaction(async (manager) => [
        [
          await tables.outbox.insert(manager, first),
          await tables.outbox.insert(manager, { ...first }),
          await tables.outbox.insert(manager, outboxRow({ bizKey: 'order-1:paid' })),
          await tables.outbox.insert(manager, outboxRow({ bizKey: 'order-1:paid', type: 'other.event' })),
          await tables.outbox.insert(manager, outboxRow()),
        ],
        [
          await tables.outbox.findDuplicateMessageId(manager, outboxRow({ bizKey: 'order-1:paid' })),
          await tables.outbox.findDuplicateMessageId(manager, { ...outboxRow(), messageId: first.messageId }),
          await tables.outbox.findDuplicateMessageId(manager, outboxRow()),
        ],
      ]);
      expect(results).toEqual([true, false, false, true, true]);
      expect(duplicateOf).toEqual([first.messageId, first.messageId, null]);
    });

    it('compares keys exactly, like PostgreSQL: case, accents and trailing spaces make other keys', async () => {
      const keys = ['order-2:paid', 'Order-2:paid', 'order-2:paid ', 'ordér-2:paid'];
      expect(await publish(tables, ...keys.map((bizKey) => outboxRow({ bizKey })))).toEqual([true, true, true, true]);
    });

    it('keeps payload and headers byte for byte', async () => {
      const row = outboxRow({ payload: '{"b":1,"a":[1,2],"c":"ü 😀"}', headers: '{"z":"1","x-trace":"t"}' });
      await publish(tables, row);
      const [claimed] = await claim();
      expect(claimed.payload).toBe(row.payload);
      expect(claimed.headers).toEqual({ z: '1', 'x-trace': 't' });
    });

    it('reads times from the database clock as the right instants, whatever the driver time zone', async () => {
      // One connection, so that the session time zone set below is the one every statement sees.
      const shifted = await openWithTables(DATABASE, { dataSource: { timezone: '+05:00', synchronize: false, extra: { connectionLimit: 1 } } as never });
      try {
        await shifted.dataSource.query(`SET time_zone = '-07:00'`);
        const row = outboxRow({ bizKey: 'order-3:paid' });
        await publish(shifted, row);
        const [clock] = await shifted.dataSource.query(`SELECT DATE_FORMAT(UTC_TIMESTAMP(6), '%Y-%m-%dT%H:%i:%s.%fZ') AS now`);
        const state = (await shifted.outbox.findMessage(shifted.dataSource, { bizKey: 'order-3:paid', type: row.type }))!;
        expect(Math.abs(state.createdAt.getTime() - new Date(clock.now).getTime())).toBeLessThan(5_000);
        expect(Math.abs(state.createdAt.getTime() - Date.now())).toBeLessThan(60_000);
        expect(state.processedAt).toBeNull();
        const [claimed] = await claim(10, shifted);
        expect(claimed.createdAt.getTime()).toBe(state.createdAt.getTime());
        await shifted.outbox.settleDone(shifted.dataSource, [claimed]);
        const done = (await shifted.outbox.findMessage(shifted.dataSource, { messageId: row.messageId }))!;
        expect(done.processedAt!.getTime()).toBeGreaterThanOrEqual(done.createdAt.getTime());
        expect(done.processedAt!.getTime() - done.createdAt.getTime()).toBeLessThan(5_000);
      } finally {
        await shifted.dataSource.destroy();
      }
    });
  });

  describe('claims and settles', () => {
    it('claims due rows oldest first under one token, as PROCESSING', async () => {
      const rows = [outboxRow(), outboxRow(), outboxRow()];
      await publish(tables, ...rows);
      const claimed = await claim(2);
      expect(claimed.map((c) => c.messageId)).toEqual([rows[0].messageId, rows[1].messageId]);
      expect(new Set(claimed.map((c) => c.claimToken)).size).toBe(1);
      expect(claimed[0]).toMatchObject({ type: 'test.event', exchange: 'test', routingKey: 'test.event', attempts: 0, maxAttempts: 5, orderingKey: null });
      expect(typeof claimed[0].id).toBe('string');
      expect((await stateOf(rows[0].messageId)).status).toBe(PROCESSING);
      const [{ claimed_by }] = await tables.dataSource.query(`SELECT claimed_by FROM \`${OUTBOX_TABLE}\` WHERE message_id = ?`, [rows[0].messageId]);
      expect(claimed_by).toBe(claimedBy);
      expect((await claim()).map((c) => c.messageId)).toEqual([rows[2].messageId]);
      expect(await claim()).toEqual([]);
    });

    it('fences every settle by claim token and PROCESSING status', async () => {
      const rows = [outboxRow(), outboxRow(), outboxRow()];
      await publish(tables, ...rows);
      const claimed = await claim();
      const stale = claimed.map((c) => ({ ...c, claimToken: randomUUID() }));
      expect(await tables.outbox.settleDone(tables.dataSource, stale)).toBe(0);
      expect(
        await tables.outbox.settleFailed(
          tables.dataSource,
          stale.map((c) => failure(c, FAILED, 0)),
        ),
      ).toBe(0);
      expect(await tables.outbox.release(tables.dataSource, stale)).toBe(0);

      expect(await tables.outbox.settleDone(tables.dataSource, [claimed[0]])).toBe(1);
      expect(
        await tables.outbox.settleFailed(tables.dataSource, [failure(claimed[1], FAILED, 60_000, 'later'), failure(claimed[2], MANUAL_REQUIRED, 0, 'fatal')]),
      ).toBe(2);
      // Settled once: the same token settles nothing again.
      expect(await tables.outbox.settleDone(tables.dataSource, claimed)).toBe(0);
      expect(
        await tables.outbox.settleFailed(
          tables.dataSource,
          claimed.map((c) => failure(c, FAILED, 0)),
        ),
      ).toBe(0);

      const [done, failed, manual] = await Promise.all(rows.map((r) => stateOf(r.messageId)));
      expect(done).toMatchObject({ status: DONE, attempts: 0, lastError: null });
      expect(failed).toMatchObject({ status: FAILED, attempts: 1, lastError: 'later' });
      expect(manual).toMatchObject({ status: MANUAL_REQUIRED, attempts: 1, lastError: 'fatal' });
      const [{ token, delay }] = await tables.dataSource.query(
        `SELECT claim_token AS token, TIMESTAMPDIFF(MICROSECOND, UTC_TIMESTAMP(6), next_attempt_at) AS delay FROM \`${OUTBOX_TABLE}\` WHERE message_id = ?`,
        [rows[1].messageId],
      );
      expect(token).toBeNull();
      expect(Number(delay)).toBeGreaterThan(55_000_000);
      expect(Number(delay)).toBeLessThanOrEqual(60_000_000);
    });

    it('retries a FAILED row once its delay passed, with its attempts', async () => {
      const row = outboxRow();
      await publish(tables, row);
      const [first] = await claim();
      await tables.outbox.settleFailed(tables.dataSource, [failure(first, FAILED, 60_000)]);
      expect(await claim()).toEqual([]);
      await makeDue();
      const [again] = await claim();
      expect(again).toMatchObject({ messageId: row.messageId, attempts: 1 });
      expect(again.claimToken).not.toBe(first.claimToken);
    });

    it('claims the oldest due rows across PENDING and FAILED, and leaves the others claimable', async () => {
      const rows = [outboxRow(), outboxRow(), outboxRow(), outboxRow()];
      await publish(tables, ...rows);
      const [first, , third] = await claim();
      const retried = [first, third].map((claimed) => failure(claimed, FAILED, 0));
      expect(await tables.outbox.settleFailed(tables.dataSource, retried)).toBe(2);
      // Rows 0 and 2 FAILED, due now; rows 1 and 3 given back PENDING.
      await tables.outbox.releaseClaim(tables.dataSource, first.claimToken);
      await makeDue();

      const oldest = await claim(3);
      expect(oldest.map((c) => c.messageId)).toEqual(rows.slice(0, 3).map((row) => row.messageId));
      expect(oldest.map((c) => c.attempts)).toEqual([1, 0, 1]);
      expect(new Set(oldest.map((c) => c.claimToken)).size).toBe(1);
      expect((await stateOf(rows[3].messageId)).status).toBe(PENDING);
      expect((await claim()).map((c) => c.messageId)).toEqual([rows[3].messageId]);
    });

    it('settles a mixed batch in one statement per outcome, each row by its own token', async () => {
      await publishMany(tables, 6);
      const a = await claim(3);
      const b = await claim(3);
      const mixed = [a[0], b[0], a[1], b[1]];
      expect(await tables.outbox.settleDone(tables.dataSource, mixed)).toBe(4);
      expect(
        await tables.outbox.settleDone(tables.dataSource, [
          { id: a[2].id, claimToken: b[2].claimToken },
          { id: b[2].id, claimToken: a[2].claimToken },
        ]),
      ).toBe(0);
    });

    it('releases claims unattempted: PENDING, or FAILED when attempts were made, due now', async () => {
      const rows = [outboxRow(), outboxRow()];
      await publish(tables, ...rows);
      const [fresh, retried] = await claim();
      await tables.outbox.settleFailed(tables.dataSource, [failure(retried, FAILED, 0)]);
      const [retriedAgain] = await claim();
      expect(await tables.outbox.release(tables.dataSource, [fresh, retriedAgain])).toBe(2);
      expect((await stateOf(rows[0].messageId)).status).toBe(PENDING);
      expect(await stateOf(rows[1].messageId)).toMatchObject({ status: FAILED, attempts: 1 });
      expect((await claim()).length).toBe(2);
    });

    it('finds expired claims, counts backlog and stale claims, and deletes old finished rows', async () => {
      await publishMany(tables, 5);
      const claimed = await claim(3);
      await tables.dataSource.query(`UPDATE \`${OUTBOX_TABLE}\` SET claimed_at = UTC_TIMESTAMP(6) - INTERVAL 10 MINUTE WHERE claim_token = ?`, [
        claimed[0].claimToken,
      ]);
      const expired = await tables.outbox.findExpiredClaims(tables.dataSource, 60_000, 10);
      expect(expired.map((e) => e.id)).toEqual(claimed.map((c) => c.id));
      expect(expired[0]).toMatchObject({ claimToken: claimed[0].claimToken, claimedBy, attempts: 0, maxAttempts: 5 });
      expect(await tables.outbox.findExpiredClaims(tables.dataSource, 20 * 60_000, 10)).toEqual([]);
      expect(await tables.outbox.healthCounts(tables.dataSource, 60_000)).toEqual({ backlog: 2, staleProcessing: 3 });

      await tables.outbox.settleDone(tables.dataSource, claimed);
      expect(await tables.outbox.deleteFinished(tables.dataSource, 60_000, 10)).toBe(0);
      await tables.dataSource.query(`UPDATE \`${OUTBOX_TABLE}\` SET processed_at = UTC_TIMESTAMP(6) - INTERVAL 2 MINUTE WHERE status = 'DONE'`);
      expect(await tables.outbox.deleteFinished(tables.dataSource, 60_000, 2)).toBe(2);
      expect(await tables.outbox.deleteFinished(tables.dataSource, 60_000, 2)).toBe(1);
      expect(await tables.outbox.deleteFinished(tables.dataSource, 60_000, 2)).toBe(0);
      expect(await tables.outbox.healthCounts(tables.dataSource, 60_000)).toEqual({ backlog: 2, staleProcessing: 0 });
    });

    it('cancels the unsent messages of a business event only', async () => {
      const [sent, unsent, other] = [
        outboxRow({ bizKey: 'order-9:paid' }),
        outboxRow({ bizKey: 'order-9:paid', type: 'order.shipped' }),
        outboxRow({ bizKey: 'order-10:paid' }),
      ];
      await publish(tables, sent);
      const [claimed] = await claim();
      await tables.outbox.settleDone(tables.dataSource, [claimed]);
      await publish(tables, unsent, other);
      expect(await tables.dataSource.transaction((manager) => tables.outbox.cancel(manager, 'order-9:paid', 'test.event'))).toBe(0);
      expect(await tables.dataSource.transaction((manager) => tables.outbox.cancel(manager, 'order-9:paid', undefined))).toBe(1);
      expect((await stateOf(unsent.messageId)).status).toBe(ABANDONED);
      expect((await stateOf(unsent.messageId)).processedAt).toBeInstanceOf(Date);
      expect((await stateOf(other.messageId)).status).toBe(PENDING);
    });
  });

  describe('concurrency', () => {
    /** Claims and settles until nothing is left; returns every id it claimed. */
    async function drain(on: DialectTables, batch: number): Promise<string[]> {
      const ids: string[] = [];
      for (let idle = 0; idle < 3;) {
        const claimed = await claim(batch, on);
        if (claimed.length === 0) {
          idle++;
          await sleep(20);
          continue;
        }
        idle = 0;
        ids.push(...claimed.map((c) => c.id));
        expect(await on.outbox.settleDone(on.dataSource, claimed)).toBe(claimed.length);
      }
      return ids;
    }

    it('gives every row to exactly one of several claimers on two DataSources', async () => {
      const total = 3_000;
      await publishMany(tables, total, (i) => ({ orderingKey: i % 10 === 0 ? `key-${i % 7}` : null }));
      const other = await openWithTables(DATABASE, { dataSource: { synchronize: false } });
      try {
        const claimedIds = (await Promise.all([drain(tables, 50), drain(tables, 50), drain(other, 50), drain(other, 50)])).flat();
        expect(claimedIds.length).toBe(total);
        expect(new Set(claimedIds).size).toBe(total);
        const [{ done }] = await tables.dataSource.query(`SELECT count(*) AS done FROM \`${OUTBOX_TABLE}\` WHERE status = 'DONE'`);
        expect(Number(done)).toBe(total);
      } finally {
        await other.dataSource.destroy();
      }
    });

    describe('with another session holding a row lock', () => {
      let session: Connection;
      beforeEach(async () => {
        session = await openSession(DATABASE);
      });
      afterEach(() => session.end());

      const lockRow = async (id: string) => {
        await session.query('START TRANSACTION');
        await session.query(`SELECT id FROM \`${OUTBOX_TABLE}\` WHERE id = ? FOR UPDATE`, [id]);
      };

      it('skips the locked row instead of waiting for it', async () => {
        const rows = [outboxRow(), outboxRow(), outboxRow()];
        await publish(tables, ...rows);
        await lockRow(await idOf(rows[0].messageId));
        const started = Date.now();
        const claimed = await claim();
        expect(Date.now() - started).toBeLessThan(2_000);
        expect(claimed.map((c) => c.messageId)).toEqual([rows[1].messageId, rows[2].messageId]);
        await session.query('ROLLBACK');
        expect((await claim()).map((c) => c.messageId)).toEqual([rows[0].messageId]);
      });

      it('keeps the rows behind a locked head of their ordering key', async () => {
        // The ordering rule's subquery must see the locked head (as unfinished), not skip it.
        const [head, second, unordered] = [outboxRow({ orderingKey: 'k' }), outboxRow({ orderingKey: 'k' }), outboxRow()];
        await publish(tables, head, second, unordered);
        await lockRow(await idOf(head.messageId));
        const started = Date.now();
        const claimed = await claim();
        expect(Date.now() - started).toBeLessThan(2_000);
        expect(claimed.map((c) => c.messageId)).toEqual([unordered.messageId]);
        await session.query('ROLLBACK');
        const [claimedHead] = await claim();
        expect(claimedHead.messageId).toBe(head.messageId);
        expect(await claim()).toEqual([]);
      });

      it('keeps the rows behind a head another session is settling, until it commits', async () => {
        const [head, second] = [outboxRow({ orderingKey: 'k2' }), outboxRow({ orderingKey: 'k2' })];
        await publish(tables, head, second);
        const [claimedHead] = await claim();
        await session.query('START TRANSACTION');
        await session.query(`UPDATE \`${OUTBOX_TABLE}\` SET status = 'DONE', claim_token = NULL WHERE id = ?`, [claimedHead.id]);
        expect(await claim()).toEqual([]);
        await session.query('COMMIT');
        expect((await claim()).map((c) => c.messageId)).toEqual([second.messageId]);
      });
    });
  });

  describe('ordering keys', () => {
    it('claims one row per key at a time, in id order, next to unordered rows', async () => {
      const rows = [
        outboxRow({ orderingKey: 'a' }),
        outboxRow({ orderingKey: 'b' }),
        outboxRow({ orderingKey: 'a' }),
        outboxRow(),
        outboxRow({ orderingKey: 'b' }),
      ];
      await publish(tables, ...rows);
      const first = await claim();
      expect(first.map((c) => c.messageId)).toEqual([rows[0].messageId, rows[1].messageId, rows[3].messageId]);
      expect(await claim()).toEqual([]);
      // A FAILED head still holds its key back.
      await tables.outbox.settleFailed(tables.dataSource, [failure(first[0], FAILED, 0)]);
      await tables.outbox.settleDone(tables.dataSource, [first[1]]);
      const second = await claim();
      expect(second.map((c) => c.messageId)).toEqual([rows[0].messageId, rows[4].messageId]);
      await tables.outbox.settleDone(tables.dataSource, second);
      expect((await claim()).map((c) => c.messageId)).toEqual([rows[2].messageId]);
    });

    it('parks a key behind a MANUAL_REQUIRED head until an operator requeues or abandons it', async () => {
      const rows = [outboxRow({ orderingKey: 'p' }), outboxRow({ orderingKey: 'p' }), outboxRow({ orderingKey: 'p' }), outboxRow({ orderingKey: 'q' })];
      await publish(tables, ...rows);
      const claimed = await claim();
      expect(claimed.map((c) => c.messageId)).toEqual([rows[0].messageId, rows[3].messageId]);
      await tables.outbox.settleFailed(tables.dataSource, [failure(claimed[0], MANUAL_REQUIRED, 0, 'poison'), failure(claimed[1], FAILED, 60_000)]);
      expect(await claim()).toEqual([]);

      expect(await tables.outbox.findParkedKeys(tables.dataSource, 10)).toEqual([
        {
          orderingKey: 'p',
          consumer: null,
          messageId: rows[0].messageId,
          type: 'test.event',
          transport: 'default',
          attempts: 1,
          lastError: 'poison',
          waiting: 2,
        },
      ]);

      expect(await tables.outbox.requeue(tables.dataSource, { messageId: rows[1].messageId })).toBe(false);
      expect(await tables.outbox.requeue(tables.dataSource, { messageId: rows[0].messageId })).toBe(true);
      expect(await stateOf(rows[0].messageId)).toMatchObject({ status: PENDING, attempts: 0 });
      expect(await tables.outbox.findParkedKeys(tables.dataSource, 10)).toEqual([]);
      const [requeued] = await claim();
      expect(requeued.messageId).toBe(rows[0].messageId);
      await tables.outbox.settleFailed(tables.dataSource, [failure(requeued, MANUAL_REQUIRED, 0, 'poison again')]);

      expect(await tables.outbox.abandon(tables.dataSource, { messageId: rows[0].messageId })).toBe(true);
      expect(await tables.outbox.abandon(tables.dataSource, { messageId: rows[0].messageId })).toBe(false);
      const abandoned = await stateOf(rows[0].messageId);
      expect(abandoned.status).toBe(ABANDONED);
      expect(abandoned.processedAt).toBeInstanceOf(Date);
      expect((await claim()).map((c) => c.messageId)).toEqual([rows[1].messageId]);
    });
  });

  describe('the conditional-UPDATE claim (servers without SKIP LOCKED)', () => {
    let cas: DialectTables;
    beforeAll(async () => {
      cas = await openWithTables(DATABASE, { claimStrategy: new ConditionalUpdateClaim(), dataSource: { synchronize: false } });
    });
    afterAll(() => cas?.dataSource.destroy());

    it('names itself in the description', () => {
      expect(cas.dialect.description).toMatch(new RegExp(`^${SERVER.flavor} \\d+\\.\\d+\\.\\d+ \\(conditional-update\\)$`));
    });

    it('claims, orders and fences like the SKIP LOCKED claim', async () => {
      const rows = [outboxRow({ orderingKey: 'a' }), outboxRow({ orderingKey: 'a' }), outboxRow()];
      await publish(cas, ...rows);
      const first = await claim(10, cas);
      expect(first.map((c: ClaimedMessage) => c.messageId)).toEqual([rows[0].messageId, rows[2].messageId]);
      expect(await claim(10, cas)).toEqual([]);
      expect(await cas.outbox.settleDone(cas.dataSource, [{ ...first[0], claimToken: randomUUID() }])).toBe(0);
      expect(await cas.outbox.settleDone(cas.dataSource, first)).toBe(2);
      expect((await claim(10, cas)).map((c) => c.messageId)).toEqual([rows[1].messageId]);
    });

    it('gives every row to exactly one of several claimers on two DataSources', async () => {
      const total = 3_000;
      await publishMany(cas, total, (i) => ({ orderingKey: i % 10 === 0 ? `key-${i % 7}` : null }));
      const other = await openWithTables(DATABASE, { claimStrategy: new ConditionalUpdateClaim(), dataSource: { synchronize: false } });
      const seen: string[] = [];
      const drain = async (on: DialectTables) => {
        for (let idle = 0; idle < 3;) {
          const claimed = await claim(50, on);
          if (claimed.length === 0) {
            idle++;
            await sleep(20);
            continue;
          }
          idle = 0;
          seen.push(...claimed.map((c) => c.id));
          expect(await on.outbox.settleDone(on.dataSource, claimed)).toBe(claimed.length);
        }
      };
      try {
        await Promise.all([drain(cas), drain(cas), drain(other), drain(other)]);
        expect(seen.length).toBe(total);
        expect(new Set(seen).size).toBe(total);
      } finally {
        await other.dataSource.destroy();
      }
    });
  });
});
