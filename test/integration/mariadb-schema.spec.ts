import { DataSource } from 'typeorm';
import { claimableOfStatus } from '../../lib/dialects/mysql/mysql-claim';
import { CLAIMABLE_STATUSES } from '../../lib/message/message-status';
import { mysqlTable } from '../../lib/dialects/mysql/mysql-sql';
import { newestPendingSql } from '../../lib/dialects/mysql/mysql-pending-watch';
import { outboxLaneClaimTarget } from '../../lib/dialects/mysql/mysql-outbox.dialect';
import { resolveDialect } from '../../lib/dialects/resolve-dialect';
import { createOutboxTableMigration, OUTBOX_MIGRATIONS } from '../../lib/schema/table-migrations';
import { createTablesAtStartup } from '../../lib/schema/create-tables-at-startup';
import { describeOnMysql, dropDatabase, openMariadb, openSession, OUTBOX_TABLE, INBOX_TABLE, recreateDatabase, SERVER } from './mariadb-test-database';

const MIGRATED = 'it_mariadb_schema_migrated';
const SYNCHRONIZED = 'it_mariadb_schema_synchronized';

/** The MySQL/MariaDB tables: one DDL for migrations and start-up creation, and indexes the claims use. */
describeOnMysql(`${SERVER.name} schema`, () => {
  let migrated: DataSource;
  let synchronized: DataSource;

  beforeAll(async () => {
    await Promise.all([recreateDatabase(MIGRATED), recreateDatabase(SYNCHRONIZED)]);
    migrated = await openMariadb(MIGRATED, {
      synchronize: false,
      migrations: OUTBOX_MIGRATIONS,
    });
    await migrated.runMigrations();
    synchronized = await openMariadb(SYNCHRONIZED);
    await createTablesAtStartup(synchronized, await resolveDialect(synchronized), { outbox: OUTBOX_TABLE, inbox: INBOX_TABLE });
  });

  afterAll(async () => {
    await migrated?.destroy();
    await synchronized?.destroy();
    await Promise.all([dropDatabase(MIGRATED), dropDatabase(SYNCHRONIZED)]);
  });

  const showCreate = async (dataSource: DataSource, table: string): Promise<string> =>
    ((await dataSource.query(`SHOW CREATE TABLE \`${table}\``))[0]['Create Table'] as string).replace(/ AUTO_INCREMENT=\d+/, '');

  it('makes the same tables through the migrations and through start-up creation', async () => {
    for (const table of [OUTBOX_TABLE, INBOX_TABLE]) {
      expect(await showCreate(synchronized, table)).toBe(await showCreate(migrated, table));
    }
  });

  it('creates at start-up idempotently: a second run changes nothing', async () => {
    const before = await Promise.all([showCreate(synchronized, OUTBOX_TABLE), showCreate(synchronized, INBOX_TABLE)]);
    await createTablesAtStartup(synchronized, await resolveDialect(synchronized), { outbox: OUTBOX_TABLE, inbox: INBOX_TABLE });
    expect(await Promise.all([showCreate(synchronized, OUTBOX_TABLE), showCreate(synchronized, INBOX_TABLE)])).toEqual(before);
  });

  it('names indexes and unique keys as on PostgreSQL, in InnoDB with a binary utf8mb4 collation', async () => {
    const keys = async (table: string) =>
      [...new Set((await migrated.query<{ Key_name: string }[]>(`SHOW INDEX FROM \`${table}\``)).map((r) => r.Key_name))].sort();
    expect(await keys(OUTBOX_TABLE)).toEqual(
      [
        'PRIMARY',
        'IDX_outbox_message_lane',
        'IDX_outbox_message_ordering',
        'IDX_outbox_message_unfinished',
        'UQ_outbox_message_message_id',
        'UQ_outbox_message_type_biz_key',
      ].sort(),
    );
    expect(await keys(INBOX_TABLE)).toEqual(
      [
        'PRIMARY',
        'IDX_inbox_message_claimable',
        'IDX_inbox_message_ordering',
        'IDX_inbox_message_processing',
        'UQ_inbox_message_consumer_biz_key',
        'UQ_inbox_message_consumer_message_id',
      ].sort(),
    );
    const outbox = await showCreate(migrated, OUTBOX_TABLE);
    expect(outbox).toMatch(/ENGINE=InnoDB/);
    expect(outbox).toMatch(/CHARSET=utf8mb4 COLLATE=utf8mb4_(nopad_bin|0900_bin|bin)/);
    expect(outbox).toMatch(/`next_attempt_at` datetime\(6\) NOT NULL/);
  });

  it('drops the tables in the migrations down', async () => {
    const scratch = 'it_mariadb_schema_down';
    await recreateDatabase(scratch);
    const dataSource = await openMariadb(scratch, { synchronize: false, migrations: [createOutboxTableMigration('down_outbox')] });
    try {
      await dataSource.runMigrations();
      expect(await dataSource.query(`SHOW TABLES LIKE 'down_outbox'`)).toHaveLength(1);
      await dataSource.undoLastMigration();
      expect(await dataSource.query(`SHOW TABLES LIKE 'down_outbox'`)).toHaveLength(0);
    } finally {
      await dataSource.destroy();
      await dropDatabase(scratch);
    }
  });

  it('claims through the claim and ordering indexes, reading few index entries past retained history', async () => {
    // 30 000 DONE rows, a third of them in one hot ordering key, then 300 due rows.
    const session = await openSession(MIGRATED);
    try {
      const rows = (count: number, status: string) => `
        INSERT INTO \`${OUTBOX_TABLE}\` (message_id, message_type, ordering_key, exchange, routing_key, payload, headers, status, max_attempts, next_attempt_at, created_at, processed_at)
        WITH d (v) AS (SELECT 0 UNION ALL SELECT 1 UNION ALL SELECT 2 UNION ALL SELECT 3 UNION ALL SELECT 4
                       UNION ALL SELECT 5 UNION ALL SELECT 6 UNION ALL SELECT 7 UNION ALL SELECT 8 UNION ALL SELECT 9),
             n (i) AS (SELECT a.v + 10 * b.v + 100 * c.v + 1000 * e.v + 10000 * f.v FROM d a, d b, d c, d e, d f)
        SELECT UUID(), 't', CASE WHEN i % 3 = 0 THEN 'hot' WHEN i % 2 = 0 THEN CONCAT('k', i % 500) END, 'x', 'y', '{}', '{}', '${status}', 5,
               UTC_TIMESTAMP(6), UTC_TIMESTAMP(6), ${status === 'DONE' ? 'UTC_TIMESTAMP(6)' : 'NULL'}
        FROM n WHERE i < ${count} ORDER BY i`;
      await session.query(rows(30_000, 'DONE'));
      await session.query(rows(300, 'PENDING'));
      await session.query(`ANALYZE TABLE \`${OUTBOX_TABLE}\``);
      // As the default transport's lane claims with SKIP LOCKED: one locking read per claimable status.
      const lane = outboxLaneClaimTarget(mysqlTable(`\`${OUTBOX_TABLE}\``, true), 'default');
      const statements = CLAIMABLE_STATUSES.map((status) => claimableOfStatus(lane, status, lane.columns, 50, 'FOR UPDATE SKIP LOCKED'));

      for (const statement of statements) {
        const [plan] = await session.query(`EXPLAIN ${statement.sql}`, statement.params);
        const claimScans = (plan as { table: string; key: string; Extra: string }[]).filter((step) => step.table === 'c');
        expect(claimScans.map((step) => step.key)).toEqual(['IDX_outbox_message_lane']);
        for (const step of claimScans) expect(step.Extra).not.toMatch(/filesort/);
      }

      await session.query('FLUSH STATUS');
      let found = 0;
      for (const statement of statements) found += ((await session.query(statement.sql, statement.params))[0] as unknown[]).length;
      expect(found).toBe(50);
      const [status] = await session.query(`SHOW SESSION STATUS WHERE Variable_name IN ('Handler_read_next', 'Handler_read_key')`);
      const reads = (status as { Value: string }[]).reduce((sum, row) => sum + Number(row.Value), 0);
      expect(reads).toBeLessThan(2_000);
    } finally {
      await session.query(`DELETE FROM \`${OUTBOX_TABLE}\``);
      await session.end();
    }
  });

  it('finds PROCESSING rows and the newest PENDING row of each lane without reading retained history (no processing index)', async () => {
    // 30 000 DONE rows, 300 PENDING and 100 PROCESSING rows claimed an hour ago, in two transports.
    const session = await openSession(MIGRATED);
    try {
      const rows = (count: number, status: string) => `
        INSERT INTO \`${OUTBOX_TABLE}\` (message_id, message_type, exchange, routing_key, payload, headers, status, max_attempts, next_attempt_at,
                                         created_at, processed_at, claimed_at, claim_token, transport)
        WITH d (v) AS (SELECT 0 UNION ALL SELECT 1 UNION ALL SELECT 2 UNION ALL SELECT 3 UNION ALL SELECT 4
                       UNION ALL SELECT 5 UNION ALL SELECT 6 UNION ALL SELECT 7 UNION ALL SELECT 8 UNION ALL SELECT 9),
             n (i) AS (SELECT a.v + 10 * b.v + 100 * c.v + 1000 * e.v + 10000 * f.v FROM d a, d b, d c, d e, d f)
        SELECT UUID(), 't', 'x', 'y', '{}', '{}', '${status}', 5, UTC_TIMESTAMP(6), UTC_TIMESTAMP(6),
               ${status === 'DONE' ? 'UTC_TIMESTAMP(6)' : 'NULL'}, UTC_TIMESTAMP(6) - INTERVAL 1 HOUR,
               ${status === 'PROCESSING' ? "'old-claim'" : 'NULL'}, IF(i % 2 = 0, 'default', 'partners')
        FROM n WHERE i < ${count} ORDER BY i`;
      await session.query(rows(30_000, 'DONE'));
      await session.query(rows(300, 'PENDING'));
      await session.query(rows(100, 'PROCESSING'));
      await session.query(`ANALYZE TABLE \`${OUTBOX_TABLE}\``);
      const indexReads = async (sql: string): Promise<number> => {
        await session.query('FLUSH STATUS');
        await session.query(sql);
        const [status] = await session.query(`SHOW SESSION STATUS WHERE Variable_name IN ('Handler_read_next', 'Handler_read_key', 'Handler_read_rnd_next')`);
        return (status as { Value: string }[]).reduce((sum, row) => sum + Number(row.Value), 0);
      };

      // The pending watch, every 50 ms: one jump per transport, not one read per PENDING row.
      const watch = newestPendingSql(mysqlTable(`\`${OUTBOX_TABLE}\``, true));
      const [newest] = await session.query(watch);
      expect((newest as { transport: string }[]).map((row) => row.transport).sort()).toEqual(['default', 'partners']);
      expect(await indexReads(watch)).toBeLessThan(50);

      // The stuck detector's, the health check's and a give-back's reads of PROCESSING rows, on one
      // connection, whose session counters tell what each read.
      const single = await openMariadb(MIGRATED, { synchronize: false, extra: { connectionLimit: 1 } });
      try {
        const outbox = (await resolveDialect(single)).outbox(`\`${OUTBOX_TABLE}\``, 4);
        const readsOf = async (work: () => Promise<unknown>): Promise<number> => {
          await single.query('FLUSH STATUS');
          await work();
          const status = await single.query(`SHOW SESSION STATUS WHERE Variable_name IN ('Handler_read_next', 'Handler_read_key', 'Handler_read_rnd_next')`);
          return (status as { Value: string }[]).reduce((sum, row) => sum + Number(row.Value), 0);
        };
        let expired: unknown[] = [];
        expect(await readsOf(async () => (expired = await outbox.findExpiredClaims(single, 60_000, 500)))).toBeLessThan(1_000);
        expect(expired).toHaveLength(100);
        let stale = -1;
        expect(await readsOf(async () => (stale = (await outbox.healthCounts(single, 60_000)).staleProcessing))).toBeLessThan(1_000);
        expect(stale).toBe(100);
        expect(await readsOf(() => outbox.releaseClaim(single, 'old-claim'))).toBeLessThan(1_000);
        const [left] = await session.query(`SELECT count(*) AS n FROM \`${OUTBOX_TABLE}\` WHERE status = 'PROCESSING'`);
        expect(Number((left as { n: number }[])[0].n)).toBe(0);
      } finally {
        await single.destroy();
      }
    } finally {
      await session.query(`DELETE FROM \`${OUTBOX_TABLE}\``);
      await session.end();
    }
  });
});
