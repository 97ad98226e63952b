import { randomUUID } from 'node:crypto';
import { createInboxTableMigration, createOutboxTableMigration, createOutboxTableV2Migration, MessageStatus, OUTBOX_MIGRATIONS } from '../../lib';
import { CapturingOutboxTransport, OutboxTestKit } from '../../lib/testing';
import { testDatabase } from '../support/database';
import { createAppOnExistingTables, runMigrations } from '../support/run-migrations';
import { createTestApp } from '../support/test-app';
import { STARTUP_TIMEOUT_MS, timeoutFor } from '../support/wait';

const database = testDatabase('it_schema_upgrade');

/** One row in every status, as version 1 of the library wrote them. */
async function seedVersion1Rows(): Promise<Record<string, string>> {
  const ids: Record<string, string> = {};
  for (const status of Object.values(MessageStatus)) {
    ids[status] = randomUUID();
    await database.sql(
      `INSERT INTO {outbox_message} (message_id, message_type, biz_key, exchange, routing_key, payload, headers, status, max_attempts)
       VALUES (?, 'order.paid', ?, 'orders', 'order.paid', '{"n":1}', '{}', ?, 5)`,
      [ids[status], `order-${status}:paid`, status],
    );
  }
  return ids;
}

describe('Upgrading an outbox table of schema version 1', () => {
  let ids: Record<string, string>;

  beforeAll(async () => {
    await database.reset();
    await runMigrations(database, [createOutboxTableMigration(), createInboxTableMigration()]);
    ids = await seedVersion1Rows();
  }, timeoutFor(STARTUP_TIMEOUT_MS));

  it(
    'is refused at start-up without synchronize, saying how to migrate',
    async () => {
      await expect(createAppOnExistingTables(database, { dispatcherEnabled: false })).rejects.toThrow(
        /outbox table "outbox_message" \(tableName\) is of schema version 1 \(no column transport, destination\): .*OUTBOX_MIGRATIONS/,
      );
    },
    timeoutFor(STARTUP_TIMEOUT_MS),
  );

  it(
    'keeps every row through OUTBOX_MIGRATIONS, for the default transport, and dispatches the waiting one',
    async () => {
      const before = await database.statusCounts();
      // The creating migrations are recorded as run: only the upgrade runs.
      await runMigrations(database, OUTBOX_MIGRATIONS);
      expect(await database.statusCounts()).toEqual(before);
      const rows = await database.sql(`SELECT message_id, status, transport, destination, attempts FROM {outbox_message}`);
      expect(rows).toHaveLength(Object.values(MessageStatus).length);
      for (const row of rows)
        expect(row).toMatchObject({ transport: 'default', destination: '', status: Object.keys(ids).find((status) => ids[status] === row.message_id) });

      const app = await createAppOnExistingTables(database, { pollIntervalMs: 60_000 });
      try {
        const kit = OutboxTestKit.from(app);
        await kit.flush();
        // The PENDING row, and the FAILED one whose retry is due: the others are finished, claimed or parked.
        expect(kit.transport.messages.map((message) => message.messageId).sort()).toEqual([ids.PENDING, ids.FAILED].sort());
      } finally {
        await app.close();
      }
    },
    timeoutFor(STARTUP_TIMEOUT_MS, STARTUP_TIMEOUT_MS),
  );

  it(
    'is a no-op on a table already upgraded (start-up under synchronize, the migration again)',
    async () => {
      const app = await createTestApp({ database, statics: { transport: CapturingOutboxTransport }, outbox: { dispatcherEnabled: false } });
      await app.close();
      // Under another name, as a user who added it by hand beside OUTBOX_MIGRATIONS would.
      await runMigrations(database, [createOutboxTableV2Migration('outbox_message', 1796169600001)]);
      expect(Number((await database.sql(`SELECT count(*) AS n FROM {outbox_message}`))[0].n)).toBe(Object.values(MessageStatus).length);
    },
    timeoutFor(STARTUP_TIMEOUT_MS, STARTUP_TIMEOUT_MS),
  );
});

describe('Start-up under synchronize on an outbox table of schema version 1', () => {
  const upgraded = testDatabase('it_schema_upgrade_sync');

  it(
    'upgrades it in place, keeping its rows',
    async () => {
      await upgraded.reset();
      await runMigrations(upgraded, [createOutboxTableMigration(), createInboxTableMigration()]);
      await upgraded.sql(
        `INSERT INTO {outbox_message} (message_id, message_type, exchange, routing_key, payload, headers, status, max_attempts) VALUES (?, 't', 'e', 'r', '{}', '{}', 'DONE', 5)`,
        [randomUUID()],
      );
      const app = await createTestApp({ database: upgraded, statics: { transport: CapturingOutboxTransport }, outbox: { dispatcherEnabled: false } });
      await app.close();
      expect(await upgraded.sql(`SELECT status, transport, destination FROM {outbox_message}`)).toEqual([
        { status: 'DONE', transport: 'default', destination: '' },
      ]);
    },
    timeoutFor(STARTUP_TIMEOUT_MS, STARTUP_TIMEOUT_MS),
  );
});
