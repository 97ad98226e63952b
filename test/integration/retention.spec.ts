import { INestApplicationContext } from '@nestjs/common';
import { randomUUID } from 'node:crypto';
import { Retention } from '../../lib/entries/admin';
import { StateTable } from '../../lib/engine/state-table';
import { INBOX_DIALECT, OUTBOX_DIALECT } from '../../lib/naming/injection-tokens';
import { testDatabase } from '../support/database';
import { toBoolean } from '../support/sql-values';
import { createTestApp } from '../support/test-app';
import { STARTUP_TIMEOUT_MS, timeoutFor } from '../support/wait';

const database = testDatabase('it_retention');
const DAY = 86_400_000;
const TABLES = ['outbox_message', 'inbox_message'] as const;
type Table = (typeof TABLES)[number];

describe('Retention', () => {
  let app: INestApplicationContext;

  beforeAll(async () => {
    await database.reset();
    app = await createTestApp({ database, outbox: { dispatcherEnabled: false, retentionBatchSize: 3, retentionMs: DAY } });
  }, timeoutFor(STARTUP_TIMEOUT_MS));

  afterAll(() => app.close());

  async function seed(table: Table, status: string, ageDays: number, count: number): Promise<void> {
    const processed = database.timeAgo(ageDays * DAY);
    for (let i = 0; i < count; i++) {
      const identity = table === 'outbox_message' ? 'message_id, message_type' : 'consumer, message_id';
      const identityValues = table === 'outbox_message' ? [randomUUID(), 't'] : ['c', randomUUID()];
      await database.sql(
        `INSERT INTO {${table}} (${identity}, exchange, routing_key, payload, headers, status, max_attempts, processed_at, claimed_at)
         VALUES (?, ?, 'x', 'k', '{}', '{}', ?, 3, ${processed}, ${processed})`,
        [...identityValues, status],
      );
    }
  }

  const rowCount = async (table: Table) => Number((await database.sql(`SELECT count(*) AS n FROM {${table}}`))[0].n);

  const remaining = async (table: Table) =>
    (await database.sql(`SELECT status, processed_at < ${database.timeAgo(DAY)} AS old, count(*) AS n FROM {${table}} GROUP BY 1, 2 ORDER BY 1, 2`)).map(
      (row) => ({ status: row.status, old: toBoolean(row.old), n: Number(row.n) }),
    );

  it('deletes only DONE and ABANDONED rows older than the TTL, from both tables, in bounded batches', async () => {
    for (const table of TABLES) {
      await seed(table, 'DONE', 10, 7);
      await seed(table, 'ABANDONED', 10, 2);
      await seed(table, 'DONE', 0, 2); // recent: inside the dedupe window
      await seed(table, 'MANUAL_REQUIRED', 10, 1);
      await seed(table, 'FAILED', 10, 1);
      await seed(table, 'PROCESSING', 10, 1);
      await seed(table, 'PENDING', 10, 1);
    }
    const statements = recordDeleteStatements();
    expect(await app.get(Retention).purge()).toEqual({ outbox: 9, inbox: 9 });
    // 9 old rows in batches of 3: three full statements, then one that finds nothing left; each
    // reported exactly the rows it removed.
    expect(statements).toEqual([
      ...[3, 3, 3, 0].map((n) => ({ table: 'outbox_message', reported: n, removed: n })),
      ...[3, 3, 3, 0].map((n) => ({ table: 'inbox_message', reported: n, removed: n })),
    ]);

    for (const table of TABLES) {
      expect(await remaining(table)).toEqual([
        { status: 'DONE', old: false, n: 2 },
        { status: 'FAILED', old: true, n: 1 },
        { status: 'MANUAL_REQUIRED', old: true, n: 1 },
        { status: 'PENDING', old: true, n: 1 },
        { status: 'PROCESSING', old: true, n: 1 },
      ]);
    }
  });

  /**
   * Records each batch delete of both tables: the count it reported and the rows the table
   * really lost meanwhile (nothing else writes to it during the purge).
   */
  function recordDeleteStatements(): { table: Table; reported: number; removed: number }[] {
    const statements: { table: Table; reported: number; removed: number }[] = [];
    for (const [table, token] of [
      ['outbox_message', OUTBOX_DIALECT],
      ['inbox_message', INBOX_DIALECT],
    ] as const) {
      const dialect = app.get<StateTable>(token);
      const deleteFinished = dialect.deleteFinished.bind(dialect);
      jest.spyOn(dialect, 'deleteFinished').mockImplementation(async (...args) => {
        const before = await rowCount(table);
        const reported = await deleteFinished(...args);
        statements.push({ table, reported, removed: before - (await rowCount(table)) });
        return reported;
      });
    }
    return statements;
  }
});
