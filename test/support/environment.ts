import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** Where the real services are; CI and developers override through the environment. */
export const POSTGRES_URL = process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
export const MARIADB_URL = process.env.MARIADB_URL ?? 'mysql://root@127.0.0.1:3306/test';
export const AMQP_URL = process.env.AMQP_URL ?? 'amqp://guest:guest@127.0.0.1:5672';
/** Where SQLite test databases live, one file per test file. */
export const SQLITE_DIRECTORY = process.env.SQLITE_DIR ?? join(tmpdir(), 'nestjs-outbox-tests');

/**
 * The MySQL 8 server: `MYSQL_URL` when given, else the container the `integration:mysql8`
 * project's global setup started (it sets `MYSQL_URL` before the test processes start).
 */
export function mysqlUrl(): string {
  const url = process.env.MYSQL_URL;
  if (!url) throw new Error('MYSQL_URL is not set: MySQL 8 tests run in the integration:mysql8 project, which starts a server or takes MYSQL_URL');
  return url;
}
