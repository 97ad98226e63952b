import { DataSource } from 'typeorm';
import { createInboxTableMigration, createOutboxTableMigration, createOutboxTableV2Migration, OUTBOX_MIGRATIONS } from '../../lib';
import { describeOn, freshSchema, namespaced, sql } from '../support/database';
import { POSTGRES_URL } from '../support/environment';
import { createTestApp } from '../support/test-app';
import { STARTUP_TIMEOUT_MS, timeoutFor } from '../support/wait';

// Named with TEST_NAMESPACE_PREFIX, as createTestApp({ schema }) names the schema it opens.
const MIGRATED = namespaced('it_schema_migrated');
const SYNCHRONIZED = namespaced('it_schema_synchronized');

async function migrate(schema: string, migrations: Function[]): Promise<void> {
  const dataSource = new DataSource({ type: 'postgres', url: POSTGRES_URL, schema, migrations });
  await dataSource.initialize();
  try {
    await dataSource.runMigrations();
  } finally {
    await dataSource.destroy();
  }
}

/** Columns and index definitions of a table, with the schema name taken out. */
async function shape(schema: string, table: string) {
  const columns = await sql(
    `SELECT column_name, data_type, character_maximum_length, is_nullable, column_default
     FROM information_schema.columns WHERE table_schema = $1 AND table_name = $2 ORDER BY ordinal_position`,
    [schema, table],
  );
  const indexes = await sql<{ indexname: string; indexdef: string }>(
    `SELECT indexname, indexdef FROM pg_indexes WHERE schemaname = $1 AND tablename = $2 ORDER BY indexname`,
    [schema, table],
  );
  const unqualified = (text: unknown) => (typeof text === 'string' ? text.split(`${schema}.`).join('') : text);
  return {
    columns: columns.map((c) => ({ ...c, column_default: unqualified(c.column_default) })),
    indexes: indexes.map((i) => ({ name: i.indexname, def: unqualified(i.indexdef) })),
  };
}

describeOn(['postgres'], 'Table migrations (PostgreSQL: compares information_schema and pg_indexes)', () => {
  beforeAll(async () => {
    await freshSchema(MIGRATED);
    await freshSchema(SYNCHRONIZED);
  });

  it(
    'create the same tables as start-up creation under synchronize',
    async () => {
      await migrate(MIGRATED, OUTBOX_MIGRATIONS);
      const app = await createTestApp({ schema: SYNCHRONIZED, outbox: { dispatcherEnabled: false, notifyEnabled: false } });
      await app.close();
      for (const table of ['outbox_message', 'inbox_message']) {
        expect(await shape(MIGRATED, table)).toEqual(await shape(SYNCHRONIZED, table));
      }
    },
    timeoutFor(STARTUP_TIMEOUT_MS),
  );

  it(
    'start-up creation leaves existing tables as they are',
    async () => {
      const before = await shape(SYNCHRONIZED, 'outbox_message');
      const app = await createTestApp({ schema: SYNCHRONIZED, outbox: { dispatcherEnabled: false, notifyEnabled: false } });
      await app.close();
      expect(await shape(SYNCHRONIZED, 'outbox_message')).toEqual(before);
    },
    timeoutFor(STARTUP_TIMEOUT_MS),
  );

  it('creates a custom-named table with its own index names', async () => {
    await migrate(MIGRATED, [
      createOutboxTableMigration('billing_outbox'),
      createInboxTableMigration('billing_inbox'),
      createOutboxTableV2Migration('billing_outbox'),
    ]);
    const { indexes } = await shape(MIGRATED, 'billing_outbox');
    expect(indexes.map((i) => i.name)).toEqual([
      'IDX_billing_outbox_claimable',
      'IDX_billing_outbox_lane',
      'IDX_billing_outbox_ordering',
      'IDX_billing_outbox_processing',
      'PK_billing_outbox',
      'UQ_billing_outbox_message_id',
      'UQ_billing_outbox_type_biz_key',
    ]);
    // The claim indexes cover only claimable rows, so retained history does not slow claims; the
    // lane index has one range per transport.
    expect(indexes[0].def).toMatch(/\(id\) WHERE \(\(status\)::text = ANY/);
    expect(indexes[1].def).toMatch(/\(transport, id\) WHERE \(\(status\)::text = ANY/);
  });

  it('claims through a claim index, not the primary key, with statistics taken while the backlog was all claimable', async () => {
    const schema = namespaced('it_schema_stale_stats');
    await freshSchema(schema);
    await migrate(schema, OUTBOX_MIGRATIONS);
    const table = `"${schema}".outbox_message`;
    await sql(
      `INSERT INTO ${table} (message_id, message_type, exchange, routing_key, payload, headers, status, max_attempts)
       SELECT gen_random_uuid(), 't', 'e', 'r', json_build_object('blob', repeat('x', 500)), '{}', 'PENDING', 5 FROM generate_series(1, 20000)`,
    );
    await sql(`ANALYZE ${table}`);
    // Half of the backlog sent since: the statistics still say every row is claimable.
    await sql(`UPDATE ${table} SET status = 'DONE' WHERE id <= 10000`);
    const plan = (
      await sql<{ 'QUERY PLAN': string }>(
        `EXPLAIN SELECT c.id FROM ${table} AS c
       WHERE c.transport = 'default' AND c.status IN ('PENDING', 'FAILED') AND c.next_attempt_at <= now()
       ORDER BY c.id LIMIT 500 FOR UPDATE OF c SKIP LOCKED`,
      )
    )
      .map((row) => row['QUERY PLAN'])
      .join('\n');
    expect(plan).toMatch(/Index Scan using "IDX_outbox_message_(claimable|lane)"/);
    expect(plan).not.toContain('PK_outbox_message');
  });
});
