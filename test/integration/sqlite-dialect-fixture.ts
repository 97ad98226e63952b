import { Logger } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { InboxRow } from '../../lib/dialects/inbox-dialect';
import { resolveDialect } from '../../lib/dialects/resolve-dialect';
import { NewOutboxRow } from '../../lib/message/validate-message';
import { inboxRow as sharedInboxRow, outboxRow as sharedOutboxRow } from '../support/dialect-rows';
import { createDialectTables, DialectTables, OUTBOX_TABLE } from '../support/dialect-tables';

export { INBOX_TABLE, OUTBOX_TABLE, publish } from '../support/dialect-tables';
export type { DialectTables } from '../support/dialect-tables';

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

/** A better-sqlite3 DataSource on `file`, as the library recommends it for files: WAL and a busy timeout. */
export async function openSqlite(
  file: string,
  options: { synchronize?: boolean; timeout?: number; migrations?: (new () => unknown)[] } = {},
): Promise<DataSource> {
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

/** A DataSource on `file` with the library's tables created at start-up, as `synchronize` does. */
export async function openWithTables(file: string, options: { timeout?: number } = {}): Promise<DialectTables> {
  const dataSource = await openSqlite(file, { timeout: options.timeout });
  return createDialectTables(dataSource, await resolveDialect(dataSource));
}

/** An outbox row with these tests' defaults: a budget of three attempts, and headers a claim must give back. */
export function outboxRow(overrides: Partial<NewOutboxRow> = {}): NewOutboxRow {
  return sharedOutboxRow({ headers: '{"h":"v"}', maxAttempts: 3, ...overrides });
}

/** An inbox row with these tests' defaults: consumer-a, and a budget of three attempts. */
export function inboxRow(overrides: Partial<InboxRow> = {}): InboxRow {
  return sharedInboxRow({ consumer: 'consumer-a', maxAttempts: 3, ...overrides });
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
