import { randomUUID } from 'node:crypto';
import { Logger } from '@nestjs/common';
import fc from 'fast-check';
import { DataSource } from 'typeorm';
import {
  createInboxTableMigration,
  createOutboxTableMigration,
  createOutboxTableV2Migration,
  createOutboxTableV3Migration,
  createOutboxTableV4Migration,
  MessageStatus,
  OUTBOX_MIGRATIONS,
  OutboxService,
} from '../../lib';
import { claimCandidates } from '../../lib/dialects/mysql/mysql-claim';
import { outboxLaneClaimTarget } from '../../lib/dialects/mysql/mysql-outbox.dialect';
import { mysqlTable } from '../../lib/dialects/mysql/mysql-sql';
import { OutboxDialect } from '../../lib/dialects/outbox-dialect';
import { qualifiedTable, resolveDialect } from '../../lib/dialects/resolve-dialect';
import { UNFINISHED_STATUSES } from '../../lib/message/message-status';
import { outboxStatementsVersion, upgradeOutboxTable, withQueryRunner } from '../../lib/schema/outbox-schema-version';
import { CapturingOutboxTransport, OutboxTestKit } from '../../lib/testing';
import { describeOn, TestDatabase, testDatabase } from '../support/database';
import { createAppOnExistingTables, runMigrations } from '../support/run-migrations';
import { createTestApp } from '../support/test-app';
import { STARTUP_TIMEOUT_MS, timeoutFor } from '../support/wait';

const database = testDatabase('it_schema_v4');
const mysql = database.kind === 'mariadb' || database.kind === 'mysql';

/** The migrations that leave `table` (and the default inbox) at schema version 3. */
function toVersion3(table = 'outbox_message'): Function[] {
  return [createOutboxTableMigration(table), createInboxTableMigration(), createOutboxTableV2Migration(table), createOutboxTableV3Migration(table)];
}

async function insertRow(db: TestDatabase, status: MessageStatus, orderingKey: string | null, type = 'order.paid', table = 'outbox_message'): Promise<void> {
  await db.sql(
    `INSERT INTO {${table}} (message_id, message_type, ordering_key, transport, exchange, routing_key, destination, payload, headers, status, max_attempts)
     VALUES (?, ?, ?, 'default', 'orders', 'order.paid', '', '{"n":1}', '{}', ?, 5)`,
    [randomUUID(), type, orderingKey, status],
  );
}

/** A row with and one without an ordering key in every status, and a key parked behind a MANUAL_REQUIRED row. */
async function seedRows(db: TestDatabase): Promise<void> {
  for (const status of Object.values(MessageStatus)) {
    for (const orderingKey of [`seed-${status}`, null]) await insertRow(db, status, orderingKey);
  }
  await insertRow(db, MessageStatus.MANUAL_REQUIRED, 'parked');
  await insertRow(db, MessageStatus.PENDING, 'parked');
}

/** The MySQL outbox table's indexes that version 4 changes (ordering, lane, processing), as `name: columns`. */
async function stateIndexes(db: TestDatabase): Promise<Record<string, string>> {
  const rows = await db.sql<{ Key_name: string; Column_name: string; Seq_in_index: number }>('SHOW INDEX FROM {outbox_message}');
  const indexes: Record<string, string[]> = {};
  for (const row of [...rows].sort((a, b) => Number(a.Seq_in_index) - Number(b.Seq_in_index))) {
    if (/_(ordering|unfinished|lane|processing)$/.test(row.Key_name)) (indexes[row.Key_name] ??= []).push(row.Column_name);
  }
  return Object.fromEntries(Object.entries(indexes).map(([name, columns]) => [name, columns.join(', ')]));
}

const VERSION_3_INDEXES = {
  IDX_outbox_message_ordering: 'ordering_key, status, id',
  IDX_outbox_message_lane: 'transport, status, id, next_attempt_at',
  IDX_outbox_message_processing: 'status, claimed_at',
};
const VERSION_4_INDEXES = {
  IDX_outbox_message_ordering: 'ordering_key, id',
  IDX_outbox_message_unfinished: 'unfinished_ordering_key, id',
  IDX_outbox_message_lane: 'status, transport, id, next_attempt_at',
};

/** A DataSource of its own on `db` (no synchronize), with the outbox dialect built for the table as it is now. */
async function withOutbox<T>(db: TestDatabase, work: (dataSource: DataSource, outbox: OutboxDialect) => Promise<T>): Promise<T> {
  const dataSource = new DataSource({ ...db.dataSourceOptions(), synchronize: false });
  await dataSource.initialize();
  try {
    const dialect = await resolveDialect(dataSource);
    const version = await outboxStatementsVersion(dataSource, dialect, 'outbox_message');
    return await work(dataSource, dialect.outbox(qualifiedTable(dataSource, 'outbox_message'), version));
  } finally {
    await dataSource.destroy();
  }
}

describe('Schema version 4 of the outbox table', () => {
  beforeAll(async () => {
    await database.reset();
    await runMigrations(database, toVersion3());
    await seedRows(database);
  }, timeoutFor(STARTUP_TIMEOUT_MS));

  afterEach(() => jest.restoreAllMocks());

  it(
    'version 3 still starts without synchronize, on MySQL with a warning naming the upgrade, and sends each key in write order',
    async () => {
      if (mysql) expect(await stateIndexes(database)).toEqual(VERSION_3_INDEXES);
      const warn = jest.spyOn(Logger.prototype, 'warn');
      const app = await createAppOnExistingTables(database, { pollIntervalMs: 60_000 });
      try {
        const kit = OutboxTestKit.from(app);
        const outbox = app.get(OutboxService);
        await app.get(DataSource).transaction(async (manager) => {
          for (const [orderingKey, n] of [
            ['k1', 1],
            ['k2', 1],
            ['k1', 2],
            [undefined, 0],
            ['k1', 3],
            ['k2', 2],
          ] as const) {
            await outbox.publish(
              { type: 'v4.ordered', exchange: 'orders', routingKey: 'v4', orderingKey, payload: { key: orderingKey ?? null, n } },
              { manager },
            );
          }
        });
        await kit.flush();
        const sent = kit.transport.messages.filter((m) => m.type === 'v4.ordered').map((m) => m.payload as { key: string | null; n: number });
        expect(sent).toHaveLength(6);
        expect(sent.filter((m) => m.key === 'k1').map((m) => m.n)).toEqual([1, 2, 3]);
        expect(sent.filter((m) => m.key === 'k2').map((m) => m.n)).toEqual([1, 2]);
      } finally {
        await app.close();
      }
      // The key behind a MANUAL_REQUIRED row stays parked.
      const [parked] = await database.sql(`SELECT count(*) AS n FROM {outbox_message} WHERE ordering_key = 'parked' AND status = 'PENDING'`);
      expect(Number(parked.n)).toBe(1);
      const warnings = warn.mock.calls.map(([message]) => String(message)).filter((message) => message.includes('schema version'));
      expect(warnings).toEqual(mysql ? [expect.stringMatching(/outbox table outbox_message is of schema version 3: .*createOutboxTableV4Migration/)] : []);
    },
    timeoutFor(STARTUP_TIMEOUT_MS, STARTUP_TIMEOUT_MS),
  );

  it(
    'OUTBOX_MIGRATIONS upgrade it keeping every row and status; the new index holds the keys of unfinished rows only',
    async () => {
      const before = await database.statusCounts();
      await runMigrations(database, OUTBOX_MIGRATIONS);
      expect(await database.statusCounts()).toEqual(before);
      if (!mysql) return;
      expect(await stateIndexes(database)).toEqual(VERSION_4_INDEXES);
      const rows = await database.sql<Record<string, string | null>>('SELECT status, ordering_key, unfinished_ordering_key FROM {outbox_message}');
      for (const row of rows) {
        const unfinished = (UNFINISHED_STATUSES as readonly string[]).includes(row.status!);
        expect(row.unfinished_ordering_key).toBe(unfinished ? row.ordering_key : null);
      }
    },
    timeoutFor(STARTUP_TIMEOUT_MS),
  );

  it(
    'claims one row of a key at a time, in write order, after the upgrade; a parked key stays parked',
    async () => {
      for (let i = 0; i < 3; i++) await insertRow(database, MessageStatus.PENDING, 'after', 'v4.after');
      await withOutbox(database, async (dataSource, outbox) => {
        const [parkedRow] = await database.sql(`SELECT message_id FROM {outbox_message} WHERE ordering_key = 'parked' AND status = 'MANUAL_REQUIRED'`);
        expect(
          (await outbox.findParkedKeys(dataSource, 10))
            .filter((key) => key.orderingKey === 'parked')
            .map((key) => [key.orderingKey, key.messageId, key.waiting]),
        ).toEqual([['parked', parkedRow.message_id, 1]]);
        const ids = (await database.sql(`SELECT id FROM {outbox_message} WHERE ordering_key = 'after' ORDER BY id`)).map((row) => String(row.id));
        for (const expected of ids) {
          const claimed = await outbox.claim(dataSource, 100, randomUUID(), 'v4-spec');
          expect(claimed.filter((row) => row.orderingKey === 'after').map((row) => row.id)).toEqual([expected]);
          expect(claimed.filter((row) => row.orderingKey === 'parked')).toEqual([]);
          await database.sql(`UPDATE {outbox_message} SET status = 'DONE', processed_at = created_at WHERE status = 'PROCESSING'`);
        }
      });
    },
    timeoutFor(STARTUP_TIMEOUT_MS),
  );

  it(
    'is a no-op when run again, also from two connections at once',
    async () => {
      const shape = async () => (mysql ? stateIndexes(database) : {});
      const before = await shape();
      await Promise.all([
        runMigrations(database, [createOutboxTableV4Migration('outbox_message', 1796515200001)]),
        runMigrations(database, [createOutboxTableV4Migration('outbox_message', 1796515200002)]),
      ]);
      expect(await shape()).toEqual(before);
    },
    timeoutFor(STARTUP_TIMEOUT_MS),
  );
});

describe('Schema version 4, reverted, and upgraded from two connections at once', () => {
  const reverted = testDatabase('it_schema_v4_revert');

  it(
    'reverting the migration restores version 3 on MySQL; start-up under synchronize upgrades it again, keeping the rows',
    async () => {
      await reverted.reset();
      await runMigrations(reverted, [...toVersion3(), createOutboxTableV4Migration()], { revert: true });
      await seedRows(reverted);
      if (mysql) expect(await stateIndexes(reverted)).toEqual(VERSION_3_INDEXES);
      const before = await reverted.statusCounts();

      const log = jest.spyOn(Logger.prototype, 'log');
      try {
        const app = await createTestApp({
          database: reverted,
          logger: ['log', 'error'],
          statics: { transport: CapturingOutboxTransport },
          outbox: { dispatcherEnabled: false },
        });
        await app.close();
        const upgrades = log.mock.calls.map(([message]) => String(message)).filter((message) => message.startsWith('Upgraded the outbox table'));
        expect(upgrades).toEqual(
          mysql
            ? [
                'Upgraded the outbox table outbox_message from schema version 3 to 4 (an ordering index over the keys of unfinished rows only, and a lane index leading with the status in place of the processing index)',
              ]
            : [],
        );
      } finally {
        log.mockRestore();
      }
      expect(await reverted.statusCounts()).toEqual(before);
      if (mysql) expect(await stateIndexes(reverted)).toEqual(VERSION_4_INDEXES);
    },
    timeoutFor(STARTUP_TIMEOUT_MS, STARTUP_TIMEOUT_MS),
  );

  it(
    'two processes upgrading at once: one upgrades, the other finds it done',
    async () => {
      await runMigrations(reverted, [createOutboxTableV4Migration('outbox_message', 1796515200003)], { revert: true });
      if (mysql) expect(await stateIndexes(reverted)).toEqual(VERSION_3_INDEXES);
      const sources = [0, 1].map(() => new DataSource({ ...reverted.dataSourceOptions(), synchronize: false }));
      await Promise.all(sources.map((source) => source.initialize()));
      try {
        const upgraded = await Promise.all(
          sources.map(async (source) => withQueryRunner(source, async (runner) => upgradeOutboxTable(runner, await resolveDialect(source), 'outbox_message'))),
        );
        expect(upgraded.sort()).toEqual(mysql ? [3, null] : [null, null]);
      } finally {
        await Promise.all(sources.map((source) => source.destroy()));
      }
      if (mysql) expect(await stateIndexes(reverted)).toEqual(VERSION_4_INDEXES);
    },
    timeoutFor(STARTUP_TIMEOUT_MS),
  );
});

describeOn(['mariadb', 'mysql'], 'The version-4 ordering rule beside version 3', () => {
  const property = testDatabase('it_schema_v4_rule');
  let dataSource: DataSource | undefined;

  beforeAll(async () => {
    await property.reset();
    await runMigrations(property, [...toVersion3('rule_v3'), ...toVersion3('rule_v4').filter((_, i) => i !== 1), createOutboxTableV4Migration('rule_v4')]);
    dataSource = new DataSource({ ...property.dataSourceOptions(), synchronize: false });
    await dataSource.initialize();
  }, timeoutFor(STARTUP_TIMEOUT_MS));

  afterAll(async () => {
    await dataSource?.destroy();
  });

  it(
    'claims and parks exactly the rows version 3 does, whatever the keys and statuses',
    async () => {
      const dialect = await resolveDialect(dataSource!);
      const row = fc.record({
        orderingKey: fc.option(fc.constantFrom('a', 'b', 'c'), { nil: null }),
        status: fc.constantFrom(...Object.values(MessageStatus)),
      });
      await fc.assert(
        fc.asyncProperty(fc.array(row, { minLength: 1, maxLength: 16 }), async (rows) => {
          const found: Record<string, unknown> = {};
          for (const [table, version] of [
            ['rule_v3', 3],
            ['rule_v4', 4],
          ] as const) {
            await property.sql(`DELETE FROM {${table}}`);
            for (const [i, { orderingKey, status }] of rows.entries()) {
              await property.sql(
                `INSERT INTO {${table}} (id, message_id, message_type, ordering_key, exchange, routing_key, payload, headers, status, max_attempts)
                 VALUES (?, ?, 't', ?, 'e', 'r', '{}', '{}', ?, 5)`,
                [i + 1, randomUUID(), orderingKey, status],
              );
            }
            const quoted = qualifiedTable(dataSource!, table);
            const candidates = claimCandidates(outboxLaneClaimTarget(mysqlTable(quoted, version === 4), 'default'), 100);
            const claimable = (await dataSource!.query(candidates.sql, candidates.params)).map((r: { id: string }) => String(r.id));
            const parked = (await dialect.outbox(quoted, version).findParkedKeys(dataSource!, 100)).map((key) => [key.orderingKey, key.waiting]);
            found[table] = { claimable, parked };
          }
          expect(found.rule_v4).toEqual(found.rule_v3);
        }),
        { numRuns: 60 },
      );
    },
    timeoutFor(120_000),
  );
});
