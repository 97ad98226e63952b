import type { DataSourceOptions, EntityManager } from 'typeorm';
import { MysqlTestDatabase } from './databases/mysql-test-database';
import { PostgresTestDatabase } from './databases/postgres-test-database';
import { SqliteTestDatabase } from './databases/sqlite-test-database';

export type DatabaseKind = 'postgres' | 'mariadb' | 'mysql' | 'sqlite';

export const DATABASE_KINDS: readonly DatabaseKind[] = ['postgres', 'mariadb', 'mysql', 'sqlite'];

/** What the database of a test app is asked for beyond its namespace. */
export interface DataSourceExtras {
  /** Connections in the pool (no pool on SQLite: one connection per process). */
  poolSize?: number;
  /**
   * The name the server knows this app's sessions by, so a test can wait until a killed process's
   * sessions are gone (see `database-sessions.ts`): PostgreSQL's application_name, a MariaDB/MySQL
   * user of that name.
   */
  sessionName?: string;
}

/** A test file's own namespace: a PostgreSQL schema, a MariaDB/MySQL database, an SQLite file. */
export interface TestDatabase {
  readonly kind: DatabaseKind;
  readonly name: string;
  /** TypeORM DataSource options for it (type, url/database/schema, synchronize: true; WAL + busy timeout for SQLite; pool size). No entities. */
  dataSourceOptions(extra?: DataSourceExtras): DataSourceOptions;
  /** Drops and recreates the namespace. */
  reset(): Promise<void>;
  /**
   * Runs SQL on a short-lived connection of its own. `?` placeholders (turned into $1.. on
   * PostgreSQL; an array parameter expands to a list, for `IN (?)`); `{outbox_message}`-style
   * braces are replaced by the quoted, qualified table name.
   */
  sql<T = any>(text: string, params?: unknown[]): Promise<T[]>;
  /** The same portable SQL, on `manager`'s connection (e.g. inside an application's transaction). */
  sqlOn<T = any>(manager: EntityManager, text: string, params?: unknown[]): Promise<T[]>;
  /** Counts rows by status. */
  statusCounts(table?: string): Promise<Record<string, number>>;
  /**
   * An SQL expression for "the database clock minus `ms`" in that database's time representation
   * (PG timestamptz, MariaDB DATETIME(6) UTC, SQLite text 'YYYY-MM-DD HH:MM:SS.SSS' UTC), for
   * tests that age rows.
   */
  timeAgo(ms: number): string;
}

/** From process.env.TEST_DATABASE (set per jest project); default 'postgres'. */
export const DATABASE_KIND: DatabaseKind = readDatabaseKind(process.env.TEST_DATABASE);

export function testDatabase(unprefixed: string, kind: DatabaseKind = DATABASE_KIND): TestDatabase {
  const name = namespaced(unprefixed);
  switch (kind) {
    case 'postgres':
      return new PostgresTestDatabase(name);
    case 'mariadb':
    case 'mysql':
      return new MysqlTestDatabase(name, kind);
    case 'sqlite':
      return new SqliteTestDatabase(name);
  }
}

/**
 * `describe` on the listed databases, `describe.skip` (with the reason in the title) elsewhere —
 * for what only one database has (NOTIFY/LISTEN, pg-specific checks).
 */
export function describeOn(kinds: DatabaseKind[], title: string, body: () => void): void {
  if (kinds.includes(DATABASE_KIND)) describe(title, body);
  else describe.skip(`${title} [skipped on ${DATABASE_KIND}]`, body);
}

/**
 * The test file's namespace with `TEST_NAMESPACE_PREFIX` in front (once: a child process is handed
 * the already-prefixed name), so two checkouts can run their suites on one server at once.
 */
export function namespaced(name: string): string {
  const prefix = process.env.TEST_NAMESPACE_PREFIX ?? '';
  return name.startsWith(prefix) ? name : `${prefix}${name}`;
}

function readDatabaseKind(value: string | undefined): DatabaseKind {
  if (value === undefined || value === '') return 'postgres';
  if ((DATABASE_KINDS as string[]).includes(value)) return value as DatabaseKind;
  throw new Error(`TEST_DATABASE must be one of ${DATABASE_KINDS.join(', ')}, not "${value}"`);
}

// PostgreSQL-only helpers of the schema-migration tests and the benchmarks.
export { freshSchema, sql } from './databases/postgres-schema-helpers';
