import { INestApplicationContext } from '@nestjs/common';
import fc from 'fast-check';
import { randomUUID } from 'node:crypto';
import { createArchiveTablesMigration, MessageStatus, OUTBOX_MIGRATIONS } from '../../lib';
import { OutboxAdmin, Retention } from '../../lib/entries/admin';
import { StateTable } from '../../lib/engine/state-table';
import { OutboxSchemaError } from '../../lib/errors';
import { INBOX_DIALECT, OUTBOX_DIALECT } from '../../lib/naming/injection-tokens';
import { TABLE_COLUMNS } from '../../lib/schema/table-columns';
import { DatabaseKind, TestDatabase, testDatabase } from '../support/database';
import { toBoolean } from '../support/sql-values';
import { createTestApp } from '../support/test-app';
import { STARTUP_TIMEOUT_MS, timeoutFor } from '../support/wait';

const database = testDatabase('it_retention_archive');
/** Tables made by migrations, without `synchronize`. */
const migrated = testDatabase('it_retention_archive_migrated');
const DAY = 86_400_000;
const BATCH = 3;
const TABLES = ['outbox_message', 'inbox_message'] as const;
type Table = (typeof TABLES)[number];
const KIND = { outbox_message: 'outbox', inbox_message: 'inbox' } as const;
const archiveOf = (table: Table) => `${table}_archive`;
const STATUSES = Object.values(MessageStatus);
const ARCHIVE_OPTIONS = { dispatcherEnabled: false, notifyEnabled: false, retentionBatchSize: BATCH, retentionMs: DAY, retentionMode: 'archive' } as const;

/** Rows with a value in every column that has one, so that a column lost on the way shows. */
async function seed(
  db: TestDatabase,
  table: Table,
  status: string,
  ageDays: number,
  count: number,
  options: { type?: string; ordered?: boolean } = {},
): Promise<string[]> {
  const processed = db.timeAgo(ageDays * DAY);
  const messageIds: string[] = [];
  for (let i = 0; i < count; i++) {
    const messageId = randomUUID();
    const identity: Record<string, unknown> =
      table === 'outbox_message'
        ? { message_id: messageId, message_type: options.type ?? 't', transport: 'lane', destination: 'https://example.test/hook' }
        : { message_id: messageId, consumer: 'billing' };
    const values = {
      ...identity,
      biz_key: `biz-${messageId}`,
      ordering_key: options.ordered === false ? null : `key-${i % 2}`,
      status,
      claim_token: randomUUID(),
    };
    await db.sql(
      `INSERT INTO {${table}} (${Object.keys(values).join(', ')}, exchange, routing_key, payload, headers, attempts, max_attempts, claimed_by, last_error, processed_at, claimed_at)
       VALUES (${Object.keys(values)
         .map(() => '?')
         .join(', ')}, 'x', 'k', '{"n":1}', '{"h":"v"}', 2, 5, 'host:1', 'boom', ${processed}, ${processed})`,
      Object.values(values),
    );
    messageIds.push(messageId);
  }
  return messageIds;
}

/** Every column of the table's rows (those of `messageIds`, or all), in id order. */
async function rowsOf(db: TestDatabase, table: string, kind: 'outbox' | 'inbox', messageIds?: string[]): Promise<Record<string, unknown>[]> {
  const where = messageIds ? 'WHERE message_id IN (?)' : '';
  if (messageIds?.length === 0) return [];
  return db.sql(`SELECT ${TABLE_COLUMNS[kind].join(', ')} FROM {${table}} ${where} ORDER BY id`, messageIds ? [messageIds] : []);
}

const count = async (db: TestDatabase, table: string) => Number((await db.sql(`SELECT count(*) AS n FROM {${table}}`))[0].n);

async function clear(db: TestDatabase): Promise<void> {
  for (const table of TABLES) {
    await db.sql(`DELETE FROM {${table}}`);
    await db.sql(`DELETE FROM {${archiveOf(table)}}`);
  }
}

/** Column names, types and nullability in order, and index names, from each database's catalog. */
const catalogs: Record<DatabaseKind, (db: TestDatabase, table: string) => Promise<{ columns: string[]; indexes: string[] }>> = {
  async postgres(db, table) {
    const columns = await db.sql(
      `SELECT column_name AS name, data_type AS type, is_nullable AS nullable FROM information_schema.columns WHERE table_schema = ? AND table_name = ? ORDER BY ordinal_position`,
      [db.name, table],
    );
    const indexes = await db.sql(`SELECT indexname AS name FROM pg_indexes WHERE schemaname = ? AND tablename = ?`, [db.name, table]);
    return { columns: columns.map((c) => `${c.name} ${c.type} ${c.nullable}`), indexes: indexes.map((i) => i.name).sort() };
  },
  async mariadb(db, table) {
    const columns = await db.sql(
      `SELECT column_name AS name, column_type AS type, is_nullable AS nullable FROM information_schema.columns WHERE table_schema = ? AND table_name = ? ORDER BY ordinal_position`,
      [db.name, table],
    );
    const indexes = await db.sql(`SELECT DISTINCT index_name AS name FROM information_schema.statistics WHERE table_schema = ? AND table_name = ?`, [
      db.name,
      table,
    ]);
    return { columns: columns.map((c) => `${c.name} ${c.type} ${c.nullable}`), indexes: indexes.map((i) => i.name).sort() };
  },
  mysql: (db, table) => catalogs.mariadb(db, table),
  async sqlite(db, table) {
    const columns = await db.sql(`SELECT name, type, "notnull" AS nullable FROM pragma_table_info(?) ORDER BY cid`, [table]);
    const indexes = await db.sql(`SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = ?`, [table]);
    return { columns: columns.map((c) => `${c.name} ${c.type} ${c.nullable}`), indexes: indexes.map((i) => i.name).sort() };
  },
};

describe(`Retention in archive mode on ${database.kind}`, () => {
  let app: INestApplicationContext;

  beforeAll(async () => {
    await database.reset();
    app = await createTestApp({ database, outbox: ARCHIVE_OPTIONS });
  }, timeoutFor(STARTUP_TIMEOUT_MS));

  afterAll(() => app?.close());

  beforeEach(() => clear(database));

  const remaining = async (table: Table) =>
    (await database.sql(`SELECT status, processed_at < ${database.timeAgo(DAY)} AS old, count(*) AS n FROM {${table}} GROUP BY 1, 2 ORDER BY 1, 2`)).map(
      (row) => ({ status: row.status, old: toBoolean(row.old), n: Number(row.n) }),
    );

  it('moves only DONE and ABANDONED rows older than the TTL, every column kept, in bounded batches; a second run moves nothing', async () => {
    const moving: Record<Table, string[]> = { outbox_message: [], inbox_message: [] };
    for (const table of TABLES) {
      moving[table].push(...(await seed(database, table, 'DONE', 10, 7)), ...(await seed(database, table, 'ABANDONED', 10, 2)));
      await seed(database, table, 'DONE', 0, 2); // recent: inside the dedupe window
      for (const status of ['MANUAL_REQUIRED', 'FAILED', 'PROCESSING', 'PENDING']) await seed(database, table, status, 10, 1);
    }
    const before = {
      outbox_message: await rowsOf(database, 'outbox_message', 'outbox', moving.outbox_message),
      inbox_message: await rowsOf(database, 'inbox_message', 'inbox', moving.inbox_message),
    };
    const batches = recordArchiveBatches();

    expect(await app.get(Retention).purge()).toEqual({ outbox: 9, inbox: 9 });

    // 9 old rows in batches of 3: three full batches, then one that finds nothing left; each
    // reported exactly the rows the table lost and the archive gained.
    expect(batches).toEqual([
      ...[3, 3, 3, 0].map((n) => ({ table: 'outbox_message', reported: n, removed: n, archived: n })),
      ...[3, 3, 3, 0].map((n) => ({ table: 'inbox_message', reported: n, removed: n, archived: n })),
    ]);
    for (const table of TABLES) {
      expect(await remaining(table)).toEqual([
        { status: 'DONE', old: false, n: 2 },
        { status: 'FAILED', old: true, n: 1 },
        { status: 'MANUAL_REQUIRED', old: true, n: 1 },
        { status: 'PENDING', old: true, n: 1 },
        { status: 'PROCESSING', old: true, n: 1 },
      ]);
      expect(await rowsOf(database, archiveOf(table), KIND[table])).toEqual(before[table]);
      const [stamps] = await database.sql(`SELECT count(DISTINCT archive_id) AS ids, count(archived_at) AS stamped FROM {${archiveOf(table)}}`);
      expect({ ids: Number(stamps.ids), stamped: Number(stamps.stamped) }).toEqual({ ids: 9, stamped: 9 });
    }

    jest.restoreAllMocks();
    expect(await app.get(Retention).purge()).toEqual({ outbox: 0, inbox: 0 });
    for (const table of TABLES) expect(await count(database, archiveOf(table))).toBe(9);
  });

  it('archives again an id the archive already holds, as a second archive row', async () => {
    for (const table of TABLES) await seed(database, table, 'DONE', 10, 1);
    expect(await app.get(Retention).purge()).toEqual({ outbox: 1, inbox: 1 });
    for (const table of TABLES) {
      // Copied back under the same id (as an operator restores a row to run it again), and finished again.
      const columns = TABLE_COLUMNS[KIND[table]].join(', ');
      await database.sql(`INSERT INTO {${table}} (${columns}) SELECT ${columns} FROM {${archiveOf(table)}}`);
    }
    expect(await app.get(Retention).purge()).toEqual({ outbox: 1, inbox: 1 });
    for (const table of TABLES) {
      const [ids] = await database.sql(`SELECT count(*) AS n, count(DISTINCT id) AS ids FROM {${archiveOf(table)}}`);
      expect({ rows: Number(ids.n), ids: Number(ids.ids), left: await count(database, table) }).toEqual({ rows: 2, ids: 1, left: 0 });
    }
  });

  it('neither archives a row a replay makes PENDING meanwhile nor loses one, whichever comes first', async () => {
    const messageIds = await seed(database, 'outbox_message', 'DONE', 10, 30, { type: 'replayed', ordered: false });
    const [, replayed] = await Promise.all([app.get(Retention).purge(), app.get(OutboxAdmin).replayMessages({ type: 'replayed' }, { batchSize: 2 })]);
    const left = await database.sql(`SELECT message_id, status FROM {outbox_message} WHERE message_id IN (?)`, [messageIds]);
    const archived = await database.sql(`SELECT message_id, status FROM {outbox_message_archive} WHERE message_id IN (?)`, [messageIds]);
    // Each message in one place: in the table, replayed; or in the archive, as it was finished.
    expect([...left, ...archived].map((row) => row.message_id).sort()).toEqual([...messageIds].sort());
    expect(left.every((row) => row.status === 'PENDING')).toBe(true);
    expect(archived.every((row) => row.status === 'DONE')).toBe(true);
    expect(left.length).toBe(replayed);
  });

  it('moves exactly the finished old rows of any mix of statuses and ages', async () => {
    const row = fc.record({ table: fc.constantFrom(...TABLES), status: fc.constantFrom(...STATUSES), old: fc.boolean() });
    await fc.assert(
      fc.asyncProperty(fc.array(row, { maxLength: 10 }), async (rows) => {
        await clear(database);
        const expected: Record<Table, { moved: string[]; kept: string[] }> = {
          outbox_message: { moved: [], kept: [] },
          inbox_message: { moved: [], kept: [] },
        };
        for (const { table, status, old } of rows) {
          const [messageId] = await seed(database, table, status, old ? 2 : 0, 1);
          const finished = status === MessageStatus.DONE || status === MessageStatus.ABANDONED;
          expected[table][finished && old ? 'moved' : 'kept'].push(messageId);
        }
        const counts = await app.get(Retention).purge();
        for (const table of TABLES) {
          const ids = async (name: string) => (await database.sql(`SELECT message_id FROM {${name}}`)).map((r) => r.message_id).sort();
          expect(counts[KIND[table]]).toBe(expected[table].moved.length);
          expect(await ids(archiveOf(table))).toEqual([...expected[table].moved].sort());
          expect(await ids(table)).toEqual([...expected[table].kept].sort());
        }
      }),
      { numRuns: 8 },
    );
  }, 120_000);

  describe('without synchronize', () => {
    beforeAll(() => migrated.reset());

    it(
      'refuses to start without the archive tables, naming the migration to run',
      async () => {
        const started = createTestApp({
          database: migrated,
          dataSource: { synchronize: false, migrations: OUTBOX_MIGRATIONS, migrationsRun: true },
          outbox: ARCHIVE_OPTIONS,
        });
        await expect(started).rejects.toBeInstanceOf(OutboxSchemaError);
        await expect(started).rejects.toThrow(
          `retentionMode is 'archive' but the archive table "outbox_message_archive" of the outbox table (tableName) does not exist: create it with createArchiveTablesMigration({ tableName: "outbox_message", inboxTableName: "inbox_message" })`,
        );
        await expect(started).rejects.toThrow(/the archive table "inbox_message_archive" of the inbox table \(inboxTableName\) does not exist/);
      },
      timeoutFor(STARTUP_TIMEOUT_MS),
    );

    it(
      'starts once createArchiveTablesMigration has run, whose tables are those start-up creates',
      async () => {
        const migrations = [...OUTBOX_MIGRATIONS, createArchiveTablesMigration()];
        const migratedApp = await createTestApp({
          database: migrated,
          dataSource: { synchronize: false, migrations, migrationsRun: true },
          outbox: ARCHIVE_OPTIONS,
        });
        try {
          for (const table of TABLES) {
            const archive = archiveOf(table);
            const shape = await catalogs[migrated.kind](migrated, archive);
            expect(shape.columns.map((column) => column.split(' ')[0])).toEqual(['archive_id', ...TABLE_COLUMNS[KIND[table]], 'archived_at']);
            expect(shape).toEqual(await catalogs[database.kind](database, archive));
          }
          await seed(migrated, 'inbox_message', 'ABANDONED', 10, 1);
          expect(await migratedApp.get(Retention).purge()).toEqual({ outbox: 0, inbox: 1 });
        } finally {
          await migratedApp.close();
        }
      },
      timeoutFor(STARTUP_TIMEOUT_MS),
    );
  });

  /** Records each archive batch: the count it reported, the rows the table lost and the archive gained meanwhile. */
  function recordArchiveBatches(): { table: Table; reported: number; removed: number; archived: number }[] {
    const batches: { table: Table; reported: number; removed: number; archived: number }[] = [];
    for (const [table, token] of [
      ['outbox_message', OUTBOX_DIALECT],
      ['inbox_message', INBOX_DIALECT],
    ] as const) {
      const dialect = app.get<StateTable>(token);
      const archiveFinished = dialect.archiveFinished.bind(dialect);
      jest.spyOn(dialect, 'archiveFinished').mockImplementation(async (...args) => {
        const before = { table: await count(database, table), archive: await count(database, archiveOf(table)) };
        const reported = await archiveFinished(...args);
        batches.push({
          table,
          reported,
          removed: before.table - (await count(database, table)),
          archived: (await count(database, archiveOf(table))) - before.archive,
        });
        return reported;
      });
    }
    return batches;
  }
});
