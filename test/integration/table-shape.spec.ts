import { INestApplicationContext } from '@nestjs/common';
import { DatabaseKind, DATABASE_KIND, TestDatabase, testDatabase } from '../support/database';
import { createTestApp } from '../support/test-app';
import { STARTUP_TIMEOUT_MS, timeoutFor } from '../support/wait';

const db = testDatabase('it_table_shape');

const STATE_COLUMNS = [
  'status',
  'attempts',
  'max_attempts',
  'next_attempt_at',
  'claimed_at',
  'claim_token',
  'claimed_by',
  'last_error',
  'created_at',
  'processed_at',
];
const EXPECTED = {
  outbox_message: {
    // Version 1's columns, then what version 2 added.
    columns: [
      'id',
      'message_id',
      'message_type',
      'biz_key',
      'ordering_key',
      'exchange',
      'routing_key',
      'payload',
      'headers',
      ...STATE_COLUMNS,
      'transport',
      'destination',
    ],
    // PostgreSQL keeps version 1's claim index beside the lane index (see postgresOutboxV2Ddl).
    keys: [
      ...(DATABASE_KIND === 'postgres' ? ['IDX_outbox_message_claimable'] : []),
      'IDX_outbox_message_lane',
      'IDX_outbox_message_ordering',
      'IDX_outbox_message_processing',
      'PK_outbox_message',
      'UQ_outbox_message_message_id',
      'UQ_outbox_message_type_biz_key',
    ],
  },
  inbox_message: {
    columns: ['id', 'consumer', 'message_id', 'message_type', 'biz_key', 'ordering_key', 'exchange', 'routing_key', 'payload', 'headers', ...STATE_COLUMNS],
    keys: [
      'IDX_inbox_message_claimable',
      'IDX_inbox_message_ordering',
      'IDX_inbox_message_processing',
      'PK_inbox_message',
      'UQ_inbox_message_consumer_biz_key',
      'UQ_inbox_message_consumer_message_id',
    ],
  },
};

/** Column names in order, and the names of keys and indexes, read from each database's catalog. */
const catalogs: Record<DatabaseKind, (database: TestDatabase, table: string) => Promise<{ columns: string[]; keys: string[] }>> = {
  async postgres(database, table) {
    const columns = await database.sql(
      `SELECT column_name AS name FROM information_schema.columns WHERE table_schema = ? AND table_name = ? ORDER BY ordinal_position`,
      [database.name, table],
    );
    const keys = await database.sql(`SELECT indexname AS name FROM pg_indexes WHERE schemaname = ? AND tablename = ?`, [database.name, table]);
    return { columns: columns.map((c) => c.name), keys: keys.map((k) => k.name) };
  },
  async mariadb(database, table) {
    const columns = await database.sql(
      `SELECT column_name AS name FROM information_schema.columns WHERE table_schema = ? AND table_name = ? ORDER BY ordinal_position`,
      [database.name, table],
    );
    const keys = await database.sql(`SELECT DISTINCT index_name AS name FROM information_schema.statistics WHERE table_schema = ? AND table_name = ?`, [
      database.name,
      table,
    ]);
    // MySQL names every primary key PRIMARY.
    return { columns: columns.map((c) => c.name), keys: keys.map((k) => (k.name === 'PRIMARY' ? `PK_${table}` : k.name)) };
  },
  mysql: (database, table) => catalogs.mariadb(database, table),
  async sqlite(database, table) {
    const columns = await database.sql(`SELECT name FROM pragma_table_info(?) ORDER BY cid`, [table]);
    const indexes = await database.sql(`SELECT name, sql FROM sqlite_master WHERE type IN ('table', 'index') AND tbl_name = ?`, [table]);
    // Named constraints live in the table's SQL; their indexes are sqlite_autoindex_*.
    const constraints = [...String(indexes.find((i) => i.name === table)?.sql).matchAll(/CONSTRAINT "(\w+)"/g)].map((m) => m[1]);
    const named = indexes.filter((i) => i.name !== table && !i.name.startsWith('sqlite_autoindex_')).map((i) => i.name);
    return { columns: columns.map((c) => c.name), keys: [...constraints, ...named] };
  },
};

describe(`The library's tables on ${DATABASE_KIND}`, () => {
  let app: INestApplicationContext;

  beforeAll(async () => {
    await db.reset();
    app = await createTestApp({ database: db, outbox: { dispatcherEnabled: false, notifyEnabled: false } });
  }, timeoutFor(STARTUP_TIMEOUT_MS));

  afterAll(() => app?.close());

  it.each(Object.keys(EXPECTED) as (keyof typeof EXPECTED)[])('%s has the same columns, keys and indexes as on every other database', async (table) => {
    const shape = await catalogs[db.kind](db, table);
    // Version 4 on MySQL and MariaDB, which have no partial indexes: the ordering index is on a
    // generated column, and the lane index, leading with the status, finds PROCESSING rows.
    const keysOnMysql = (keys: string[]) => [...keys.filter((key) => key !== 'IDX_outbox_message_processing'), 'IDX_outbox_message_unfinished'].sort();
    const expected =
      table === 'outbox_message' && (db.kind === 'mariadb' || db.kind === 'mysql')
        ? { columns: [...EXPECTED[table].columns, 'unfinished_ordering_key'], keys: keysOnMysql(EXPECTED[table].keys) }
        : EXPECTED[table];
    expect({ columns: shape.columns, keys: [...shape.keys].sort() }).toEqual(expected);
  });
});
