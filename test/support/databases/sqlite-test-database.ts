import Database from 'better-sqlite3';
import { mkdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import type { DataSourceOptions } from 'typeorm';
import { SQLITE_DIRECTORY } from '../environment';
import { BaseTestDatabase } from './base-test-database';

/** How long a connection waits for another process's write lock before SQLITE_BUSY. */
const BUSY_TIMEOUT_MS = 10_000;

/**
 * A database file of its own under the temporary directory, in WAL mode so that several
 * processes (multi-instance and crash tests) share it, each waiting for the write lock in turn.
 */
export class SqliteTestDatabase extends BaseTestDatabase {
  readonly kind = 'sqlite' as const;

  get file(): string {
    return join(SQLITE_DIRECTORY, `${this.name}.sqlite`);
  }

  dataSourceOptions(): DataSourceOptions {
    return { type: 'better-sqlite3', database: this.file, enableWAL: true, timeout: BUSY_TIMEOUT_MS, synchronize: true };
  }

  async reset(): Promise<void> {
    mkdirSync(SQLITE_DIRECTORY, { recursive: true });
    for (const suffix of ['', '-wal', '-shm', '-journal']) rmSync(`${this.file}${suffix}`, { force: true });
    // WAL from the start: switching later needs every other connection closed.
    const db = new Database(this.file, { timeout: BUSY_TIMEOUT_MS });
    try {
      db.pragma('journal_mode = WAL');
    } finally {
      db.close();
    }
  }

  timeAgo(ms: number): string {
    const seconds = `${ms >= 0 ? '-' : '+'}${(Math.abs(ms) / 1000).toFixed(3)}`;
    return `strftime('%Y-%m-%d %H:%M:%f', 'now', '${seconds} seconds')`;
  }

  placeholder(): string {
    return '?';
  }

  table(name: string): string {
    return `"${name}"`;
  }

  protected async run(text: string, params: unknown[]): Promise<unknown[]> {
    const db = new Database(this.file, { timeout: BUSY_TIMEOUT_MS, fileMustExist: true });
    try {
      const statement = db.prepare(text);
      // better-sqlite3 binds no booleans.
      const values = params.map((value) => (typeof value === 'boolean' ? Number(value) : value));
      if (statement.reader) return statement.all(...values);
      statement.run(...values);
      return [];
    } finally {
      db.close();
    }
  }
}
