import Database from 'better-sqlite3';
import { ChildProcessWithoutNullStreams, spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { DataSource } from 'typeorm';
import { ClaimedMessage } from '../../lib/dialects/outbox-dialect';
import { OutboxMessageState } from '../../lib/engine/message-views';
import { qualifiedTable, resolveDialect } from '../../lib/dialects/resolve-dialect';
import { MessageStatus } from '../../lib/message/message-status';
import { STARTUP_TIMEOUT_MS, timeoutFor, WAIT_TIMEOUT_MS } from '../support/wait';
import { newDatabaseForEachTest } from './sqlite-database-per-test';
import { describeSqlite, DialectTables, INBOX_TABLE, outboxRow, outboxState, OUTBOX_TABLE, publish, sleep, watch } from './sqlite-dialect-fixture';

const { PENDING, PROCESSING, DONE } = MessageStatus;

/**
 * TypeORM runs a better-sqlite3 DataSource on one connection. These tests hold the library to
 * what PostgreSQL gives it for free: its statements run outside the application's open
 * transactions, its own transactions do not nest, and claimants in several processes sharing
 * the file never take a row twice.
 */
describeSqlite('SQLite: one connection, several processes', () => {
  let tables: DialectTables;
  let dataSource: DataSource;
  const databases = newDatabaseForEachTest((opened) => {
    tables = opened;
    dataSource = opened.dataSource;
  });

  const token = () => randomUUID();

  // The sleeps below give a waiting statement time to try again (its polls back off from 2 ms to
  // 50 ms) while a transaction is open or the file is locked: they let it slip in if it could,
  // and never hold it back, so a slow machine makes fewer tries but cannot fail these checks.
  describe('statements outside the application transaction', () => {
    it('never claims a row of a transaction still open, nor one rolled back', async () => {
      const runner = dataSource.createQueryRunner();
      await runner.startTransaction();
      const ghost = outboxRow();
      await tables.outbox.insert(runner.manager, ghost);
      const claim = watch(tables.outbox.claim(dataSource, 10, token(), 'dispatcher'));
      await sleep(100);
      // The application goes on in its transaction; the claim does not slip in between.
      await runner.query(`SELECT count(*) FROM "${OUTBOX_TABLE}"`);
      await sleep(50);
      expect(claim.settled).toBe(false);
      expect(await tables.outbox.findMessage(runner.manager, { messageId: ghost.messageId })).toMatchObject({ status: PENDING });

      await runner.rollbackTransaction();
      expect(await claim.promise).toEqual([]);
      expect(await outboxState(dataSource, ghost.messageId)).toBeUndefined();
    });

    it('claims the row as soon as its transaction commits', async () => {
      const row = outboxRow();
      let claim!: ReturnType<typeof watch<ClaimedMessage[]>>;
      await dataSource.transaction(async (manager) => {
        await tables.outbox.insert(manager, row);
        claim = watch(tables.outbox.claim(dataSource, 10, token(), 'dispatcher'));
        await sleep(100);
        expect(claim.settled).toBe(false);
      });
      // Resumed by the commit itself, not by a later poll: settled within this turn of the event
      // loop, whatever the machine's speed. A poll is a timer, which only a later turn runs (short
      // of one falling due in this very turn).
      await new Promise((resolve) => setImmediate(resolve));
      expect(claim.settled).toBe(true);
      expect((await claim.promise).map((m) => m.messageId)).toEqual([row.messageId]);
    });

    it('keeps a claim and a settle issued during an application transaction that rolls back', async () => {
      const [committed, settled] = [outboxRow(), outboxRow()];
      await publish(tables, committed, settled);
      const [toSettle] = await tables.outbox.claim(dataSource, 1, token(), 'dispatcher');
      expect(toSettle.messageId).toBe(committed.messageId);

      const runner = dataSource.createQueryRunner();
      await runner.startTransaction();
      await tables.outbox.insert(runner.manager, outboxRow());
      const claimToken = token();
      const claim = watch(tables.outbox.claim(dataSource, 10, claimToken, 'dispatcher'));
      const settle = watch(tables.outbox.settleDone(dataSource, [toSettle]));
      await sleep(50);
      await runner.rollbackTransaction();

      expect((await claim.promise).map((m) => m.messageId)).toEqual([settled.messageId]);
      expect(await settle.promise).toBe(1);
      expect(await outboxState(dataSource, settled.messageId)).toMatchObject({ status: PROCESSING, claim_token: claimToken });
      expect(await outboxState(dataSource, committed.messageId)).toMatchObject({ status: DONE });
    });

    it('waits for the outermost commit, not a released savepoint', async () => {
      const runner = dataSource.createQueryRunner();
      await runner.startTransaction();
      await runner.startTransaction();
      await tables.outbox.insert(runner.manager, outboxRow());
      const claim = watch(tables.outbox.claim(dataSource, 10, token(), 'dispatcher'));
      await runner.commitTransaction();
      await sleep(50);
      expect(claim.settled).toBe(false);
      await runner.commitTransaction();
      expect(await claim.promise).toHaveLength(1);
    });

    it('reads committed state through the DataSource, and its own writes through the transaction', async () => {
      const row = outboxRow();
      let read!: ReturnType<typeof watch<OutboxMessageState | null>>;
      await expect(
        dataSource.transaction(async (manager) => {
          await tables.outbox.insert(manager, row);
          expect(await tables.outbox.findMessage(manager, { messageId: row.messageId })).toMatchObject({ status: PENDING });
          read = watch(tables.outbox.findMessage(dataSource, { messageId: row.messageId }));
          await sleep(20);
          expect(read.settled).toBe(false);
          throw new Error('rolled back');
        }),
      ).rejects.toThrow('rolled back');
      expect(await read.promise).toBeNull();
    });

    it('tries again while another connection holds the file past the busy timeout', async () => {
      await dataSource.destroy();
      await databases.openAnother({ timeout: 20 });
      await publish(tables, outboxRow());

      const other = new Database(dataSource.options.database as string, { timeout: 20 });
      try {
        other.prepare('BEGIN IMMEDIATE').run();
        const claim = watch(tables.outbox.claim(dataSource, 10, token(), 'dispatcher'));
        await sleep(200);
        expect(claim.settled).toBe(false);
        other.prepare('COMMIT').run();
        expect(await claim.promise).toHaveLength(1);
      } finally {
        other.close();
      }
    });
  });

  describe('the library transactions', () => {
    it('run one at a time, each committing or rolling back on its own', async () => {
      const events: string[] = [];
      const rows = { a: outboxRow(), b: outboxRow(), c: outboxRow() };
      const transaction = (name: keyof typeof rows, fail: boolean) => () =>
        dataSource.transaction(async (manager) => {
          events.push(`${name} begins`);
          await tables.outbox.insert(manager, rows[name]);
          await sleep(30);
          events.push(`${name} ends`);
          if (fail) throw new Error(`${name} failed`);
        });
      // Dialects resolved separately for one DataSource share its one gate.
      const another = await resolveDialect(dataSource);
      const anotherInbox = another.inbox(qualifiedTable(dataSource, INBOX_TABLE));
      const outcomes = await Promise.allSettled([
        tables.inbox.runTransactionsOneAtATime!(transaction('a', true)),
        anotherInbox.runTransactionsOneAtATime!(transaction('b', false)),
        tables.dialect.runTransactionsOneAtATime!(transaction('c', false)),
      ]);

      expect(events).toEqual(['a begins', 'a ends', 'b begins', 'b ends', 'c begins', 'c ends']);
      expect(outcomes.map((o) => o.status)).toEqual(['rejected', 'fulfilled', 'fulfilled']);
      expect(await outboxState(dataSource, rows.a.messageId)).toBeUndefined();
      expect(await outboxState(dataSource, rows.b.messageId)).toMatchObject({ status: PENDING });
      expect(await outboxState(dataSource, rows.c.messageId)).toMatchObject({ status: PENDING });
    });
  });

  describe('claimants in several processes', () => {
    const ROWS = 3_000;
    const BATCH = 25;
    /** Sending takes a while: claimants take turns at the file's write lock, as real dispatchers do. */
    const SEND_MS = 2;

    /** A claimant process: claims and settles batches on the shared file until none is left. */
    function claimantProcess(file: string): ChildProcessWithoutNullStreams {
      const helper = join(__dirname, 'sqlite-dialect-fixture');
      const script = `
        const { randomUUID } = require('node:crypto');
        const { openWithTables } = require(${JSON.stringify(helper)});
        (async () => {
          const tables = await openWithTables(${JSON.stringify(file)});
          console.log('READY');
          await new Promise((go) => process.stdin.once('data', go));
          const ids = [];
          for (let idle = 0; idle < 3; ) {
            const batch = await tables.outbox.claim(tables.dataSource, ${BATCH}, randomUUID(), 'process-' + process.pid);
            if (batch.length === 0) { idle++; await new Promise((r) => setTimeout(r, 20)); continue; }
            idle = 0;
            ids.push(...batch.map((m) => m.id));
            await new Promise((r) => setTimeout(r, ${SEND_MS}));
            await tables.outbox.settleDone(tables.dataSource, batch);
          }
          console.log('CLAIMED ' + JSON.stringify(ids));
          await tables.dataSource.destroy();
        })().catch((error) => { console.error(error); process.exit(1); });`;
      return spawn(process.execPath, ['-r', 'ts-node/register/transpile-only', '-e', script], {
        cwd: join(__dirname, '..', '..'),
        env: { ...process.env, TS_NODE_PROJECT: join(__dirname, '..', '..', 'tsconfig.json') },
      });
    }

    /**
     * Resolves to the line starting with `prefix` (without it), or rejects when the process ends
     * first or `timeoutMs` passes.
     */
    function lineOf(child: ChildProcessWithoutNullStreams, prefix: string, timeoutMs: number): Promise<string> {
      return new Promise((resolve, reject) => {
        let stderr = '';
        const timer = setTimeout(() => reject(new Error(`claimant did not print ${prefix.trim()} within ${timeoutMs} ms: ${stderr}`)), timeoutMs);
        child.stderr.on('data', (chunk) => (stderr += chunk));
        createInterface({ input: child.stdout }).on('line', (line) => {
          if (!line.startsWith(prefix)) return;
          clearTimeout(timer);
          resolve(line.slice(prefix.length));
        });
        child.on('exit', (code) => {
          clearTimeout(timer);
          reject(new Error(`claimant exited (${code}) before ${prefix.trim()}: ${stderr}`));
        });
      });
    }

    it(
      'claim every row exactly once',
      async () => {
        const file = dataSource.options.database as string;
        for (let i = 0; i < ROWS; i += 500) await publish(tables, ...Array.from({ length: Math.min(500, ROWS - i) }, () => outboxRow()));
        const children = [claimantProcess(file), claimantProcess(file)];
        try {
          await Promise.all(children.map((child) => lineOf(child, 'READY', STARTUP_TIMEOUT_MS)));
          const results = children.map((child) => lineOf(child, 'CLAIMED ', WAIT_TIMEOUT_MS));
          for (const child of children) child.stdin.write('go\n');

          // This process claims alongside them.
          const mine: string[] = [];
          for (let idle = 0; idle < 3;) {
            const batch = await tables.outbox.claim(dataSource, BATCH, token(), 'parent');
            if (batch.length === 0) {
              idle++;
              await sleep(20);
              continue;
            }
            idle = 0;
            mine.push(...batch.map((m) => m.id));
            await sleep(SEND_MS);
            await tables.outbox.settleDone(dataSource, batch);
          }
          const theirs = (await Promise.all(results)).map((line) => JSON.parse(line) as string[]);

          const all = [mine, ...theirs].flat();
          expect([mine, ...theirs].map((ids) => ids.length > 0)).toEqual([true, true, true]);
          expect(all).toHaveLength(ROWS);
          expect(new Set(all).size).toBe(ROWS);
          const counts = await dataSource.query(`SELECT status, count(*) AS n FROM "${OUTBOX_TABLE}" GROUP BY status`);
          expect(counts).toEqual([{ status: DONE, n: ROWS }]);
        } finally {
          for (const child of children) if (child.exitCode === null) child.kill();
        }
      },
      timeoutFor(STARTUP_TIMEOUT_MS, WAIT_TIMEOUT_MS),
    );
  });
});
