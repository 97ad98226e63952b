import { randomUUID } from 'node:crypto';
import { Logger } from '@nestjs/common';
import fc from 'fast-check';
import { DataSource, EntityManager } from 'typeorm';
import {
  createInboxTableMigration,
  createOutboxTableMigration,
  createOutboxTableV2Migration,
  createOutboxTableV3Migration,
  MessageStatus,
  OUTBOX_MIGRATIONS,
  OutboxMessage,
  OutboxService,
} from '../../lib';
import { CapturingOutboxTransport, OutboxTestKit } from '../../lib/testing';
import { testDatabase } from '../support/database';
import { createAppOnExistingTables, runMigrations } from '../support/run-migrations';
import { createTestApp } from '../support/test-app';
import { STARTUP_TIMEOUT_MS, timeoutFor } from '../support/wait';

const database = testDatabase('it_schema_v3');
const postgres = database.kind === 'postgres';

/** The migrations that leave `table` (and the default inbox) at schema version 2. */
function toVersion2(table = 'outbox_message'): Function[] {
  return [createOutboxTableMigration(table), createInboxTableMigration(), createOutboxTableV2Migration(table)];
}

/** How PostgreSQL's catalog shows the business-key unique key: a constraint (version 2) or a partial unique index (version 3). */
async function businessKey(table = 'outbox_message'): Promise<{ constraint: boolean; definition: string }> {
  const name = `UQ_${table}_type_biz_key`;
  const [constraint] = await database.sql(
    `SELECT count(*) AS n FROM pg_constraint c JOIN pg_namespace n ON n.oid = c.connamespace WHERE n.nspname = ? AND c.conname = ?`,
    [database.name, name],
  );
  const [index] = await database.sql(`SELECT indexdef FROM pg_indexes WHERE schemaname = ? AND indexname = ?`, [database.name, name]);
  return { constraint: Number(constraint.n) === 1, definition: index?.indexdef ?? '' };
}

/** One row with and one without a business key in every status. */
async function seedRows(): Promise<void> {
  for (const status of Object.values(MessageStatus)) {
    for (const bizKey of [`order-${status}`, null]) {
      await database.sql(
        `INSERT INTO {outbox_message} (message_id, message_type, biz_key, transport, exchange, routing_key, destination, payload, headers, status, max_attempts)
         VALUES (?, 'order.paid', ?, 'default', 'orders', 'order.paid', '', '{"n":1}', '{}', ?, 5)`,
        [randomUUID(), bizKey, status],
      );
    }
  }
}

describe('Schema version 3 of the outbox table', () => {
  beforeAll(async () => {
    await database.reset();
    await runMigrations(database, toVersion2());
    await seedRows();
  }, timeoutFor(STARTUP_TIMEOUT_MS));

  afterEach(() => jest.restoreAllMocks());

  it(
    'version 2 still starts without synchronize; on PostgreSQL with a warning that names the upgrade',
    async () => {
      const warn = jest.spyOn(Logger.prototype, 'warn');
      const app = await createAppOnExistingTables(database, { dispatcherEnabled: false });
      try {
        await app
          .get(DataSource)
          .transaction((manager) =>
            app.get(OutboxService).publish({ type: 'order.paid', exchange: 'orders', routingKey: 'order.paid', payload: { n: 2 } }, { manager }),
          );
      } finally {
        await app.close();
      }
      const warnings = warn.mock.calls.map(([message]) => String(message)).filter((message) => message.includes('schema version 2'));
      expect(warnings).toEqual(postgres ? [expect.stringMatching(/outbox table outbox_message is of schema version 2: .*createOutboxTableV3Migration/)] : []);
      if (postgres) expect(await businessKey()).toMatchObject({ constraint: true });
    },
    timeoutFor(STARTUP_TIMEOUT_MS, STARTUP_TIMEOUT_MS),
  );

  it(
    'OUTBOX_MIGRATIONS upgrade it keeping every row; the key holds the rows with a business key, unique as before',
    async () => {
      const before = await database.statusCounts();
      await runMigrations(database, OUTBOX_MIGRATIONS);
      expect(await database.statusCounts()).toEqual(before);
      if (postgres) {
        const key = await businessKey();
        expect(key.constraint).toBe(false);
        expect(key.definition).toMatch(/^CREATE UNIQUE INDEX "UQ_outbox_message_type_biz_key" ON .* \(biz_key, message_type\) WHERE \(biz_key IS NOT NULL\)$/);
      }
      // The library on the upgraded table: a repeated business key is still one message, and
      // rows without one are as many as published.
      const app = await createAppOnExistingTables(database, { pollIntervalMs: 60_000 });
      try {
        const outbox = app.get(OutboxService);
        const inTransaction = <T>(work: (manager: EntityManager) => Promise<T>) => app.get(DataSource).transaction(work);
        const publish = (message: OutboxMessage) => inTransaction((manager) => outbox.publish(message, { manager }));
        const kit = OutboxTestKit.from(app);
        await kit.flush();
        kit.transport.clear();
        const keyed = { type: 'refund.issued', bizKey: 'refund-1', exchange: 'orders', routingKey: 'refund.issued' };
        expect(await publish({ ...keyed, payload: { n: 1 } })).toMatchObject({ duplicate: false });
        expect(await publish({ ...keyed, payload: { n: 2 } })).toMatchObject({ duplicate: true });
        await publish({ type: 'refund.issued', exchange: 'orders', routingKey: 'refund.issued', payload: { n: 3 } });
        await publish({ type: 'refund.issued', exchange: 'orders', routingKey: 'refund.issued', payload: { n: 4 } });
        await kit.flush();
        expect(kit.transport.messages.map((message) => (message.payload as { n: number }).n).sort()).toEqual([1, 3, 4]);
        // cancel() finds a row by its business key through the new key as through the old one.
        expect(await inTransaction((manager) => outbox.cancel('order-MANUAL_REQUIRED', 'order.paid', { manager }))).toBe(1);
      } finally {
        await app.close();
      }
    },
    timeoutFor(STARTUP_TIMEOUT_MS, STARTUP_TIMEOUT_MS),
  );

  it(
    'is a no-op when run again, also from two connections at once',
    async () => {
      const migrations = [createOutboxTableV3Migration('outbox_message', 1796342400001)];
      await Promise.all([runMigrations(database, migrations), runMigrations(database, [createOutboxTableV3Migration('outbox_message', 1796342400002)])]);
      if (postgres) expect(await businessKey()).toMatchObject({ constraint: false, definition: expect.stringContaining('WHERE (biz_key IS NOT NULL)') });
    },
    timeoutFor(STARTUP_TIMEOUT_MS),
  );
});

describe('Schema version 3 beside version 2', () => {
  const property = testDatabase('it_schema_v3_keys');

  beforeAll(async () => {
    await property.reset();
    await runMigrations(property, [
      createOutboxTableMigration('keys_v2'),
      createOutboxTableV2Migration('keys_v2'),
      createOutboxTableMigration('keys_v3'),
      createOutboxTableV2Migration('keys_v3'),
      createOutboxTableV3Migration('keys_v3'),
    ]);
  }, timeoutFor(STARTUP_TIMEOUT_MS));

  it(
    'accepts and refuses the same inserts, whatever the mix of business keys, types and NULLs',
    async () => {
      const row = fc.record({ bizKey: fc.option(fc.constantFrom('a', 'b', 'A', 'ä', ''), { nil: null }), type: fc.constantFrom('t1', 't2') });
      await fc.assert(
        fc.asyncProperty(fc.array(row, { minLength: 1, maxLength: 12 }), async (rows) => {
          const inserted: Record<string, boolean[]> = { keys_v2: [], keys_v3: [] };
          for (const table of ['keys_v2', 'keys_v3']) {
            await property.sql(`DELETE FROM {${table}}`);
            for (const { bizKey, type } of rows) {
              const before = Number((await property.sql(`SELECT count(*) AS n FROM {${table}}`))[0].n);
              // Duplicates are skipped as the library's insert skips them: no error, no row.
              const ignore = property.kind === 'postgres' || property.kind === 'sqlite' ? ['INSERT', 'ON CONFLICT DO NOTHING'] : ['INSERT IGNORE', ''];
              await property.sql(
                `${ignore[0]} INTO {${table}} (message_id, message_type, biz_key, exchange, routing_key, payload, headers, status, max_attempts)
                 VALUES (?, ?, ?, 'e', 'r', '{}', '{}', 'DONE', 5) ${ignore[1]}`,
                [randomUUID(), type, bizKey],
              );
              inserted[table].push(Number((await property.sql(`SELECT count(*) AS n FROM {${table}}`))[0].n) > before);
            }
          }
          expect(inserted.keys_v3).toEqual(inserted.keys_v2);
        }),
        { numRuns: 40 },
      );
    },
    timeoutFor(60_000),
  );
});

describe('Schema version 3, reverted and under synchronize', () => {
  const reverted = testDatabase('it_schema_v3_revert');

  it(
    'reverting the migration gives PostgreSQL its constraint back; start-up under synchronize upgrades it again',
    async () => {
      await reverted.reset();
      await runMigrations(reverted, [...toVersion2(), createOutboxTableV3Migration()], { revert: true });
      const key = async () => {
        const [row] = await reverted.sql(
          `SELECT count(*) AS n FROM pg_constraint c JOIN pg_namespace n ON n.oid = c.connamespace WHERE n.nspname = ? AND c.conname = 'UQ_outbox_message_type_biz_key'`,
          [reverted.name],
        );
        return Number(row.n);
      };
      if (postgres) expect(await key()).toBe(1);

      const log = jest.spyOn(Logger.prototype, 'log');
      const app = await createTestApp({
        database: reverted,
        logger: ['log', 'error'],
        statics: { transport: CapturingOutboxTransport },
        outbox: { dispatcherEnabled: false },
      });
      await app.close();
      const upgrades = log.mock.calls.map(([message]) => String(message)).filter((message) => message.startsWith('Upgraded the outbox table'));
      // Version 4 (MySQL and MariaDB's) comes with it: the migrations above stopped at version 3.
      const upgradedFrom = postgres ? 2 : reverted.kind === 'sqlite' ? null : 3;
      expect(upgrades).toEqual(
        upgradedFrom === null ? [] : [expect.stringMatching(`^Upgraded the outbox table outbox_message from schema version ${upgradedFrom} to 4 \\(`)],
      );
      if (postgres) expect(await key()).toBe(0);
      log.mockRestore();
    },
    timeoutFor(STARTUP_TIMEOUT_MS, STARTUP_TIMEOUT_MS),
  );
});

describe('Tables made under synchronize on a brand-new database', () => {
  const fresh = testDatabase('it_schema_v3_fresh');

  it(
    'says the tables were created, not upgraded from version 1',
    async () => {
      await fresh.reset();
      const log = jest.spyOn(Logger.prototype, 'log');
      try {
        const app = await createTestApp({
          database: fresh,
          logger: ['log', 'error'],
          statics: { transport: CapturingOutboxTransport },
          outbox: { dispatcherEnabled: false },
        });
        await app.close();
        const messages = log.mock.calls.map(([message]) => String(message));
        expect(messages.filter((message) => message.startsWith('Upgraded the outbox table'))).toEqual([]);
        expect(messages.filter((message) => message.startsWith('Created'))).toEqual([
          expect.stringMatching(/^Created tables outbox_message and inbox_message \(/),
        ]);
      } finally {
        log.mockRestore();
      }
    },
    timeoutFor(STARTUP_TIMEOUT_MS),
  );
});
