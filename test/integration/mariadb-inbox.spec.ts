import { randomUUID } from 'node:crypto';
import { QueryRunner } from 'typeorm';
import { InboxAcquisition, InboxRow } from '../../lib/dialects/inbox-dialect';
import { ConditionalUpdateClaim } from '../../lib/dialects/mysql/mysql-conditional-claim';
import { MessageStatus } from '../../lib/message/message-status';
import { timeoutFor, WAIT_TIMEOUT_MS, waitUntil } from '../support/wait';
import { describeOnMysql, DialectTables, dropDatabase, inboxRow, INBOX_TABLE, openWithTables, recreateDatabase, SERVER, sleep } from './mariadb-test-database';

const { PROCESSING, DONE, FAILED, MANUAL_REQUIRED, ABANDONED } = MessageStatus;
const DATABASE = 'it_mariadb_inbox';

/** The MySQL/MariaDB dialect's inbox: dedupe under concurrent deliveries, failures, deferred claims. */
describeOnMysql(`${SERVER.name} inbox dialect`, () => {
  let tables: DialectTables;

  beforeAll(async () => {
    await recreateDatabase(DATABASE);
    tables = await openWithTables(DATABASE);
  });

  beforeEach(() => tables.dataSource.query(`DELETE FROM \`${INBOX_TABLE}\``));

  afterAll(async () => {
    await tables?.dataSource.destroy();
    await dropDatabase(DATABASE);
  });

  const stateOf = async (row: InboxRow) =>
    (
      await tables.dataSource.query(`SELECT status, attempts, last_error, processed_at FROM \`${INBOX_TABLE}\` WHERE consumer = ? AND message_id = ?`, [
        row.consumer,
        row.messageId,
      ])
    )[0];
  const acquireCommitted = (row: InboxRow) => tables.dataSource.transaction((manager) => tables.inbox.acquire(manager, row));

  /** Longer than the 100 ms for which the server keeps serving INNODB_TRX from its cache once read. */
  const TRX_CACHE_IDLE_MS = 150;

  /** The server's id of each open transaction's session. */
  const sessionIds = new WeakMap<QueryRunner, number>();

  /** Transactions a test opened and has not ended: a failing test's locks must not fail the next ones. */
  const openRunners = new Set<QueryRunner>();
  afterEach(async () => {
    // Killing the session rolls its transaction back even while a statement in it waits for a lock.
    for (const runner of openRunners) {
      const sessionId = sessionIds.get(runner);
      if (sessionId !== undefined) await tables.dataSource.query('KILL CONNECTION ?', [sessionId]).catch(() => undefined);
      await runner.release();
    }
    openRunners.clear();
  });

  /** A transaction of its own that stays open until the test commits or rolls it back. */
  async function openTransaction(): Promise<QueryRunner> {
    const runner = tables.dataSource.createQueryRunner();
    openRunners.add(runner);
    await runner.startTransaction();
    const [{ id }] = await runner.query('SELECT CONNECTION_ID() AS id');
    sessionIds.set(runner, Number(id));
    return runner;
  }
  async function end(runner: QueryRunner, outcome: 'commit' | 'rollback'): Promise<void> {
    if (outcome === 'commit') await runner.commitTransaction();
    else await runner.rollbackTransaction();
    await runner.release();
    openRunners.delete(runner);
  }
  /**
   * Whether `promise`, a statement running in `runner`'s transaction, is held up by a row lock:
   * true once the server reports that transaction waiting for a lock while the promise is still
   * pending, false if the promise settles first.
   */
  async function heldByLock(runner: QueryRunner, promise: Promise<unknown>): Promise<boolean> {
    let settled = false;
    promise.then(
      () => (settled = true),
      () => (settled = true),
    );
    // INNODB_TRX is served from a cache that the server refreshes only when nobody has read it for
    // 100 ms: polling it faster keeps showing the previous test's transactions.
    const waitingForLock = async () => {
      await sleep(TRX_CACHE_IDLE_MS);
      const rows = await tables.dataSource.query(`SELECT 1 FROM information_schema.INNODB_TRX WHERE trx_mysql_thread_id = ? AND trx_state = 'LOCK WAIT'`, [
        sessionIds.get(runner),
      ]);
      return rows.length > 0;
    };
    await waitUntil(async () => settled || (await waitingForLock()), 'the statement waits for a row lock or ends');
    return !settled;
  }

  describe('transactional acquire', () => {
    it('processes a delivery once per consumer, by message id and by type + bizKey', async () => {
      const row = inboxRow({ bizKey: 'order-1' });
      const first = await acquireCommitted(row);
      expect(first).toEqual({ kind: 'process', id: expect.stringMatching(/^\d+$/) });
      expect(await acquireCommitted({ ...row })).toEqual({ kind: 'duplicate', status: DONE });
      expect(await acquireCommitted({ ...row, messageId: randomUUID() })).toEqual({ kind: 'duplicate', status: DONE });
      expect((await acquireCommitted({ ...row, messageId: randomUUID(), type: 'other.event' })).kind).toBe('process');
      expect((await acquireCommitted({ ...row, consumer: 'Other.handle' })).kind).toBe('process');
      expect(await stateOf(row)).toMatchObject({ status: DONE, attempts: 0 });
    });

    it(
      'makes a concurrent second delivery wait for the first transaction, then see a duplicate',
      async () => {
        const row = inboxRow();
        const first = await openTransaction();
        expect((await tables.inbox.acquire(first.manager, row)).kind).toBe('process');
        const second = await openTransaction();
        const secondAcquire = tables.inbox.acquire(second.manager, { ...row });
        expect(await heldByLock(second, secondAcquire)).toBe(true);
        await end(first, 'commit');
        expect(await secondAcquire).toEqual({ kind: 'duplicate', status: DONE });
        await end(second, 'commit');
      },
      timeoutFor(WAIT_TIMEOUT_MS),
    );

    it(
      'lets the waiting delivery process the message when the first transaction rolls back',
      async () => {
        const row = inboxRow();
        const first = await openTransaction();
        expect((await tables.inbox.acquire(first.manager, row)).kind).toBe('process');
        const second = await openTransaction();
        const secondAcquire = tables.inbox.acquire(second.manager, { ...row });
        expect(await heldByLock(second, secondAcquire)).toBe(true);
        await end(first, 'rollback');
        expect((await secondAcquire).kind).toBe('process');
        await end(second, 'commit');
        expect((await stateOf(row)).status).toBe(DONE);
      },
      timeoutFor(WAIT_TIMEOUT_MS),
    );

    it('takes over a FAILED row in one of two concurrent redeliveries, without a deadlock', async () => {
      const row = inboxRow();
      await tables.inbox.recordFailure(tables.dataSource, row, 'first failure', false);
      await tables.inbox.recordFailure(tables.dataSource, row, 'second failure', false);
      expect(await stateOf(row)).toMatchObject({ status: FAILED, attempts: 2 });

      // Both insert first (each sees the duplicate), then both lock: one waits for the other.
      const [a, b] = [await openTransaction(), await openTransaction()];
      const outcomes = await Promise.all(
        [a, b].map(async (runner) => {
          const acquired = await tables.inbox.acquire(runner.manager, { ...row });
          await sleep(100); // the handler
          await end(runner, 'commit');
          return acquired;
        }),
      );
      expect(outcomes.map((o: InboxAcquisition) => o.kind).sort()).toEqual(['duplicate', 'process']);
      expect(outcomes.find((o) => o.kind === 'duplicate')).toEqual({ kind: 'duplicate', status: DONE });
      expect(await stateOf(row)).toMatchObject({ status: DONE, attempts: 2, last_error: null });
    });

    it('reports a delivery given up earlier as a MANUAL_REQUIRED duplicate', async () => {
      const row = inboxRow();
      await tables.inbox.recordFailure(tables.dataSource, row, 'bad body', true);
      expect(await acquireCommitted({ ...row })).toEqual({ kind: 'duplicate', status: MANUAL_REQUIRED });
    });

    it('refuses a consumer name longer than its column instead of cutting it', async () => {
      await expect(acquireCommitted(inboxRow({ consumer: 'c'.repeat(201) }))).rejects.toThrow(/longer than 200/);
    });
  });

  describe('recordFailure', () => {
    it('counts attempts on the delivery row until MANUAL_REQUIRED', async () => {
      const row = inboxRow({ maxAttempts: 3 });
      expect(await tables.inbox.recordFailure(tables.dataSource, row, 'e1', false)).toEqual({ status: FAILED, attempts: 1 });
      expect(await tables.inbox.recordFailure(tables.dataSource, row, 'e2', false)).toEqual({ status: FAILED, attempts: 2 });
      expect(await tables.inbox.recordFailure(tables.dataSource, row, 'e3', false)).toEqual({ status: MANUAL_REQUIRED, attempts: 3 });
      expect(await tables.inbox.recordFailure(tables.dataSource, row, 'e4', false)).toBeUndefined();
      expect(await stateOf(row)).toMatchObject({ status: MANUAL_REQUIRED, attempts: 3, last_error: 'e3' });
    });

    it('gives up at once on a fatal error or a single-attempt budget', async () => {
      expect(await tables.inbox.recordFailure(tables.dataSource, inboxRow(), 'fatal', true)).toEqual({ status: MANUAL_REQUIRED, attempts: 1 });
      expect(await tables.inbox.recordFailure(tables.dataSource, inboxRow({ maxAttempts: 1 }), 'once', false)).toEqual({
        status: MANUAL_REQUIRED,
        attempts: 1,
      });
      const row = inboxRow();
      await tables.inbox.recordFailure(tables.dataSource, row, 'retryable', false);
      expect(await tables.inbox.recordFailure(tables.dataSource, row, 'fatal', true)).toEqual({ status: MANUAL_REQUIRED, attempts: 2 });
    });

    it('returns undefined for a delivery handled meanwhile, or a duplicate of another row by bizKey', async () => {
      const handled = inboxRow();
      await acquireCommitted(handled);
      expect(await tables.inbox.recordFailure(tables.dataSource, handled, 'late', false)).toBeUndefined();
      expect(await stateOf(handled)).toMatchObject({ status: DONE, attempts: 0, last_error: null });

      const original = inboxRow({ bizKey: 'order-7' });
      await tables.inbox.recordFailure(tables.dataSource, original, 'failed once', false);
      expect(await tables.inbox.recordFailure(tables.dataSource, { ...original, messageId: randomUUID() }, 'copy', false)).toBeUndefined();
      expect(await stateOf(original)).toMatchObject({ status: FAILED, attempts: 1, last_error: 'failed once' });
    });
  });

  describe('deferred mode', () => {
    const claim = (consumers: string[], limit = 100, on: DialectTables = tables) =>
      on.inbox.claim(on.dataSource, consumers, limit, randomUUID(), 'test-instance');

    it('stores a delivery PENDING once, and claims it for its consumers only', async () => {
      const row = inboxRow({ consumer: 'Deferred.a', headers: '{"x-trace":"t1"}', payload: 'not json, as received' });
      expect(await tables.inbox.insertPending(tables.dataSource, row)).toBe(true);
      expect(await tables.inbox.insertPending(tables.dataSource, { ...row })).toBe(false);
      expect(await tables.inbox.insertPending(tables.dataSource, inboxRow({ consumer: 'Deferred.b' }))).toBe(true);
      expect(await claim([])).toEqual([]);
      const claimed = await claim(['Deferred.a']);
      expect(claimed).toEqual([
        expect.objectContaining({
          consumer: 'Deferred.a',
          messageId: row.messageId,
          payload: row.payload,
          headers: { 'x-trace': 't1' },
          attempts: 0,
          maxAttempts: 5,
        }),
      ]);
      expect((await stateOf(row)).status).toBe(PROCESSING);
      expect(await tables.inbox.settleDone(tables.dataSource, claimed)).toBe(1);
      expect((await stateOf(row)).status).toBe(DONE);
      expect((await claim(['Deferred.a', 'Deferred.b'])).map((c) => c.consumer)).toEqual(['Deferred.b']);
    });

    it('orders rows per consumer and key, and parks a key behind a MANUAL_REQUIRED head', async () => {
      const [a1, a2, b1] = [
        inboxRow({ consumer: 'Deferred.a', orderingKey: 'k' }),
        inboxRow({ consumer: 'Deferred.a', orderingKey: 'k' }),
        inboxRow({ consumer: 'Deferred.b', orderingKey: 'k' }),
      ];
      for (const row of [a1, a2, b1]) await tables.inbox.insertPending(tables.dataSource, row);
      const first = await claim(['Deferred.a', 'Deferred.b']);
      expect(first.map((c) => c.messageId)).toEqual([a1.messageId, b1.messageId]);
      await tables.inbox.settleFailed(tables.dataSource, [
        { id: first[0].id, claimToken: first[0].claimToken, status: MANUAL_REQUIRED, delayMs: 0, error: 'poison' },
      ]);
      expect(await claim(['Deferred.a', 'Deferred.b'])).toEqual([]);
      expect(await tables.inbox.findParkedKeys(tables.dataSource, 10)).toEqual([
        {
          orderingKey: 'k',
          consumer: 'Deferred.a',
          messageId: a1.messageId,
          type: 'test.event',
          transport: null,
          attempts: 1,
          lastError: 'poison',
          waiting: 1,
        },
      ]);
      expect(await tables.inbox.requeue(tables.dataSource, { consumer: 'Deferred.b', messageId: a1.messageId })).toBe(false);
      expect(await tables.inbox.abandon(tables.dataSource, { consumer: 'Deferred.a', messageId: a1.messageId })).toBe(true);
      expect((await stateOf(a1)).status).toBe(ABANDONED);
      expect((await claim(['Deferred.a'])).map((c) => c.messageId)).toEqual([a2.messageId]);
    });

    it('requeues a FAILED delivery, due at once, with its attempts reset (FAILED, so a transactional redelivery can take it over too)', async () => {
      const row = inboxRow({ consumer: 'Deferred.a' });
      await tables.inbox.insertPending(tables.dataSource, row);
      const [claimed] = await claim(['Deferred.a']);
      await tables.inbox.settleFailed(tables.dataSource, [{ id: claimed.id, claimToken: claimed.claimToken, status: FAILED, delayMs: 60_000, error: 'later' }]);
      expect(await claim(['Deferred.a'])).toEqual([]);
      expect(await tables.inbox.requeue(tables.dataSource, { consumer: 'Deferred.a', messageId: row.messageId })).toBe(true);
      expect(await stateOf(row)).toMatchObject({ status: FAILED, attempts: 0 });
      expect((await claim(['Deferred.a'])).map((c) => c.messageId)).toEqual([row.messageId]);
    });

    it('claims the same way with the conditional-UPDATE strategy', async () => {
      const cas = await openWithTables(DATABASE, { claimStrategy: new ConditionalUpdateClaim(), dataSource: { synchronize: false } });
      try {
        const [a1, a2, b1] = [
          inboxRow({ consumer: 'Deferred.a', orderingKey: 'k' }),
          inboxRow({ consumer: 'Deferred.a', orderingKey: 'k' }),
          inboxRow({ consumer: 'Deferred.b' }),
        ];
        for (const row of [a1, a2, b1]) await cas.inbox.insertPending(cas.dataSource, row);
        const claimed = await claim(['Deferred.a', 'Deferred.b'], 10, cas);
        expect(claimed.map((c) => c.messageId)).toEqual([a1.messageId, b1.messageId]);
        expect(await cas.inbox.settleDone(cas.dataSource, claimed)).toBe(2);
        expect((await claim(['Deferred.a'], 10, cas)).map((c) => c.messageId)).toEqual([a2.messageId]);
      } finally {
        await cas.dataSource.destroy();
      }
    });
  });
});
