import type { TypeOrmModuleOptions } from '@nestjs/typeorm';
import type { ColumnType, FindOptionsWhere } from 'typeorm';

/** Which database the sample runs on: the server `DATABASE_URL` names, or a SQLite file without it. */
export type SampleDatabaseKind = 'postgres' | 'mysql' | 'sqlite';

const DATABASE_URL = process.env.DATABASE_URL;

/** The SQLite file the sample uses when `DATABASE_URL` is unset (`SQLITE_FILE` to move it). */
export const SQLITE_FILE = process.env.SQLITE_FILE ?? 'sample-app.sqlite';

export const SAMPLE_DATABASE_KIND: SampleDatabaseKind = kindOf(DATABASE_URL);

function kindOf(url: string | undefined): SampleDatabaseKind {
  if (url === undefined || url === '') return 'sqlite';
  if (/^postgres(ql)?:/.test(url)) return 'postgres';
  if (/^(mysql|mariadb):/.test(url)) return 'mysql';
  throw new Error(`DATABASE_URL must be a postgres://, mysql:// or mariadb:// URL (or unset for SQLite), got ${url.split(':')[0]}:…`);
}

/**
 * The sample's TypeORM options: PostgreSQL or MySQL/MariaDB at `DATABASE_URL`, or, without it, a
 * SQLite file, so that trying the sample takes only RabbitMQ.
 * `synchronize` is fine for a sample: it creates the sample's tables from their entities, and the
 * library creates its outbox and inbox tables. A real service runs migrations instead (the
 * library ships OUTBOX_MIGRATIONS, which creates both of its tables).
 */
export function sampleDatabaseOptions(): TypeOrmModuleOptions {
  const common = { autoLoadEntities: true, synchronize: true } as const;
  switch (SAMPLE_DATABASE_KIND) {
    case 'postgres':
      return { ...common, type: 'postgres', url: DATABASE_URL };
    case 'mysql':
      return { ...common, type: 'mysql', url: DATABASE_URL!.replace(/^mariadb:/, 'mysql:') };
    case 'sqlite':
      // WAL and a busy timeout: the outbox's own connection and the app's share the file.
      return { ...common, type: 'better-sqlite3', database: SQLITE_FILE, enableWAL: true, timeout: 10_000 };
  }
}

/** The type of the sample's time columns: with its offset on PostgreSQL, the portable `datetime` elsewhere. */
export const TIMESTAMP_COLUMN: ColumnType = SAMPLE_DATABASE_KIND === 'postgres' ? 'timestamptz' : 'datetime';

/**
 * A row lock for read-then-write in one transaction, where the database has row locks. SQLite has
 * none and needs none: it runs one writing transaction at a time.
 */
export function rowLock<T>(where: FindOptionsWhere<T>): { where: FindOptionsWhere<T>; lock?: { mode: 'pessimistic_write' } } {
  return SAMPLE_DATABASE_KIND === 'sqlite' ? { where } : { where, lock: { mode: 'pessimistic_write' } };
}
