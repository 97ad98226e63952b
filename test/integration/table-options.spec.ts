import { RabbitSubscribe } from '@golevelup/nestjs-rabbitmq';
import { INestApplicationContext, Injectable } from '@nestjs/common';
import { connect } from 'amqplib';
import { DataSource } from 'typeorm';
import {
  createInboxTableMigration,
  createOutboxTableV2Migration,
  createOutboxTableMigration,
  InboxHandler,
  OutboxOptionsError,
  OutboxSchemaError,
} from '../../lib';
import { OutboxTransport } from '../../lib/entries/transports';
import { derivedNames, TableKind } from '../../lib/naming/index-names';
import { brokerName } from '../support/broker-names';
import { DatabaseKind, DATABASE_KIND, testDatabase } from '../support/database';
import { AMQP_URL } from '../support/environment';
import { createTestApp, OrderPayments, TestAppOptions } from '../support/test-app';
import { STARTUP_TIMEOUT_MS, timeoutFor, waitUntil } from '../support/wait';

const database = testDatabase('it_table_options');
const EXCHANGE = brokerName('it.table-options');
const QUEUE = `${EXCHANGE}.paid-orders`;

/**
 * The longest table names per database: the identifier limit (PostgreSQL 63 bytes, MariaDB/MySQL
 * 64 characters; none on SQLite, where the library's own cap of 63 holds) less what the longest
 * index name adds, `UQ_<name>_type_biz_key` (16) and `UQ_<name>_consumer_message_id` (23).
 */
const LONGEST: Record<DatabaseKind, Record<TableKind, number>> = {
  postgres: { outbox: 47, inbox: 40 },
  mariadb: { outbox: 48, inbox: 41 },
  mysql: { outbox: 48, inbox: 41 },
  sqlite: { outbox: 63, inbox: 63 },
};

/** A table name of exactly `length` characters. */
const nameOf = (prefix: string, length: number) => prefix + 'x'.repeat(length - prefix.length);

/** Index and constraint names of a table, as the database's catalog lists them (SQLite: indexes only). */
async function indexNames(table: string): Promise<string[]> {
  const rows = await {
    postgres: () => database.sql(`SELECT indexname AS name FROM pg_indexes WHERE schemaname = ? AND tablename = ?`, [database.name, table]),
    mariadb: () =>
      database.sql(`SELECT DISTINCT index_name AS name FROM information_schema.statistics WHERE table_schema = ? AND table_name = ?`, [database.name, table]),
    mysql: () =>
      database.sql(`SELECT DISTINCT index_name AS name FROM information_schema.statistics WHERE table_schema = ? AND table_name = ?`, [database.name, table]),
    sqlite: () => database.sql(`SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = ? AND name NOT LIKE 'sqlite_autoindex_%'`, [table]),
  }[database.kind]();
  return rows.map((row) => String(row.name)).sort();
}

const tableExists = (table: string) =>
  database.sql(`SELECT count(*) AS n FROM {${table}}`).then(
    () => true,
    () => false,
  );

const paidOrders: number[] = [];

/** A deferred inbox consumer of the orders the outbox publishes: both tables on the way. */
@Injectable()
class PaidOrders {
  @RabbitSubscribe({ exchange: EXCHANGE, routingKey: 'order.paid', queue: QUEUE, queueOptions: { durable: false } })
  @InboxHandler({ consumer: 'paid-orders', mode: 'deferred' })
  async handle(event: { orderId: number }): Promise<void> {
    paidOrders.push(event.orderId);
  }
}

class NotATransport {
  async deliver(): Promise<void> {}
}

class SomeTransport implements OutboxTransport {
  async send(): Promise<void> {}
}

/**
 * Starts and closes an application. Silent: most are meant to fail, and golevelup logs the channels
 * it was still opening when a failed start-up closes its connection.
 */
const boot = (options: Omit<TestAppOptions, 'database'>) =>
  createTestApp({ database, logger: false, ...options, outbox: { dispatcherEnabled: false, ...options.outbox } }).then((app) => app.close());

describe(`Table options on ${DATABASE_KIND}`, () => {
  beforeAll(async () => {
    await database.reset();
    const connection = await connect(AMQP_URL);
    try {
      const channel = await connection.createChannel();
      await channel.assertExchange(EXCHANGE, 'topic', { durable: false });
      await channel.deleteQueue(QUEUE);
    } finally {
      await connection.close();
    }
  });

  afterAll(async () => {
    const connection = await connect(AMQP_URL);
    await (await connection.createChannel()).deleteQueue(QUEUE);
    await connection.close();
  });

  describe('the longest table names the database allows', () => {
    const tables = { outbox: nameOf('long_outbox_', LONGEST[DATABASE_KIND].outbox), inbox: nameOf('long_inbox_', LONGEST[DATABASE_KIND].inbox) };
    let app: INestApplicationContext;

    beforeAll(async () => {
      app = await createTestApp({
        database,
        outbox: { pollIntervalMs: 100 },
        statics: { tableName: tables.outbox, inboxTableName: tables.inbox },
        providers: [PaidOrders],
      });
    }, timeoutFor(STARTUP_TIMEOUT_MS));

    afterAll(() => app?.close());

    it('carry a message through the outbox and into the inbox', async () => {
      const { messageId, order } = await app.get(OrderPayments).pay(EXCHANGE);
      // Generous: a loaded machine is slow, and this measures nothing.
      await waitUntil(() => paidOrders.includes(order.id), 'the inbox handler ran', 90_000);
      const status = async (table: string) => (await database.sql(`SELECT status FROM {${table}} WHERE message_id = ?`, [messageId]))[0]?.status;
      await waitUntil(async () => (await status(tables.outbox)) === 'DONE' && (await status(tables.inbox)) === 'DONE', 'both rows are DONE', 60_000);
    }, 180_000);

    it('keep every index name whole', async () => {
      for (const kind of ['outbox', 'inbox'] as TableKind[]) {
        // MariaDB/MySQL name every primary key PRIMARY.
        // The outbox's claimable index is made by version 1 and, but on PostgreSQL, replaced by the lane index in version 2.
        // Its index of unfinished ordering keys is MySQL's and MariaDB's (version 4), whose version 4
        // also drops its processing index (the lane index finds PROCESSING rows there).
        const mysql = database.kind === 'mariadb' || database.kind === 'mysql';
        const expected = derivedNames(kind, tables[kind])
          .filter((name) => !(kind === 'outbox' && name.endsWith('_claimable') && database.kind !== 'postgres'))
          .filter((name) => !(kind === 'outbox' && name.endsWith('_unfinished') && !mysql))
          .filter((name) => !(kind === 'outbox' && name.endsWith('_processing') && mysql))
          .map((name) => (name.startsWith('PK_') && database.kind !== 'postgres' ? 'PRIMARY' : name));
        const listed = await indexNames(tables[kind]);
        if (database.kind === 'sqlite') {
          // SQLite keeps named constraints inside the table's SQL; the claim indexes are objects of their own.
          expect(listed.length).toBeGreaterThanOrEqual(3);
          expect(expected).toEqual(expect.arrayContaining(listed));
        } else {
          expect(listed).toEqual([...expected].sort());
        }
      }
    });
  });

  it(
    'refuses names a character longer before creating anything, saying the longest allowed',
    async () => {
      const tables = { outbox: nameOf('over_outbox_', LONGEST[DATABASE_KIND].outbox + 1), inbox: nameOf('over_inbox_', LONGEST[DATABASE_KIND].inbox + 1) };
      const failure = boot({ statics: { tableName: tables.outbox, inboxTableName: tables.inbox } });
      await expect(failure).rejects.toBeInstanceOf(OutboxOptionsError);
      if (database.kind === 'sqlite') {
        // No database limit: the library's own cap on any table name, checked where the module is declared.
        await expect(failure).rejects.toThrow(/tableName must be a plain SQL identifier \(letters, digits, underscore; at most 63 characters\)/);
      } else {
        await expect(failure).rejects.toThrow(
          new RegExp(
            `tableName "${tables.outbox}" has ${tables.outbox.length} characters, but on \\w+ an outbox table name may have at most ${LONGEST[DATABASE_KIND].outbox}: `,
          ),
        );
        await expect(failure).rejects.toThrow(
          new RegExp(
            `inboxTableName "${tables.inbox}" has ${tables.inbox.length} characters, but on \\w+ an inbox table name may have at most ${LONGEST[DATABASE_KIND].inbox}: `,
          ),
        );
      }
      expect(await tableExists(tables.outbox)).toBe(false);
      expect(await tableExists(tables.inbox)).toBe(false);
    },
    timeoutFor(STARTUP_TIMEOUT_MS),
  );

  it('refuses, in a table migration, a name too long for the database before running any statement', async () => {
    const name = nameOf('over_inbox_', LONGEST[DATABASE_KIND].inbox + 1);
    if (database.kind === 'sqlite') {
      expect(() => createInboxTableMigration(name)).toThrow(/inboxTableName must be a plain SQL identifier .*at most 63 characters/);
      return;
    }
    const dataSource = await new DataSource({
      ...database.dataSourceOptions(),
      synchronize: false,
      migrations: [createInboxTableMigration(name)],
    }).initialize();
    try {
      await expect(dataSource.runMigrations()).rejects.toThrow(
        new RegExp(
          `inboxTableName "${name}" has ${name.length} characters, but on \\w+ an inbox table name may have at most ${LONGEST[DATABASE_KIND].inbox}: `,
        ),
      );
    } finally {
      await dataSource.destroy();
    }
    expect(await tableExists(name)).toBe(false);
  });

  it(
    'refuses equal table names, ignoring case, where the module is declared',
    async () => {
      await expect(boot({ statics: { tableName: 'events', inboxTableName: 'EVENTS' } })).rejects.toThrow(
        /tableName and inboxTableName must name two tables, but both are "events" \(table names are compared ignoring case/,
      );
      expect(await tableExists('events')).toBe(false);
    },
    timeoutFor(STARTUP_TIMEOUT_MS),
  );

  it(
    'refuses a business table as tableName, naming the columns it lacks, and leaves it as it was',
    async () => {
      await database.sql(`CREATE TABLE {orders} (id integer PRIMARY KEY, status varchar(20) NOT NULL, customer varchar(100))`);
      await database.sql(`INSERT INTO {orders} (id, status, customer) VALUES (1, 'PAID', 'ada')`);
      const indexesBefore = await indexNames('orders');
      const failure = boot({ statics: { tableName: 'orders', inboxTableName: 'orders_inbox' } });
      await expect(failure).rejects.toBeInstanceOf(OutboxSchemaError);
      await expect(failure).rejects.toThrow(
        'the table "orders" (tableName) exists but is not an outbox table: it has no column message_id, message_type, biz_key, ordering_key, exchange, routing_key, payload, headers, attempts,' +
          ' max_attempts, next_attempt_at, claimed_at, claim_token, claimed_by, last_error, created_at, processed_at, transport, destination. If it is a table of your own, set tableName to another name',
      );
      // Refused before start-up creation could add the claim indexes to it.
      expect(await indexNames('orders')).toEqual(indexesBefore);
      expect(await database.sql(`SELECT id, status, customer FROM {orders}`)).toEqual([expect.objectContaining({ status: 'PAID', customer: 'ada' })]);
    },
    timeoutFor(STARTUP_TIMEOUT_MS),
  );

  it(
    'refuses a transport that is not a transport class, saying what was given',
    async () => {
      await expect(boot({ statics: { transport: new SomeTransport() as never } })).rejects.toThrow(
        /transport must be a class implementing OutboxTransport .*got an instance of SomeTransport: pass the class itself \(transport: SomeTransport\)/,
      );
      await expect(boot({ statics: { transport: 'rabbitmq' as never } })).rejects.toThrow(/transport must be a class .*got the string "rabbitmq"/);
      await expect(boot({ statics: { transport: NotATransport as never } })).rejects.toThrow(/class NotATransport has no send\(\) method/);
    },
    timeoutFor(STARTUP_TIMEOUT_MS, STARTUP_TIMEOUT_MS, STARTUP_TIMEOUT_MS),
  );

  describe('without synchronize', () => {
    const tables = { outbox: 'migrated_outbox', inbox: 'migrated_inbox' };
    const migrated = {
      synchronize: false,
      migrations: [createOutboxTableMigration(tables.outbox), createInboxTableMigration(tables.inbox), createOutboxTableV2Migration(tables.outbox)],
    };
    const statics = { tableName: tables.outbox, inboxTableName: tables.inbox };

    it(
      'refuses to start while the tables are missing, saying how to create them',
      async () => {
        const failure = boot({ statics, dataSource: { synchronize: false } });
        await expect(failure).rejects.toBeInstanceOf(OutboxSchemaError);
        await expect(failure).rejects.toThrow(
          /the outbox table "migrated_outbox" \(tableName\) does not exist: create it with the library's migrations \(OUTBOX_MIGRATIONS, or createOutboxTableMigration\("migrated_outbox"\) for a custom name\)/,
        );
        await expect(failure).rejects.toThrow(
          /the inbox table "migrated_inbox" \(inboxTableName\) does not exist: .*createInboxTableMigration\("migrated_inbox"\).* synchronize: true/,
        );
      },
      timeoutFor(STARTUP_TIMEOUT_MS),
    );

    it(
      'starts on the tables the migrations created',
      async () => {
        await expect(boot({ statics, dataSource: { ...migrated, migrationsRun: true } })).resolves.toBeUndefined();
        expect(await tableExists(tables.outbox)).toBe(true);
      },
      timeoutFor(STARTUP_TIMEOUT_MS),
    );

    it(
      'names the column an outbox table of an older shape lacks',
      async () => {
        await database.sql(`ALTER TABLE {migrated_outbox} DROP COLUMN claimed_by`);
        await expect(boot({ statics, dataSource: migrated })).rejects.toThrow(
          /the table "migrated_outbox" \(tableName\) exists but is not an outbox table: it has no column claimed_by\. .*if it is an outbox table of an older version, run the library's migrations/,
        );
      },
      timeoutFor(STARTUP_TIMEOUT_MS),
    );
  });
});
