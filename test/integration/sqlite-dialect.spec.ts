import { randomUUID } from 'node:crypto';
import { DataSource } from 'typeorm';
import { ClaimRef, FailedSettlement } from '../../lib/engine/state-table';
import { qualifiedTable, resolveDialect } from '../../lib/dialects/resolve-dialect';
import { MessageStatus } from '../../lib/message/message-status';
import { createInboxTableMigration, createOutboxTableMigration, createOutboxTableV2Migration } from '../../lib/schema/table-migrations';
import { createTablesAtStartup } from '../../lib/schema/create-tables-at-startup';
import { newDatabaseForEachTest } from './sqlite-database-per-test';
import {
  describeSqlite,
  DialectTables,
  inboxRow,
  INBOX_TABLE,
  openSqlite,
  outboxRow,
  outboxState,
  OUTBOX_TABLE,
  publish,
  sleep,
} from './sqlite-dialect-fixture';

const { PENDING, PROCESSING, DONE, FAILED, MANUAL_REQUIRED, ABANDONED } = MessageStatus;

/** The SQLite dialect driven directly against a database file: each state transition of PostgreSQL's. */
describeSqlite('SQLite dialect', () => {
  let tables: DialectTables;
  let dataSource: DataSource;
  const databases = newDatabaseForEachTest((opened) => {
    tables = opened;
    dataSource = opened.dataSource;
  });

  const token = () => randomUUID();
  const failure = (claim: ClaimRef, status: FailedSettlement['status'], delayMs: number, error: string): FailedSettlement => ({
    id: claim.id,
    claimToken: claim.claimToken,
    status,
    delayMs,
    error,
  });
  const inboxState = async (consumer: string, messageId: string) =>
    (await dataSource.query(`SELECT * FROM "${INBOX_TABLE}" WHERE consumer = ? AND message_id = ?`, [consumer, messageId]))[0];
  const ageClaims = (table: string, ms: number) =>
    dataSource.query(`UPDATE "${table}" SET claimed_at = strftime('%Y-%m-%d %H:%M:%f', 'now', '-${ms / 1000} seconds') WHERE status = 'PROCESSING'`);
  const makeDue = (table: string) => dataSource.query(`UPDATE "${table}" SET next_attempt_at = strftime('%Y-%m-%d %H:%M:%f', 'now')`);

  it('describes itself with the SQLite version', () => {
    expect(tables.dialect.description).toMatch(/^sqlite 3\.\d+\.\d+$/);
  });

  describe('outbox inserts', () => {
    it('stores a row once per message id and per (type, bizKey), and reports the duplicate', async () => {
      const first = outboxRow({ bizKey: 'order-1:paid' });
      let results: boolean[] = [];
      let duplicateOf: (string | null)[] = [];
      await dataSource.transaction(async (manager) => {
        results = [
          await tables.outbox.insert(manager, first),
          await tables.outbox.insert(manager, { ...first }),
          await tables.outbox.insert(manager, outboxRow({ bizKey: 'order-1:paid' })),
          await tables.outbox.insert(manager, outboxRow({ bizKey: 'order-1:paid', type: 'other.event' })),
          await tables.outbox.insert(manager, outboxRow()),
          await tables.outbox.insert(manager, outboxRow()),
        ];
        duplicateOf = [
          await tables.outbox.findDuplicateMessageId(manager, outboxRow({ bizKey: 'order-1:paid' })),
          await tables.outbox.findDuplicateMessageId(manager, outboxRow()),
        ];
      });
      expect(results).toEqual([true, false, false, true, true, true]);
      expect(duplicateOf).toEqual([first.messageId, null]);
      expect(Number((await dataSource.query(`SELECT count(*) AS n FROM "${OUTBOX_TABLE}"`))[0].n)).toBe(4);
    });

    it('reports a message state with dates from the database clock', async () => {
      const row = outboxRow({ bizKey: 'order-2:paid', orderingKey: 'order-2' });
      const before = Date.now();
      await publish(tables, row);
      const byId = await tables.outbox.findMessage(dataSource, { messageId: row.messageId });
      expect(byId).toMatchObject({
        messageId: row.messageId,
        type: row.type,
        bizKey: 'order-2:paid',
        orderingKey: 'order-2',
        status: PENDING,
        attempts: 0,
        lastError: null,
        processedAt: null,
      });
      expect(byId!.createdAt).toBeInstanceOf(Date);
      expect(Math.abs(byId!.createdAt.getTime() - before)).toBeLessThan(5_000);
      expect(await tables.outbox.findMessage(dataSource, { bizKey: 'order-2:paid', type: row.type })).toEqual(byId);
      expect(await tables.outbox.findMessage(dataSource, { messageId: randomUUID() })).toBeNull();
    });

    it('cancels the never-sent messages of a business event, in the caller transaction', async () => {
      const pending = outboxRow({ bizKey: 'order-3:paid' });
      const otherType = outboxRow({ bizKey: 'order-3:paid', type: 'order.shipped' });
      const sent = outboxRow({ bizKey: 'order-3:paid', type: 'order.sent' });
      await publish(tables, pending, otherType, sent);
      await dataSource.query(`UPDATE "${OUTBOX_TABLE}" SET status = 'DONE' WHERE message_id = ?`, [sent.messageId]);

      expect(await dataSource.transaction((m) => tables.outbox.cancel(m, 'order-3:paid', 'order.shipped'))).toBe(1);
      await expect(
        dataSource.transaction(async (m) => {
          expect(await tables.outbox.cancel(m, 'order-3:paid', undefined)).toBe(1);
          throw new Error('rolled back');
        }),
      ).rejects.toThrow('rolled back');
      expect((await outboxState(dataSource, pending.messageId))!.status).toBe(PENDING);
      expect(await dataSource.transaction((m) => tables.outbox.cancel(m, 'order-3:paid', undefined))).toBe(1);

      expect((await outboxState(dataSource, pending.messageId))!.status).toBe(ABANDONED);
      expect((await outboxState(dataSource, otherType.messageId))!.status).toBe(ABANDONED);
      expect((await outboxState(dataSource, sent.messageId))!.status).toBe(DONE);
      expect((await tables.outbox.findMessage(dataSource, { messageId: pending.messageId }))!.processedAt).toBeInstanceOf(Date);
    });
  });

  describe('claims and fenced settles', () => {
    it('claims due rows oldest first, once, with what the transport needs', async () => {
      const rows = [outboxRow({ payload: '{"n":1}' }), outboxRow({ payload: '{"n":2}' }), outboxRow({ payload: '{"n":3}' })];
      await publish(tables, ...rows);
      const firstToken = token();
      const first = await tables.outbox.claim(dataSource, 2, firstToken, 'instance-a');
      expect(first.map((m) => m.messageId)).toEqual([rows[0].messageId, rows[1].messageId]);
      expect(first[0]).toEqual({
        id: expect.any(String),
        claimToken: firstToken,
        messageId: rows[0].messageId,
        type: 'test.event',
        transport: 'default',
        exchange: 'test',
        routingKey: 'test.event',
        destination: '',
        payload: '{"n":1}',
        headers: { h: 'v' },
        attempts: 0,
        maxAttempts: 3,
        orderingKey: null,
        bizKey: null,
        createdAt: expect.any(Date),
      });
      expect(Number(first[0].id)).toBeLessThan(Number(first[1].id));
      expect(await outboxState(dataSource, rows[0].messageId)).toMatchObject({ status: PROCESSING, claim_token: firstToken, claimed_by: 'instance-a' });

      const second = await tables.outbox.claim(dataSource, 10, token(), 'instance-b');
      expect(second.map((m) => m.messageId)).toEqual([rows[2].messageId]);
      expect(await tables.outbox.claim(dataSource, 10, token(), 'instance-b')).toEqual([]);
    });

    it('settles only claims still held by their token', async () => {
      const rows = [outboxRow(), outboxRow(), outboxRow()];
      await publish(tables, ...rows);
      const claimToken = token();
      const [a, b, c] = await tables.outbox.claim(dataSource, 10, claimToken, 'me');

      expect(await tables.outbox.settleDone(dataSource, [{ id: a.id, claimToken: token() }])).toBe(0);
      expect(await tables.outbox.settleDone(dataSource, [a, { id: b.id, claimToken: token() }])).toBe(1);
      expect(await tables.outbox.settleDone(dataSource, [a])).toBe(0);
      expect(await outboxState(dataSource, a.messageId)).toMatchObject({ status: DONE, claim_token: null, last_error: null });
      expect((await outboxState(dataSource, a.messageId))!.processed_at).toMatch(/^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3}$/);

      const failures = [failure(b, FAILED, 60_000, 'broker down'), failure(c, MANUAL_REQUIRED, 0, 'fatal')];
      expect(await tables.outbox.settleFailed(dataSource, [{ ...failures[0], claimToken: token() }])).toBe(0);
      expect(await tables.outbox.settleFailed(dataSource, failures)).toBe(2);
      expect(await tables.outbox.settleFailed(dataSource, failures)).toBe(0);
      const failed = (await outboxState(dataSource, b.messageId))!;
      expect(failed).toMatchObject({ status: FAILED, attempts: 1, last_error: 'broker down', claim_token: null, claimed_at: null, claimed_by: null });
      const delayed = Date.parse(`${failed.next_attempt_at.replace(' ', 'T')}Z`) - Date.now();
      expect(delayed).toBeGreaterThan(55_000);
      expect(delayed).toBeLessThan(65_000);
      expect(await outboxState(dataSource, c.messageId)).toMatchObject({ status: MANUAL_REQUIRED, attempts: 1, last_error: 'fatal' });

      // Not due before its backoff; due once it passed.
      expect(await tables.outbox.claim(dataSource, 10, token(), 'me')).toEqual([]);
      await makeDue(OUTBOX_TABLE);
      expect((await tables.outbox.claim(dataSource, 10, token(), 'me')).map((m) => [m.messageId, m.attempts])).toEqual([[b.messageId, 1]]);
    });

    it('releases claims unattempted: PENDING, or FAILED after failed attempts', async () => {
      const rows = [outboxRow(), outboxRow()];
      await publish(tables, ...rows);
      const [fresh, retried] = await tables.outbox.claim(dataSource, 10, token(), 'me');
      await tables.outbox.settleFailed(dataSource, [failure(retried, FAILED, 0, 'once')]);
      const [again] = await tables.outbox.claim(dataSource, 10, token(), 'me');
      expect(again.messageId).toBe(retried.messageId);

      expect(await tables.outbox.release(dataSource, [{ id: fresh.id, claimToken: token() }])).toBe(0);
      expect(await tables.outbox.release(dataSource, [fresh, again])).toBe(2);
      expect(await outboxState(dataSource, fresh.messageId)).toMatchObject({ status: PENDING, attempts: 0, claim_token: null, claimed_by: null });
      expect(await outboxState(dataSource, retried.messageId)).toMatchObject({ status: FAILED, attempts: 1, claim_token: null });
      expect(await tables.outbox.claim(dataSource, 10, token(), 'me')).toHaveLength(2);
    });

    it('finds expired claims, counts the backlog, and fences a reclaimed claimant', async () => {
      await publish(tables, outboxRow(), outboxRow(), outboxRow());
      const [old] = await tables.outbox.claim(dataSource, 1, token(), 'slow-instance');
      expect(await tables.outbox.findExpiredClaims(dataSource, 60_000, 10)).toEqual([]);
      expect(await tables.outbox.healthCounts(dataSource, 60_000)).toEqual({ backlog: 2, staleProcessing: 0 });

      await ageClaims(OUTBOX_TABLE, 120_000);
      const expired = await tables.outbox.findExpiredClaims(dataSource, 60_000, 10);
      expect(expired).toEqual([
        { id: old.id, claimToken: old.claimToken, attempts: 0, maxAttempts: 3, orderingKey: null, claimedBy: 'slow-instance', lastError: null },
      ]);
      expect(await tables.outbox.healthCounts(dataSource, 60_000)).toEqual({ backlog: 2, staleProcessing: 1 });

      // The stuck detector's reclaim is a failed attempt under the expired token.
      expect(await tables.outbox.settleFailed(dataSource, [failure(expired[0], FAILED, 0, 'claim expired')])).toBe(1);
      const reclaimed = await tables.outbox.claim(dataSource, 10, token(), 'healthy-instance');
      expect(reclaimed[0]).toMatchObject({ id: old.id, attempts: 1 });
      expect(await tables.outbox.settleDone(dataSource, [old])).toBe(0);
      expect(await tables.outbox.release(dataSource, [old])).toBe(0);
      expect(await tables.outbox.settleDone(dataSource, [reclaimed[0]])).toBe(1);
    });

    it('settles large batches in one statement each', async () => {
      const rows = Array.from({ length: 20_000 }, () => outboxRow());
      await publish(tables, ...rows);
      const claimed = await tables.outbox.claim(dataSource, 20_000, token(), 'me');
      expect(claimed).toHaveLength(20_000);
      const failed = claimed.slice(0, 10_000).map((c) => failure(c, FAILED, 1_000, 'e'));
      expect(await tables.outbox.settleFailed(dataSource, failed)).toBe(10_000);
      expect(await tables.outbox.settleDone(dataSource, claimed.slice(10_000))).toBe(10_000);
    });

    it('deletes finished rows past retention, oldest first, in bounded batches', async () => {
      const rows = [outboxRow(), outboxRow(), outboxRow(), outboxRow()];
      await publish(tables, ...rows);
      const claimed = await tables.outbox.claim(dataSource, 3, token(), 'me');
      await tables.outbox.settleDone(dataSource, claimed.slice(0, 2));
      await dataSource.query(`UPDATE "${OUTBOX_TABLE}" SET status = 'ABANDONED', processed_at = strftime('%Y-%m-%d %H:%M:%f', 'now') WHERE message_id = ?`, [
        rows[3].messageId,
      ]);

      expect(await tables.outbox.deleteFinished(dataSource, 60_000, 10)).toBe(0);
      await dataSource.query(`UPDATE "${OUTBOX_TABLE}" SET processed_at = strftime('%Y-%m-%d %H:%M:%f', 'now', '-120 seconds') WHERE processed_at IS NOT NULL`);
      expect(await tables.outbox.deleteFinished(dataSource, 60_000, 2)).toBe(2);
      expect(await outboxState(dataSource, rows[0].messageId)).toBeUndefined();
      expect(await tables.outbox.deleteFinished(dataSource, 60_000, 10)).toBe(1);
      expect(await outboxState(dataSource, rows[2].messageId)).toMatchObject({ status: PROCESSING });
    });
  });

  describe('per-key ordering', () => {
    it('claims the rows of a key one at a time, in id order', async () => {
      const [a1, a2, a3] = [1, 2, 3].map((n) => outboxRow({ orderingKey: 'a', payload: `{"a":${n}}` }));
      const b1 = outboxRow({ orderingKey: 'b' });
      const free = outboxRow();
      await publish(tables, a1, a2, b1, a3, free);

      const first = await tables.outbox.claim(dataSource, 10, token(), 'me');
      expect(first.map((m) => m.messageId)).toEqual([a1.messageId, b1.messageId, free.messageId]);
      expect(first[0].orderingKey).toBe('a');
      expect(await tables.outbox.claim(dataSource, 10, token(), 'me')).toEqual([]);

      // A failed head still holds its key back.
      await tables.outbox.settleFailed(dataSource, [failure(first[0], FAILED, 0, 'retry')]);
      const retried = await tables.outbox.claim(dataSource, 10, token(), 'me');
      expect(retried.map((m) => m.messageId)).toEqual([a1.messageId]);

      await tables.outbox.settleDone(dataSource, retried);
      expect((await tables.outbox.claim(dataSource, 10, token(), 'me')).map((m) => m.messageId)).toEqual([a2.messageId]);
    });

    it('parks a key behind a MANUAL_REQUIRED head until an operator requeues or abandons it', async () => {
      const [a1, a2, a3] = [1, 2, 3].map(() => outboxRow({ orderingKey: 'a' }));
      const [b1, b2] = [1, 2].map(() => outboxRow({ orderingKey: 'b' }));
      await publish(tables, a1, a2, a3, b1, b2);
      const heads = await tables.outbox.claim(dataSource, 10, token(), 'me');
      await tables.outbox.settleFailed(
        dataSource,
        heads.map((h) => failure(h, MANUAL_REQUIRED, 0, `gave up on ${h.orderingKey}`)),
      );
      expect(await tables.outbox.claim(dataSource, 10, token(), 'me')).toEqual([]);

      const parked = await tables.outbox.findParkedKeys(dataSource, 10);
      expect(parked).toEqual([
        {
          orderingKey: 'a',
          consumer: null,
          messageId: a1.messageId,
          type: 'test.event',
          transport: 'default',
          attempts: 1,
          lastError: 'gave up on a',
          waiting: 2,
        },
        {
          orderingKey: 'b',
          consumer: null,
          messageId: b1.messageId,
          type: 'test.event',
          transport: 'default',
          attempts: 1,
          lastError: 'gave up on b',
          waiting: 1,
        },
      ]);
      expect(await tables.outbox.findParkedKeys(dataSource, 1)).toHaveLength(1);

      expect(await tables.outbox.requeue(dataSource, { messageId: a1.messageId })).toBe(true);
      expect(await tables.outbox.requeue(dataSource, { messageId: a1.messageId })).toBe(false);
      expect(await outboxState(dataSource, a1.messageId)).toMatchObject({ status: PENDING, attempts: 0 });
      expect(await tables.outbox.abandon(dataSource, { messageId: b1.messageId })).toBe(true);
      expect(await tables.outbox.abandon(dataSource, { messageId: b1.messageId })).toBe(false);
      expect(await tables.outbox.findParkedKeys(dataSource, 10)).toEqual([]);

      const released = await tables.outbox.claim(dataSource, 10, token(), 'me');
      expect(released.map((m) => m.messageId)).toEqual([a1.messageId, b2.messageId]);
      expect(await tables.outbox.abandon(dataSource, { messageId: a1.messageId })).toBe(false); // PROCESSING: left alone
    });
  });

  describe('inbox', () => {
    it('acquires a delivery once per consumer, by message id and by (type, bizKey)', async () => {
      const row = inboxRow({ bizKey: 'order-1:paid' });
      const acquire = (r = row) => dataSource.transaction((m) => tables.inbox.acquire(m, r));
      const first = await acquire();
      expect(first).toEqual({ kind: 'process', id: expect.any(String) });
      expect(await acquire()).toEqual({ kind: 'duplicate', status: DONE });
      expect(await acquire(inboxRow({ bizKey: 'order-1:paid' }))).toEqual({ kind: 'duplicate', status: DONE });
      expect(await acquire({ ...row, consumer: 'consumer-b' })).toEqual({ kind: 'process', id: expect.any(String) });
      expect((await inboxState('consumer-a', row.messageId)).processed_at).not.toBeNull();

      // A rolled-back handler leaves nothing behind.
      const rolledBack = inboxRow();
      await expect(
        dataSource.transaction(async (m) => {
          await tables.inbox.acquire(m, rolledBack);
          throw new Error('handler failed');
        }),
      ).rejects.toThrow('handler failed');
      expect(await inboxState('consumer-a', rolledBack.messageId)).toBeUndefined();
    });

    it('records failed attempts outside the handler transaction, up to MANUAL_REQUIRED', async () => {
      const row = inboxRow({ maxAttempts: 3 });
      expect(await tables.inbox.recordFailure(dataSource, row, 'boom 1', false)).toEqual({ status: FAILED, attempts: 1 });
      expect(await tables.inbox.recordFailure(dataSource, row, 'boom 2', false)).toEqual({ status: FAILED, attempts: 2 });
      // The redelivery after failures is processed, and marks the row DONE.
      const acquired = await dataSource.transaction((m) => tables.inbox.acquire(m, row));
      expect(acquired.kind).toBe('process');
      expect(await inboxState('consumer-a', row.messageId)).toMatchObject({ status: DONE, attempts: 2, last_error: null });
      // Handled meanwhile: a late failure record changes nothing.
      expect(await tables.inbox.recordFailure(dataSource, row, 'late', false)).toBeUndefined();

      const exhausted = inboxRow({ maxAttempts: 2 });
      await tables.inbox.recordFailure(dataSource, exhausted, 'boom', false);
      expect(await tables.inbox.recordFailure(dataSource, exhausted, 'boom again', false)).toEqual({ status: MANUAL_REQUIRED, attempts: 2 });
      expect(await tables.inbox.recordFailure(dataSource, inboxRow(), 'fatal', true)).toEqual({ status: MANUAL_REQUIRED, attempts: 1 });
      expect(await tables.inbox.recordFailure(dataSource, inboxRow({ maxAttempts: 1 }), 'once', false)).toEqual({ status: MANUAL_REQUIRED, attempts: 1 });
      expect(await dataSource.transaction((m) => tables.inbox.acquire(m, exhausted))).toEqual({ kind: 'duplicate', status: MANUAL_REQUIRED });

      // Another message id with a (type, bizKey) already stored is a duplicate, not an error.
      await tables.inbox.recordFailure(dataSource, inboxRow({ bizKey: 'biz-1' }), 'boom', false);
      expect(await tables.inbox.recordFailure(dataSource, inboxRow({ bizKey: 'biz-1' }), 'boom', false)).toBeUndefined();
    });

    it('stores deferred deliveries once and claims them per consumer and key', async () => {
      const a1 = inboxRow({ orderingKey: 'k' });
      const a2 = inboxRow({ orderingKey: 'k' });
      const b1 = inboxRow({ consumer: 'consumer-b', orderingKey: 'k', headers: '{"x":1}' });
      const other = inboxRow({ consumer: 'consumer-c' });
      expect(await tables.inbox.insertPending(dataSource, a1)).toBe(true);
      expect(await tables.inbox.insertPending(dataSource, a1)).toBe(false);
      for (const row of [a2, b1, other]) await tables.inbox.insertPending(dataSource, row);

      const claimToken = token();
      const claimed = await tables.inbox.claim(dataSource, ['consumer-a', 'consumer-b'], 10, claimToken, 'me');
      expect(claimed.map((m) => [m.consumer, m.messageId])).toEqual([
        ['consumer-a', a1.messageId],
        ['consumer-b', b1.messageId],
      ]);
      expect(claimed[1]).toEqual({
        id: expect.any(String),
        claimToken,
        consumer: 'consumer-b',
        messageId: b1.messageId,
        type: 'test.event',
        exchange: 'test',
        routingKey: 'test.event',
        payload: '{"n":1}',
        headers: { x: 1 },
        attempts: 0,
        maxAttempts: 3,
        orderingKey: 'k',
      });

      // Settled in the handler's transaction: rolled back with it, committed with it.
      await expect(
        dataSource.transaction(async (m) => {
          expect(await tables.inbox.settleDone(m, [claimed[0]])).toBe(1);
          throw new Error('handler failed');
        }),
      ).rejects.toThrow('handler failed');
      expect(await inboxState('consumer-a', a1.messageId)).toMatchObject({ status: PROCESSING });
      expect(await dataSource.transaction((m) => tables.inbox.settleDone(m, [claimed[0]]))).toBe(1);
      expect((await tables.inbox.claim(dataSource, ['consumer-a'], 10, token(), 'me')).map((m) => m.messageId)).toEqual([a2.messageId]);
    });

    it('parks, requeues and abandons per consumer', async () => {
      const a1 = inboxRow({ orderingKey: 'k' });
      const a2 = inboxRow({ orderingKey: 'k' });
      const b1 = inboxRow({ consumer: 'consumer-b', orderingKey: 'k' });
      for (const row of [a1, a2, b1]) await tables.inbox.insertPending(dataSource, row);
      const claimed = await tables.inbox.claim(dataSource, ['consumer-a', 'consumer-b'], 10, token(), 'me');
      await tables.inbox.settleFailed(dataSource, [failure(claimed[0], MANUAL_REQUIRED, 0, 'bad')]);
      await tables.inbox.settleDone(dataSource, [claimed[1]]);

      expect(await tables.inbox.findParkedKeys(dataSource, 10)).toEqual([
        { orderingKey: 'k', consumer: 'consumer-a', messageId: a1.messageId, type: 'test.event', transport: null, attempts: 1, lastError: 'bad', waiting: 1 },
      ]);
      expect(await tables.inbox.requeue(dataSource, { consumer: 'consumer-b', messageId: a1.messageId })).toBe(false);
      expect(await tables.inbox.abandon(dataSource, { consumer: 'consumer-a', messageId: a1.messageId })).toBe(true);
      expect((await tables.inbox.claim(dataSource, ['consumer-a'], 10, token(), 'me')).map((m) => m.messageId)).toEqual([a2.messageId]);

      await ageClaims(INBOX_TABLE, 120_000);
      expect((await tables.inbox.findExpiredClaims(dataSource, 60_000, 10)).map((c) => c.orderingKey)).toEqual(['k']);
      expect(await tables.inbox.healthCounts(dataSource, 60_000)).toEqual({ backlog: 0, staleProcessing: 1 });
    });
  });

  describe('schema', () => {
    const schemaOf = async (ds: DataSource) =>
      ds.query(`SELECT type, name, tbl_name, sql FROM sqlite_master WHERE tbl_name IN (?, ?) ORDER BY type, name`, [OUTBOX_TABLE, INBOX_TABLE]);

    it('is the same from the migrations and from start-up creation, which is idempotent', async () => {
      const migrated = await openSqlite(databases.newFile(), {
        synchronize: false,
        migrations: [createOutboxTableMigration(OUTBOX_TABLE), createInboxTableMigration(INBOX_TABLE), createOutboxTableV2Migration(OUTBOX_TABLE)],
      });
      try {
        await migrated.runMigrations();
        const dialect = await resolveDialect(dataSource);
        await createTablesAtStartup(dataSource, dialect, { outbox: OUTBOX_TABLE, inbox: INBOX_TABLE });
        const created = await schemaOf(dataSource);
        expect(await schemaOf(migrated)).toEqual(created);
        expect(created.map((o: { name: string }) => o.name)).toEqual(
          expect.arrayContaining([
            `IDX_${OUTBOX_TABLE}_lane`,
            `IDX_${OUTBOX_TABLE}_processing`,
            `IDX_${OUTBOX_TABLE}_ordering`,
            `UQ_${INBOX_TABLE}_consumer_biz_key`,
            OUTBOX_TABLE,
            INBOX_TABLE,
          ]),
        );
        const outboxSql = created.find((o: { name: string }) => o.name === OUTBOX_TABLE).sql as string;
        expect(outboxSql).toContain(`CONSTRAINT "PK_${OUTBOX_TABLE}" PRIMARY KEY ("id" AUTOINCREMENT)`);
        expect(outboxSql).toContain(`CONSTRAINT "UQ_${OUTBOX_TABLE}_type_biz_key" UNIQUE ("biz_key", "message_type")`);

        // The upgrade cannot be reverted; the creating migrations can.
        await expect(migrated.undoLastMigration()).rejects.toThrow(/cannot be reverted/);
        const createdOnly = await openSqlite(databases.newFile(), {
          synchronize: false,
          migrations: [createOutboxTableMigration(OUTBOX_TABLE), createInboxTableMigration(INBOX_TABLE)],
        });
        try {
          await createdOnly.runMigrations();
          await createdOnly.undoLastMigration();
          expect((await schemaOf(createdOnly)).map((o: { name: string }) => o.name)).not.toContain(INBOX_TABLE);
        } finally {
          await createdOnly.destroy();
        }
      } finally {
        await migrated.destroy();
      }
    });

    it('claims through the partial indexes', async () => {
      const table = qualifiedTable(dataSource, OUTBOX_TABLE);
      const plan = async (sql: string) => (await dataSource.query<{ detail: string }[]>(`EXPLAIN QUERY PLAN ${sql}`)).map((r) => r.detail).join('\n');
      expect(await plan(`SELECT c.id FROM ${table} AS c WHERE c.transport = 'default' AND c.status IN ('PENDING', 'FAILED') ORDER BY c.id LIMIT 10`)).toContain(
        `IDX_${OUTBOX_TABLE}_lane`,
      );
      expect(
        await plan(
          `SELECT 1 FROM ${table} AS e WHERE e.ordering_key = 'k' AND e.id < 5 AND e.status IN ('PENDING', 'PROCESSING', 'FAILED', 'MANUAL_REQUIRED')`,
        ),
      ).toContain(`IDX_${OUTBOX_TABLE}_ordering`);
      expect(await plan(`SELECT id FROM ${table} WHERE status = 'PROCESSING' AND claim_token = 'x'`)).toContain(`IDX_${OUTBOX_TABLE}_processing`);
    });
  });

  it('waits for the backoff from the database clock, not the process clock', async () => {
    await publish(tables, outboxRow());
    const [claimed] = await tables.outbox.claim(dataSource, 1, token(), 'me');
    // A backoff long enough that no pause of a loaded machine between the settle and the next
    // claim outlasts it.
    await tables.outbox.settleFailed(dataSource, [failure(claimed, FAILED, 1_000, 'later')]);
    expect(await tables.outbox.claim(dataSource, 1, token(), 'me')).toEqual([]);
    await sleep(1_100); // the backoff passes
    expect(await tables.outbox.claim(dataSource, 1, token(), 'me')).toHaveLength(1);
  });
});
