import { DataSource } from 'typeorm';
import { createInboxTableMigration, createOutboxTableMigration, createOutboxTableV2Migration, OUTBOX_MIGRATIONS } from '../../lib';
import { describeOn, freshSchema, sql } from '../support/database';
import { POSTGRES_URL } from '../support/environment';
import { createTestApp } from '../support/test-app';
import { STARTUP_TIMEOUT_MS, timeoutFor } from '../support/wait';

const MIGRATED = 'it_schema_migrated';
const SYNCHRONIZED = 'it_schema_synchronized';

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

  it('create the same tables as start-up creation under synchronize', async () => {
    await migrate(MIGRATED, OUTBOX_MIGRATIONS);
    const app = await createTestApp({ schema: SYNCHRONIZED, outbox: { dispatcherEnabled: false, notifyEnabled: false } });
    await app.close();
    for (const table of ['outbox_message', 'inbox_message']) {
      expect(await shape(MIGRATED, table)).toEqual(await shape(SYNCHRONIZED, table));
    }
  }, timeoutFor(STARTUP_TIMEOUT_MS));

  it('start-up creation leaves existing tables as they are', async () => {
    const before = await shape(SYNCHRONIZED, 'outbox_message');
    const app = await createTestApp({ schema: SYNCHRONIZED, outbox: { dispatcherEnabled: false, notifyEnabled: false } });
    await app.close();
    expect(await shape(SYNCHRONIZED, 'outbox_message')).toEqual(before);
  }, timeoutFor(STARTUP_TIMEOUT_MS));

  it('creates a custom-named table with its own index names', async () => {
    await migrate(MIGRATED, [createOutboxTableMigration('billing_outbox'), createInboxTableMigration('billing_inbox'), createOutboxTableV2Migration('billing_outbox')]);
    const { indexes } = await shape(MIGRATED, 'billing_outbox');
    expect(indexes.map((i) => i.name)).toEqual([
      'IDX_billing_outbox_lane',
      'IDX_billing_outbox_ordering',
      'IDX_billing_outbox_processing',
      'PK_billing_outbox',
      'UQ_billing_outbox_message_id',
      'UQ_billing_outbox_type_biz_key',
    ]);
    // The claim index covers only claimable rows, so retained history does not slow claims; one
    // range of it per transport.
    expect(indexes[0].def).toMatch(/\(transport, id\) WHERE \(\(status\)::text = ANY/);
  });
});
