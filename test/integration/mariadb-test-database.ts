import { createConnection, Connection } from 'mysql2/promise';
import { DataSource, DataSourceOptions } from 'typeorm';
import { MysqlClaimStrategy } from '../../lib/dialects/mysql/mysql-claim';
import { MysqlDialect } from '../../lib/dialects/mysql/mysql.dialect';
import { detectMysqlServer } from '../../lib/dialects/mysql/mysql-server';
import { resolveDialect } from '../../lib/dialects/resolve-dialect';
import { NewOutboxRow } from '../../lib/message/validate-message';
import { outboxRow } from '../support/dialect-rows';
import { createDialectTables, DialectTables, OUTBOX_TABLE } from '../support/dialect-tables';

export { inboxRow, outboxRow } from '../support/dialect-rows';
export { INBOX_TABLE, OUTBOX_TABLE, publish } from '../support/dialect-tables';
export type { DialectTables } from '../support/dialect-tables';

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

/**
 * Opens `database` with the tables created as `synchronize` does, through `resolveDialect`, or
 * with `claimStrategy` forced.
 */
export async function openWithTables(
  database: string,
  options: { claimStrategy?: MysqlClaimStrategy; dataSource?: Partial<DataSourceOptions> } = {},
): Promise<DialectTables> {
  const dataSource = await openMariadb(database, options.dataSource);
  const dialect = options.claimStrategy ? new MysqlDialect(await detectMysqlServer(dataSource), options.claimStrategy) : await resolveDialect(dataSource);
  return createDialectTables(dataSource, dialect);
}

/** Many PENDING outbox rows at once, without a round trip each. */
export async function publishMany(tables: DialectTables, count: number, row: (index: number) => Partial<NewOutboxRow> = () => ({})): Promise<void> {
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
