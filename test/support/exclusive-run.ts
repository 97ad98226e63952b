import Database from 'better-sqlite3';
import { createConnection } from 'mysql2/promise';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { Client } from 'pg';
import type { TestDatabase } from './database';
import { MysqlTestDatabase } from './databases/mysql-test-database';
import { POSTGRES_URL, SQLITE_DIRECTORY } from './environment';

/** Tries to take the lock once: true when taken. */
type TryLock = () => Promise<boolean>;

interface Lock {
  tryLock: TryLock;
  release(): Promise<void>;
}

/**
 * Holds a lock named after `database` until the returned function is called, so two runs of the
 * same test file on one machine (two developers, a watch run) take turns instead of dropping each
 * other's namespace and queues. The lock belongs to a connection (or open file) of its own: if
 * the test process dies, it is released.
 */
export async function runExclusively(database: TestDatabase, timeoutMs = 45_000): Promise<() => Promise<void>> {
  const lock = await openLock(database, `nestjs-outbox-test:${database.kind}:${database.name}`);
  const deadline = Date.now() + timeoutMs;
  try {
    while (!(await lock.tryLock())) {
      if (Date.now() > deadline)
        throw new Error(`another run of the tests that use "${database.name}" on ${database.kind} did not finish within ${timeoutMs} ms`);
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
  } catch (error) {
    await lock.release().catch(() => undefined);
    throw error;
  }
  return () => lock.release().catch(() => undefined);
}

async function openLock(database: TestDatabase, name: string): Promise<Lock> {
  switch (database.kind) {
    case 'postgres':
      return postgresAdvisoryLock(name);
    case 'mariadb':
    case 'mysql':
      return mysqlNamedLock(database as MysqlTestDatabase, name);
    case 'sqlite':
      return sqliteFileLock(database.name);
  }
}

async function postgresAdvisoryLock(name: string): Promise<Lock> {
  const client = new Client({ connectionString: POSTGRES_URL });
  await client.connect();
  return {
    tryLock: async () => (await client.query<{ locked: boolean }>(`SELECT pg_try_advisory_lock(hashtext($1)) AS locked`, [name])).rows[0].locked,
    release: () => client.end(),
  };
}

async function mysqlNamedLock(database: MysqlTestDatabase, name: string): Promise<Lock> {
  const connection = await createConnection(database.server);
  return {
    tryLock: async () => {
      const [rows] = await connection.query(`SELECT GET_LOCK(?, 0) AS locked`, [name]);
      return Number((rows as { locked: unknown }[])[0].locked) === 1;
    },
    release: () => connection.end(),
  };
}

/** An exclusive transaction on a lock file next to the database file. */
async function sqliteFileLock(name: string): Promise<Lock> {
  mkdirSync(SQLITE_DIRECTORY, { recursive: true });
  const db = new Database(join(SQLITE_DIRECTORY, `${name}.lock`), { timeout: 0 });
  return {
    tryLock: async () => {
      try {
        db.exec('BEGIN EXCLUSIVE');
        return true;
      } catch (error) {
        if ((error as { code?: string }).code === 'SQLITE_BUSY') return false;
        throw error;
      }
    },
    release: async () => {
      db.close();
    },
  };
}
