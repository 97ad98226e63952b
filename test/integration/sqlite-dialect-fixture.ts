import { Logger } from '@nestjs/common';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DataSource } from 'typeorm';
import { DatabaseDialect } from '../../lib/dialects/database-dialect';
import { InboxDialect, InboxRow } from '../../lib/dialects/inbox-dialect';
import { OutboxDialect } from '../../lib/dialects/outbox-dialect';
import { qualifiedTable, resolveDialect } from '../../lib/dialects/resolve-dialect';
import { NewOutboxRow } from '../../lib/message/validate-message';
import { createTablesAtStartup } from '../../lib/schema/create-tables-at-startup';

// Start-up creation logs at debug level for every database these tests open.
Logger.overrideLogger(['error', 'warn']);

/**
 * These files test the SQLite dialect itself, whatever database the rest of the suite runs on:
 * where the suite runs once per database, they run in the SQLite run only.
 */
const suiteDatabase = (globalThis as { TEST_DATABASE?: unknown }).TEST_DATABASE ?? process.env.TEST_DATABASE;
export function describeSqlite(name: string, tests: () => void): void {
  (suiteDatabase === undefined || suiteDatabase === 'sqlite' ? describe : describe.skip)(name, tests);
}

export const OUTBOX_TABLE = 'outbox_message';
export const INBOX_TABLE = 'inbox_message';

/** A directory of its own under the system's temp directory, for database files. */
export function tempDirectory(): { path: string; file(name: string): string; remove(): void } {
  const path = mkdtempSync(join(tmpdir(), 'nestjs-outbox-sqlite-'));
  return { path, file: (name) => join(path, name), remove: () => rmSync(path, { recursive: true, force: true }) };
}

/** A better-sqlite3 DataSource on `file`, as the library recommends it for files: WAL and a busy timeout. */
export async function openSqlite(file: string, options: { synchronize?: boolean; timeout?: number; migrations?: (new () => unknown)[] } = {}): Promise<DataSource> {
  const dataSource = new DataSource({
    type: 'better-sqlite3',
    database: file,
    enableWAL: true,
    timeout: options.timeout ?? 5_000,
    synchronize: options.synchronize ?? true,
    migrations: options.migrations as never,
  });
  return dataSource.initialize();
}

/** The dialect of a DataSource with the library's tables created at start-up, as `synchronize` does. */
export interface SqliteTables {
  dataSource: DataSource;
  dialect: DatabaseDialect;
  outbox: OutboxDialect;
  inbox: InboxDialect;
}

export async function openWithTables(file: string, options: { timeout?: number } = {}): Promise<SqliteTables> {
  const dataSource = await openSqlite(file, { timeout: options.timeout });
  const dialect = await resolveDialect(dataSource);
  await createTablesAtStartup(dataSource, dialect, { outbox: OUTBOX_TABLE, inbox: INBOX_TABLE });
  return {
    dataSource,
    dialect,
    outbox: dialect.outbox(qualifiedTable(dataSource, OUTBOX_TABLE)),
    inbox: dialect.inbox(qualifiedTable(dataSource, INBOX_TABLE)),
  };
}

export function outboxRow(overrides: Partial<NewOutboxRow> = {}): NewOutboxRow {
  return {
    messageId: randomUUID(),
    type: 'test.event',
    bizKey: null,
    orderingKey: null,
    exchange: 'test',
    routingKey: 'test.event',
    payload: '{"n":1}',
    headers: '{"h":"v"}',
    maxAttempts: 3,
    ...overrides,
  };
}

export function inboxRow(overrides: Partial<InboxRow> = {}): InboxRow {
  return {
    consumer: 'consumer-a',
    messageId: randomUUID(),
    type: 'test.event',
    bizKey: null,
    orderingKey: null,
    exchange: 'test',
    routingKey: 'test.event',
    payload: '{"n":1}',
    headers: '{}',
    maxAttempts: 3,
    ...overrides,
  };
}

/** Inserts outbox rows in one committed transaction, as `OutboxService.publish` would. */
export async function publish(tables: SqliteTables, ...rows: NewOutboxRow[]): Promise<void> {
  await tables.dataSource.transaction(async (manager) => {
    for (const row of rows) await tables.outbox.insert(manager, row);
  });
}

/** The stored row of an outbox message (read with no transaction open). */
export async function outboxState(dataSource: DataSource, messageId: string): Promise<Record<string, any> | undefined> {
  const rows = await dataSource.query(`SELECT * FROM "${OUTBOX_TABLE}" WHERE message_id = ?`, [messageId]);
  return rows[0];
}

/** Watches `promise`: `settled` turns true once it resolves or rejects. */
export function watch<T>(promise: Promise<T>): { promise: Promise<T>; settled: boolean } {
  const watched = { promise, settled: false };
  promise.then(
    () => (watched.settled = true),
    () => (watched.settled = true),
  );
  return watched;
}

export const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));
