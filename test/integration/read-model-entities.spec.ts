import { INestApplicationContext, Injectable } from '@nestjs/common';
import { InjectRepository, TypeOrmModule } from '@nestjs/typeorm';
import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { resolve } from 'node:path';
import { promisify } from 'node:util';
import { DataSource, DataSourceOptions, EntitySchema, LessThan, MoreThan, MoreThanOrEqual, Repository } from 'typeorm';
import { MessageStatus, OutboxMessage, OutboxService } from '../../lib';
import { OutboxAdmin } from '../../lib/entries/admin';
import { fitReadModels } from '../../lib/entities/fit-read-models';
import { InboxMessageRecord, OutboxMessageRecord } from '../../lib/entities/message-records';
import { inboxMessageEntity } from '../../lib/entities/inbox-message.entity';
import { OUTBOX_ENTITIES, outboxEntities } from '../../lib/entities/outbox-entities';
import { outboxMessageEntity } from '../../lib/entities/outbox-message.entity';
import { CapturingOutboxTransport } from '../../lib/testing';
import { DATABASE_KIND, testDatabase } from '../support/database';
import { createTestApp } from '../support/test-app';
import { STARTUP_TIMEOUT_MS, timeoutFor } from '../support/wait';

const database = testDatabase('it_read_model');
const CUSTOM = { tableName: 'rm_outbox', inboxTableName: 'rm_inbox' };
const HOUR = 3_600_000;
/** How far a stored time may be from the database clock read around the statement that wrote it. */
const CLOCK_SLACK_MS = 1_000;
const ROOT = resolve(__dirname, '../..');

/** A service of the application, reading the tables through repositories Nest injects. */
@Injectable()
class RecordReader {
  constructor(
    @InjectRepository(outboxMessageEntity()) readonly outbox: Repository<OutboxMessageRecord>,
    @InjectRepository(inboxMessageEntity()) readonly inbox: Repository<InboxMessageRecord>,
  ) {}
}

const MESSAGES: OutboxMessage[] = [
  {
    type: 'order.paid',
    payload: { orderId: 1, lines: [{ sku: 'a', qty: 2 }], note: null },
    exchange: 'orders',
    routingKey: 'order.paid',
    bizKey: 'order-1:paid',
    orderingKey: 'order-1',
    headers: { 'x-tenant': 'acme', 'x-n': 3 },
    maxAttempts: 7,
  },
  // A payload that is itself a JSON string, which pg hands over parsed and the others as text.
  { type: 'order.shipped', payload: 'shipped', exchange: '', routingKey: 'shipping', delayMs: HOUR, transport: 'partner', destination: 'partner-api' },
  { type: 'order.paid', payload: 42, exchange: 'orders', routingKey: 'order.paid', bizKey: 'order-2:paid' },
];

/** The database's clock, as an instant. */
async function databaseNow(): Promise<number> {
  const [{ now }] = await database.sql(`SELECT ${database.timeAgo(0)} AS now`);
  return (typeof now === 'string' ? new Date(`${now.replace(' ', 'T')}Z`) : (now as Date)).getTime();
}

/** Columns (name, type, nullability, default) and index and constraint names, as TypeORM reads them from the catalog. */
async function tableShape(dataSource: DataSource, table: string): Promise<unknown> {
  const runner = dataSource.createQueryRunner();
  const found = await runner.getTable(table).finally(() => runner.release());
  if (!found) throw new Error(`no table ${table}`);
  return {
    columns: found.columns.map(({ name, type, length, isNullable, default: fallback }) => ({ name, type, length, isNullable, fallback })),
    indices: found.indices.map((index) => `${index.name} ${index.columnNames.join(',')} ${index.where ?? ''}`).sort(),
    uniques: found.uniques.map((unique) => unique.name).sort(),
  };
}

/** Runs `work` on a DataSource of its own on the test database, with the read models of both table pairs unless `options` says otherwise. */
async function withDataSource<T>(options: Partial<DataSourceOptions>, work: (dataSource: DataSource) => Promise<T>): Promise<T> {
  const entities = [...OUTBOX_ENTITIES, ...outboxEntities(CUSTOM)];
  const dataSource = await new DataSource({
    ...database.dataSourceOptions({ poolSize: 2 }),
    synchronize: false,
    entities,
    ...options,
  } as DataSourceOptions).initialize();
  try {
    return await work(dataSource);
  } finally {
    await dataSource.destroy();
  }
}

/**
 * Reads both tables through the read models in a process of its own, whose time zone is not UTC,
 * once per set of DataSource options (jest's workers keep the zone they started in).
 */
const CHILD_READER = `
require('reflect-metadata');
const { DataSource, MoreThan } = require('typeorm');
const { testDatabase } = require('./test/support/database');
const { outboxEntities } = require('./lib/entities/outbox-entities');
const { fitReadModels } = require('./lib/entities/fit-read-models');
const { kind, name, variants, dueAfter } = JSON.parse(process.argv[1]);
(async () => {
  const readings = [];
  for (const options of variants) {
    const dataSource = await new DataSource({ ...testDatabase(name, kind).dataSourceOptions({ poolSize: 1 }), synchronize: false, entities: outboxEntities(), ...options }).initialize();
    try {
      const warning = fitReadModels(dataSource);
      const [outbox, inbox] = outboxEntities().map((entity) => dataSource.getRepository(entity));
      const due = await outbox.find({ where: { nextAttemptAt: MoreThan(new Date(dueAfter)) } });
      readings.push({ options, warning, outbox: await outbox.find({ order: { id: 'ASC' } }), inbox: await inbox.find({ order: { id: 'ASC' } }), due: due.map((r) => r.id) });
    } finally {
      await dataSource.destroy();
    }
  }
  process.stdout.write(JSON.stringify({ offsets: [new Date(2024, 0, 1).getTimezoneOffset(), new Date(2024, 6, 1).getTimezoneOffset()], readings }));
})().catch((error) => { console.error(error); process.exit(1); });
`;

describe(`Read models of the outbox and inbox tables on ${DATABASE_KIND}`, () => {
  let app: INestApplicationContext;
  let dataSource: DataSource;
  let reader: RecordReader;
  let published: { messageId: string }[];
  let publishedAt: number;
  let inboxMessageId: string;

  beforeAll(async () => {
    await database.reset();
    // As OutboxModule registers them: forFeature, which autoLoadEntities (on in test apps) picks up.
    const feature = TypeOrmModule.forFeature(OUTBOX_ENTITIES);
    app = await createTestApp({
      database,
      outbox: { dispatcherEnabled: false },
      statics: { transport: CapturingOutboxTransport },
      providers: [...(feature.providers ?? []), RecordReader],
    });
    dataSource = app.get(DataSource);
    fitReadModels(dataSource);
    reader = app.get(RecordReader);
    const outbox = app.get(OutboxService);
    published = await dataSource.transaction(async (manager) => {
      const results = [];
      for (const message of MESSAGES) results.push(await outbox.publish(message, { manager }));
      return results;
    });
    publishedAt = await databaseNow();
    // The first message, failed once and claimed again: every column holds a value.
    await database.sql(
      `UPDATE {outbox_message} SET status = 'PROCESSING', attempts = 2, claimed_at = ${database.timeAgo(0)}, claim_token = ?, claimed_by = 'worker-1',
         last_error = 'broker said no', processed_at = ${database.timeAgo(500)} WHERE message_id = ?`,
      [randomUUID(), published[0].messageId],
    );
    inboxMessageId = randomUUID();
    await database.sql(
      `INSERT INTO {inbox_message} (consumer, message_id, message_type, biz_key, ordering_key, exchange, routing_key, payload, headers, status, attempts, max_attempts, processed_at)
       VALUES ('Billing.handle', ?, 'order.paid', 'order-1:paid', 'order-1', 'orders', 'order.paid', '{"orderId": 1, oops', '{"x-tenant":"acme"}', 'DONE', 1, 5, ${database.timeAgo(0)})`,
      [inboxMessageId],
    );
  }, timeoutFor(STARTUP_TIMEOUT_MS));

  afterAll(() => app?.close());

  it('reads every column of the published messages through an injected repository', async () => {
    const records = await reader.outbox.find({ order: { id: 'ASC' } });
    const expected = MESSAGES.map((message, i) => ({
      id: expect.stringMatching(/^\d+$/),
      messageId: published[i].messageId,
      type: message.type,
      bizKey: message.bizKey ?? null,
      orderingKey: message.orderingKey ?? null,
      transport: message.transport ?? 'default',
      exchange: message.exchange,
      routingKey: message.routingKey,
      destination: message.destination ?? '',
      payload: message.payload,
      headers: message.headers ?? {},
      status: i === 0 ? MessageStatus.PROCESSING : MessageStatus.PENDING,
      attempts: i === 0 ? 2 : 0,
      maxAttempts: message.maxAttempts ?? 10,
      nextAttemptAt: expect.any(Date),
      claimedAt: i === 0 ? expect.any(Date) : null,
      claimToken: i === 0 ? expect.stringMatching(/^[0-9a-f-]{36}$/) : null,
      claimedBy: i === 0 ? 'worker-1' : null,
      lastError: i === 0 ? 'broker said no' : null,
      createdAt: expect.any(Date),
      processedAt: i === 0 ? expect.any(Date) : null,
    }));
    expect(records).toEqual(expected);
    for (const record of records) {
      expect(Math.abs(record.createdAt.getTime() - publishedAt)).toBeLessThan(CLOCK_SLACK_MS);
      const delay = record.type === 'order.shipped' ? HOUR : 0;
      expect(Math.abs(record.nextAttemptAt.getTime() - record.createdAt.getTime() - delay)).toBeLessThan(CLOCK_SLACK_MS);
    }
    expect(Math.abs(records[0].claimedAt!.getTime() - publishedAt)).toBeLessThan(CLOCK_SLACK_MS);
    expect(Math.abs(records[0].processedAt!.getTime() - (publishedAt - 500))).toBeLessThan(CLOCK_SLACK_MS);
  });

  it('reads the same ids, states and times as the library itself', async () => {
    const listed = (await app.get(OutboxAdmin).listMessages({}, { limit: 10 })).messages.sort((a, b) => Number(a.id) - Number(b.id));
    const records = await reader.outbox.find({ order: { id: 'ASC' } });
    const pick = ({ id, messageId, status, attempts, lastError, createdAt, processedAt, nextAttemptAt, transport, destination }: OutboxMessageRecord) => ({
      id,
      messageId,
      status,
      attempts,
      lastError,
      createdAt,
      processedAt,
      nextAttemptAt,
      transport,
      destination,
    });
    expect(records.map(pick)).toEqual(listed.map((message) => pick(message as unknown as OutboxMessageRecord)));
  });

  it('reads an inbox row with its body as received, even when it is not JSON', async () => {
    const records = await reader.inbox.find();
    expect(records).toEqual([
      {
        id: expect.stringMatching(/^\d+$/),
        consumer: 'Billing.handle',
        messageId: inboxMessageId,
        type: 'order.paid',
        bizKey: 'order-1:paid',
        orderingKey: 'order-1',
        exchange: 'orders',
        routingKey: 'order.paid',
        payload: '{"orderId": 1, oops',
        headers: { 'x-tenant': 'acme' },
        status: MessageStatus.DONE,
        attempts: 1,
        maxAttempts: 5,
        nextAttemptAt: expect.any(Date),
        claimedAt: null,
        claimToken: null,
        claimedBy: null,
        lastError: null,
        createdAt: expect.any(Date),
        processedAt: expect.any(Date),
      },
    ]);
    const [listed] = (await app.get(OutboxAdmin).listInboxMessages()).messages;
    expect([records[0].createdAt, records[0].processedAt, records[0].nextAttemptAt]).toEqual([listed.createdAt, listed.processedAt, listed.nextAttemptAt]);
  });

  it('filters and orders with a query builder', async () => {
    const records = await reader.outbox
      .createQueryBuilder('message')
      .where('message.type = :type', { type: 'order.paid' })
      .andWhere({ status: MessageStatus.PENDING })
      .orderBy('message.id', 'DESC')
      .getMany();
    expect(records.map((record) => record.messageId)).toEqual([published[2].messageId]);
    const paid = await reader.outbox.createQueryBuilder('message').where({ type: 'order.paid' }).orderBy('message.id', 'DESC').getMany();
    expect(paid.map((record) => record.messageId)).toEqual([published[2].messageId, published[0].messageId]);
  });

  it('compares times in a where clause as the database stores them', async () => {
    const delayed = await reader.outbox.find({ where: { nextAttemptAt: MoreThan(new Date(publishedAt + HOUR / 2)) } });
    expect(delayed.map((record) => record.messageId)).toEqual([published[1].messageId]);
    const records = await reader.outbox.find({ order: { id: 'ASC' } });
    const first = records[0].createdAt.getTime();
    const last = Math.max(...records.map((record) => record.createdAt.getTime()));
    // To the millisecond. Stored times may keep microseconds, which a Date drops: a stored time is
    // never before the Date read from it, and before the next millisecond.
    expect(await reader.outbox.countBy({ createdAt: LessThan(new Date(first)) })).toBe(0);
    expect(await reader.outbox.countBy({ createdAt: MoreThanOrEqual(new Date(first)) })).toBe(3);
    expect(await reader.outbox.countBy({ createdAt: LessThan(new Date(last + 1)) })).toBe(3);
    expect(await reader.outbox.countBy({ createdAt: MoreThan(new Date(last + 1)) })).toBe(0);
  });

  it('refuses inserts and updates through the read model', async () => {
    const [record] = await reader.outbox.findBy({ messageId: published[1].messageId });
    await expect(reader.outbox.update({ id: record.id }, { status: MessageStatus.DONE })).rejects.toThrow();
    await expect(reader.outbox.insert({ ...record, id: undefined, messageId: randomUUID() } as never)).rejects.toThrow();
    await expect(reader.outbox.findOneByOrFail({ id: record.id })).resolves.toEqual(record);
    expect(await reader.outbox.count()).toBe(3);
  });

  it(
    'reads the same instants in a process whose time zone is not UTC, whatever its MariaDB/MySQL timezone setting',
    async () => {
      const mysql = database.kind === 'mariadb' || database.kind === 'mysql';
      const variants = mysql ? [{}, { timezone: 'local' }, { timezone: '+02:00' }, { dateStrings: true }] : [{}];
      const args = JSON.stringify({ kind: database.kind, name: database.name, variants, dueAfter: publishedAt + HOUR / 2 });
      const { stdout } = await promisify(execFile)(process.execPath, ['-r', 'ts-node/register/transpile-only', '-e', CHILD_READER, args], {
        cwd: ROOT,
        env: { ...process.env, TZ: 'America/New_York', TS_NODE_PROJECT: resolve(ROOT, 'tsconfig.json') },
        timeout: STARTUP_TIMEOUT_MS,
      });
      const child = JSON.parse(stdout);
      expect(child.offsets).toEqual([300, 240]);
      const expected = JSON.parse(JSON.stringify({ outbox: await reader.outbox.find({ order: { id: 'ASC' } }), inbox: await reader.inbox.find() }));
      for (const reading of child.readings) {
        expect({ options: reading.options, outbox: reading.outbox, inbox: reading.inbox }).toEqual({ options: reading.options, ...expected });
        expect(reading.due).toEqual([expected.outbox[1].id]);
      }
      // Only the process's own zone leaves times it cannot read back: those of the hour daylight saving skips.
      const warned = child.readings.filter((reading: { warning?: string }) => reading.warning).map((reading: { options: object }) => reading.options);
      expect(warned).toEqual(mysql ? [{ timezone: 'local' }, { dateStrings: true }] : []);
    },
    timeoutFor(STARTUP_TIMEOUT_MS),
  );

  describe('beside the tables of a module with other table names', () => {
    let custom: INestApplicationContext;
    let customMessageId: string;

    beforeAll(async () => {
      custom = await createTestApp({
        database,
        outbox: { dispatcherEnabled: false },
        statics: { transport: CapturingOutboxTransport, ...CUSTOM },
        dataSource: { entities: outboxEntities(CUSTOM) },
      });
      const customData = custom.get(DataSource);
      fitReadModels(customData, CUSTOM);
      ({ messageId: customMessageId } = await customData.transaction((manager) =>
        custom.get(OutboxService).publish({ type: 'invoice.sent', payload: { invoice: 7 }, exchange: 'billing' }, { manager }),
      ));
    }, timeoutFor(STARTUP_TIMEOUT_MS));

    afterAll(() => custom?.close());

    it('reads each table through its own entity, in one DataSource', async () => {
      const customData = custom.get(DataSource);
      const names = customData.entityMetadatas.map((metadata) => metadata.name);
      expect(new Set(names)).toEqual(
        new Set([
          'TestOrder',
          'TestEffect',
          'OutboxMessageRecord_outbox_message',
          'InboxMessageRecord_inbox_message',
          'OutboxMessageRecord_rm_outbox',
          'InboxMessageRecord_rm_inbox',
        ]),
      );
      const customOutbox = await customData.getRepository(outboxMessageEntity(CUSTOM.tableName)).find();
      expect(customOutbox.map(({ messageId, type, payload, createdAt }) => ({ messageId, type, payload, createdAt: createdAt instanceof Date }))).toEqual([
        { messageId: customMessageId, type: 'invoice.sent', payload: { invoice: 7 }, createdAt: true },
      ]);
      expect(await customData.getRepository(inboxMessageEntity(CUSTOM.inboxTableName)).count()).toBe(0);
      expect(await customData.getRepository(outboxMessageEntity()).count()).toBe(MESSAGES.length);
    });

    it('gives the same entity for the same table name, and another for another', () => {
      expect(outboxMessageEntity(CUSTOM.tableName)).toBe(outboxEntities(CUSTOM)[0]);
      expect(outboxMessageEntity(CUSTOM.tableName)).not.toBe(outboxMessageEntity());
      expect(() => outboxMessageEntity('outbox; DROP TABLE x')).toThrow(/tableName must be a plain SQL identifier/);
    });
  });

  describe('under synchronize and migration:generate', () => {
    const TABLES = ['outbox_message', 'inbox_message', CUSTOM.tableName, CUSTOM.inboxTableName];

    beforeAll(async () => {
      // TypeORM reads the expression of a generated column (the MySQL/MariaDB outbox's
      // unfinished_ordering_key, schema version 4) from a metadata table of its own, which it
      // creates only for generated columns it made. Reading the tables without entities below
      // needs it; synchronize and migration:generate never read the library's tables (the test
      // after this one), so applications do not.
      if (database.kind === 'mariadb' || database.kind === 'mysql') {
        await database.sql(
          'CREATE TABLE IF NOT EXISTS {typeorm_metadata} (`type` varchar(255) NOT NULL, `database` varchar(255) NULL, `schema` varchar(255) NULL, `table` varchar(255) NULL, `name` varchar(255) NULL, `value` text NULL)',
        );
      }
    });

    it("leaves the tables exactly as the library's DDL made them", async () => {
      // Read without entities: TypeORM reports some column lengths by what an entity declares.
      const shapes = () => withDataSource({ entities: [] }, (dataSource) => Promise.all(TABLES.map((table) => tableShape(dataSource, table))));
      const before = await shapes();
      await withDataSource({ synchronize: true }, async () => undefined);
      expect(await shapes()).toEqual(before);
    });

    it('has no statement touching the tables in the schema diff migration:generate writes', async () => {
      const { upQueries, downQueries } = await withDataSource({}, (dataSource) => dataSource.driver.createSchemaBuilder().log());
      const statements = [...upQueries, ...downQueries].map((query) => query.query);
      expect(statements.filter((statement) => TABLES.some((table) => statement.includes(table)))).toEqual([]);
    });

    it('would have statements for them, were the entities synchronised (the check above can fail)', async () => {
      const synchronised = new EntitySchema({ ...outboxMessageEntity().options, name: 'SynchronisedOutbox', synchronize: true });
      const { upQueries } = await withDataSource({ entities: [synchronised] }, (dataSource) => dataSource.driver.createSchemaBuilder().log());
      expect(upQueries.some((query) => query.query.includes('outbox_message'))).toBe(true);
    });
  });
});
