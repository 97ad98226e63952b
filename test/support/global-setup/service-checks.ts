import Database from 'better-sqlite3';
import { connect } from 'amqplib';
import { mkdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { createConnection } from 'mysql2/promise';
import { Client } from 'pg';
import { serverAddress } from '../databases/mysql-test-database';
import { AMQP_URL, POSTGRES_URL, SQLITE_DIRECTORY } from '../environment';

/**
 * Fail-fast checks of the services integration tests need, each naming the URL (and the
 * variable) to fix when its service does not answer.
 */

export async function checkRabbitMq(): Promise<void> {
  try {
    const connection = await connect(AMQP_URL);
    await connection.close();
  } catch (error) {
    throw new Error(`RabbitMQ does not answer at ${AMQP_URL} (set AMQP_URL): ${(error as Error).message}`);
  }
}

export async function checkPostgres(): Promise<void> {
  const pg = new Client({ connectionString: POSTGRES_URL, connectionTimeoutMillis: 5_000 });
  try {
    await pg.connect();
    await pg.query('SELECT 1');
  } catch (error) {
    throw new Error(`PostgreSQL does not answer at ${POSTGRES_URL} (set DATABASE_URL): ${(error as Error).message}`);
  } finally {
    await pg.end().catch(() => undefined);
  }
}

/** The server must answer and let the tests create databases and users. */
export async function checkMysql(label: string, url: string, variable: string): Promise<void> {
  try {
    const connection = await createConnection({ ...serverAddress(url), connectTimeout: 5_000 });
    try {
      await connection.query('SELECT 1');
    } finally {
      await connection.end();
    }
  } catch (error) {
    throw new Error(`${label} does not answer at ${url} (set ${variable}): ${(error as Error).message}`);
  }
}

/** better-sqlite3's native module must load, and the directory of the test databases take files. */
export async function checkSqlite(): Promise<void> {
  try {
    mkdirSync(SQLITE_DIRECTORY, { recursive: true });
    const probe = join(SQLITE_DIRECTORY, `.probe-${process.pid}.sqlite`);
    new Database(probe).close();
    rmSync(probe, { force: true });
  } catch (error) {
    throw new Error(`SQLite test databases cannot be created in ${SQLITE_DIRECTORY} (set SQLITE_DIR): ${(error as Error).message}`);
  }
}
