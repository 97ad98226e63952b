import { DataSource } from 'typeorm';
import { createInboxMessageEntity, createInboxTableMigration, createOutboxMessageEntity, createOutboxTableMigration, OUTBOX_MIGRATIONS } from '../../lib';
import { freshSchema, sql } from '../support/database';
import { POSTGRES_URL } from '../support/environment';

const SCHEMA = 'it_schema_migration';

async function pendingSchemaChanges(tableName: string, inboxTableName: string, migrations: Function[]): Promise<string[]> {
  const dataSource = new DataSource({
    type: 'postgres',
    url: POSTGRES_URL,
    schema: SCHEMA,
    entities: [createOutboxMessageEntity(tableName), createInboxMessageEntity(inboxTableName)],
    migrations,
    migrationsTableName: `migrations_${tableName}`,
  });
  await dataSource.initialize();
  try {
    await dataSource.runMigrations();
    const log = await dataSource.driver.createSchemaBuilder().log();
    return log.upQueries.map((q) => q.query);
  } finally {
    await dataSource.destroy();
  }
}

describe('Outbox table migration (PostgreSQL)', () => {
  beforeAll(() => freshSchema(SCHEMA));

  it('creates exactly the outbox and inbox tables that the entities describe', async () => {
    expect(await pendingSchemaChanges('outbox_message', 'inbox_message', OUTBOX_MIGRATIONS)).toEqual([]);
  });

  it('creates a custom-named table with its own index names', async () => {
    const migrations = [createOutboxTableMigration('billing_outbox'), createInboxTableMigration('billing_inbox')];
    expect(await pendingSchemaChanges('billing_outbox', 'billing_inbox', migrations)).toEqual([]);
    const indexes = await sql(`SELECT indexname, indexdef FROM pg_indexes WHERE schemaname = $1 AND tablename = 'billing_outbox' ORDER BY indexname`, [SCHEMA]);
    expect(indexes.map((i) => i.indexname)).toEqual([
      'IDX_billing_outbox_claimable',
      'IDX_billing_outbox_processing',
      'PK_billing_outbox',
      'UQ_billing_outbox_message_id',
      'UQ_billing_outbox_type_biz_key',
    ]);
    // The claim index covers only claimable rows, so retained history does not slow claims.
    expect(indexes[0].indexdef).toMatch(/WHERE \(\(status\)::text = ANY/);
  });
});
