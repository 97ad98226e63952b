import { INestApplicationContext } from '@nestjs/common';
import { Retention } from '../../lib';
import { freshSchema, sql } from '../support/database';
import { createTestApp } from '../support/test-app';

const SCHEMA = 'it_retention';
const DAY = 86_400_000;

describe('Retention', () => {
  let app: INestApplicationContext;

  beforeAll(async () => {
    await freshSchema(SCHEMA);
    app = await createTestApp({ schema: SCHEMA, outbox: { dispatcherEnabled: false, retentionBatchSize: 3, retentionMs: DAY } });
  });

  afterAll(() => app.close());

  async function seed(table: 'outbox_message' | 'inbox_message', status: string, ageDays: number, count: number): Promise<void> {
    const processed = `now() - interval '${ageDays} days'`;
    for (let i = 0; i < count; i++) {
      if (table === 'outbox_message') {
        await sql(
          `INSERT INTO "${SCHEMA}".outbox_message (message_id, message_type, exchange, routing_key, payload, headers, status, max_attempts, processed_at, claimed_at)
           VALUES (gen_random_uuid(), 't', 'x', 'k', '{}', '{}', $1, 3, ${processed}, ${processed})`,
          [status],
        );
      } else {
        await sql(
          `INSERT INTO "${SCHEMA}".inbox_message (consumer, message_id, exchange, routing_key, payload, headers, status, max_attempts, processed_at, claimed_at)
           VALUES ('c', gen_random_uuid()::text, 'x', 'k', '{}', '{}', $1, 3, ${processed}, ${processed})`,
          [status],
        );
      }
    }
  }

  const remaining = (table: string) =>
    sql<{ status: string; old: boolean; n: number }>(
      `SELECT status, processed_at < now() - interval '1 day' AS old, count(*)::int AS n FROM "${SCHEMA}".${table} GROUP BY 1, 2 ORDER BY 1, 2`,
    );

  it('deletes only DONE and ABANDONED rows older than the TTL, from both tables, in bounded batches', async () => {
    for (const table of ['outbox_message', 'inbox_message'] as const) {
      await seed(table, 'DONE', 10, 7);
      await seed(table, 'ABANDONED', 10, 2);
      await seed(table, 'DONE', 0, 2); // recent: inside the dedupe window
      await seed(table, 'MANUAL_REQUIRED', 10, 1);
      await seed(table, 'FAILED', 10, 1);
      await seed(table, 'PROCESSING', 10, 1);
      await seed(table, 'PENDING', 10, 1);
    }
    await logDeleteStatements();
    expect(await app.get(Retention).purge()).toEqual({ outbox: 9, inbox: 9 });
    // 9 old rows in batches of 3: three full statements, then one that finds nothing left.
    const statements = await sql<{ tbl: string; n: number }>(`SELECT tbl, n FROM "${SCHEMA}".delete_log ORDER BY id`);
    expect(statements).toEqual([
      ...[3, 3, 3, 0].map((n) => ({ tbl: 'outbox_message', n })),
      ...[3, 3, 3, 0].map((n) => ({ tbl: 'inbox_message', n })),
    ]);

    for (const table of ['outbox_message', 'inbox_message']) {
      expect(await remaining(table)).toEqual([
        { status: 'DONE', old: false, n: 2 },
        { status: 'FAILED', old: true, n: 1 },
        { status: 'MANUAL_REQUIRED', old: true, n: 1 },
        { status: 'PENDING', old: true, n: 1 },
        { status: 'PROCESSING', old: true, n: 1 },
      ]);
    }
  });

  /** Records each DELETE statement on both tables with its row count (statement-level triggers). */
  async function logDeleteStatements(): Promise<void> {
    await sql(`CREATE TABLE "${SCHEMA}".delete_log (id serial PRIMARY KEY, tbl text NOT NULL, n int NOT NULL)`);
    await sql(`CREATE FUNCTION "${SCHEMA}".log_delete() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN INSERT INTO "${SCHEMA}".delete_log (tbl, n) SELECT TG_TABLE_NAME, count(*) FROM deleted; RETURN NULL; END $$`);
    for (const table of ['outbox_message', 'inbox_message']) {
      await sql(`CREATE TRIGGER log_delete AFTER DELETE ON "${SCHEMA}".${table}
        REFERENCING OLD TABLE AS deleted FOR EACH STATEMENT EXECUTE FUNCTION "${SCHEMA}".log_delete()`);
    }
  }
});
