import { createConnection, Connection } from 'mysql2/promise';
import { randomUUID } from 'node:crypto';
import { DataSource, DataSourceOptions } from 'typeorm';
import { DatabaseDialect } from '../../lib/dialects/database-dialect';
import { InboxDialect, InboxRow } from '../../lib/dialects/inbox-dialect';
import { MysqlClaimStrategy } from '../../lib/dialects/mysql/mysql-claim';
import { MysqlDialect } from '../../lib/dialects/mysql/mysql.dialect';
import { detectMysqlServer } from '../../lib/dialects/mysql/mysql-server';
import { OutboxDialect } from '../../lib/dialects/outbox-dialect';
import { qualifiedTable, resolveDialect } from '../../lib/dialects/resolve-dialect';
import { NewOutboxRow } from '../../lib/message/validate-message';
import { createTablesAtStartup } from '../../lib/schema/create-tables-at-startup';

const project = process.env.TEST_DATABASE;

/**
 * The server these tests drive the MySQL/MariaDB dialect on: MariaDB (MARIADB_URL), or MySQL 8
 * (MYSQL_URL) in the integration:mysql8 project. Each test file makes its own database on it.
 */
export const SERVER =
  project === 'mysql'
    ? { name: 'MySQL 8', flavor: 'mysql', url: process.env.MYSQL_URL ?? '', variable: 'MYSQL_URL' }
    : { name: 'MariaDB', flavor: 'mariadb', url: process.env.MARIADB_URL ?? 'mysql://root@127.0.0.1:3306/test', variable: 'MARIADB_URL' };

/**
 * `describe` in the projects on MySQL or MariaDB (or outside any project); elsewhere (the
 * postgres and sqlite projects) the file is skipped, as its title says.
 */
export function describeOnMysql(title: string, body: () => void): void {
  if (project === undefined || project === 'mariadb' || project === 'mysql' || project === 'all') describe(title, body);
  else describe.skip(`${title} (runs in the integration:mariadb and integration:mysql8 projects only)`, body);
}

export const OUTBOX_TABLE = 'outbox_message';
export const INBOX_TABLE = 'inbox_message';

/** The server's URL, pointing at `database`. */
export function mariadbUrl(database: string): string {
  const url = new URL(SERVER.url);
  url.pathname = `/${database}`;
  return url.toString();
}

/** A plain mysql2 session, outside TypeORM: another client holding locks, or running admin SQL. */
export async function openSession(database?: string): Promise<Connection> {
  try {
    return await createConnection({ uri: database ? mariadbUrl(database) : SERVER.url, connectTimeout: 5_000 });
  } catch (error) {
    throw new Error(`${SERVER.name} does not answer at ${SERVER.url || '(unset)'} (set ${SERVER.variable}): ${(error as Error).message}`);
  }
}

/** Drops and creates `database`: each test file owns one. */
export async function recreateDatabase(database: string): Promise<void> {
  const session = await openSession();
  try {
    await session.query(`DROP DATABASE IF EXISTS \`${database}\``);
    await session.query(`CREATE DATABASE \`${database}\``);
  } finally {
    await session.end();
  }
}

export async function dropDatabase(database: string): Promise<void> {
  const session = await openSession();
  try {
    await session.query(`DROP DATABASE IF EXISTS \`${database}\``);
  } finally {
    await session.end();
  }
}

/** A TypeORM DataSource of type `mariadb` (or `mysql`, on MySQL) on `database`. */
export function openMariadb(database: string, options: Partial<DataSourceOptions> = {}): Promise<DataSource> {
  return new DataSource({ type: SERVER.flavor, url: mariadbUrl(database), synchronize: true, ...options } as DataSourceOptions).initialize();
}

/** A DataSource with the library's tables created at start-up, and its dialects. */
export interface MariadbTables {
  dataSource: DataSource;
  dialect: DatabaseDialect;
  outbox: OutboxDialect;
  inbox: InboxDialect;
}

/**
 * Opens `database` with the tables created as `synchronize` does, through `resolveDialect`, or
 * with `claimStrategy` forced.
 */
export async function openWithTables(database: string, options: { claimStrategy?: MysqlClaimStrategy; dataSource?: Partial<DataSourceOptions> } = {}): Promise<MariadbTables> {
  const dataSource = await openMariadb(database, options.dataSource);
  const dialect = options.claimStrategy ? new MysqlDialect(await detectMysqlServer(dataSource), options.claimStrategy) : await resolveDialect(dataSource);
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
    headers: '{}',
    maxAttempts: 5,
    ...overrides,
  };
}

export function inboxRow(overrides: Partial<InboxRow> = {}): InboxRow {
  return {
    consumer: 'Consumer.handle',
    messageId: randomUUID(),
    type: 'test.event',
    bizKey: null,
    orderingKey: null,
    exchange: 'test',
    routingKey: 'test.event',
    payload: '{"n":1}',
    headers: '{}',
    maxAttempts: 5,
    ...overrides,
  };
}

/** Publishes rows in one committed transaction; true per row stored. */
export async function publish(tables: MariadbTables, ...rows: NewOutboxRow[]): Promise<boolean[]> {
  return tables.dataSource.transaction(async (manager) => {
    const stored: boolean[] = [];
    for (const row of rows) stored.push(await tables.outbox.insert(manager, row));
    return stored;
  });
}

/** Many PENDING outbox rows at once, without a round trip each. */
export async function publishMany(tables: MariadbTables, count: number, row: (index: number) => Partial<NewOutboxRow> = () => ({})): Promise<void> {
  const chunk = 500;
  for (let start = 0; start < count; start += chunk) {
    const rows = Array.from({ length: Math.min(chunk, count - start) }, (_, i) => outboxRow(row(start + i)));
    await tables.dataSource.query(
      `INSERT INTO \`${OUTBOX_TABLE}\` (message_id, message_type, biz_key, ordering_key, exchange, routing_key, payload, headers, status, max_attempts, next_attempt_at, created_at)
       VALUES ${rows.map(() => `(?, ?, ?, ?, ?, ?, ?, ?, 'PENDING', ?, UTC_TIMESTAMP(6), UTC_TIMESTAMP(6))`).join(', ')}`,
      rows.flatMap((r) => [r.messageId, r.type, r.bizKey, r.orderingKey, r.exchange, r.routingKey, r.payload, r.headers, r.maxAttempts]),
    );
  }
}

export const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));
