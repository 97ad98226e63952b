import { DataSource } from 'typeorm';
import { OutboxError } from '../../errors';
import { DatabaseDialect } from '../database-dialect';
import { InboxDialect } from '../inbox-dialect';
import { OutboxDialect } from '../outbox-dialect';
import { SqliteConnection, sqliteConnectionOf } from './sqlite-connection';
import { SqliteInboxDialect } from './sqlite-inbox.dialect';
import { SqliteOutboxDialect } from './sqlite-outbox.dialect';
import { sqliteSchemaSql } from './sqlite-schema';

/** `->>` (JSON batches) came in 3.38; RETURNING, UPDATE FROM and upserts before it. */
const MIN_VERSION = [3, 38];

/**
 * SQLite through better-sqlite3, for development and tests: one connection per DataSource, so
 * the library's statements run outside the application's transactions on the raw connection,
 * and its own transactions one at a time (see `SqliteConnection`, `SqliteTransactionGate`). For a file shared by several
 * processes, WAL mode (`enableWAL: true`) and a busy timeout (`timeout`) are recommended.
 */
export class SqliteDialect implements DatabaseDialect {
  readonly description: string;
  /** TypeORM holds the one connection; a second one could not see what the application sees without it committing (and `:memory:` databases have no second). */
  readonly opensWorkerPool = false;
  readonly schemaSql = sqliteSchemaSql;

  constructor(
    private readonly connection: SqliteConnection,
    version: string,
  ) {
    this.description = `sqlite ${version}`;
  }

  outbox(quotedTable: string): OutboxDialect {
    return new SqliteOutboxDialect(quotedTable);
  }

  inbox(quotedTable: string): InboxDialect {
    return new SqliteInboxDialect(quotedTable, this.connection.transactionGate);
  }

  runTransactionsOneAtATime<T>(work: () => Promise<T>): Promise<T> {
    return this.connection.transactionGate.run(work);
  }
}

/** SQLite through better-sqlite3; refuses a SQLite library too old for the dialect's SQL. */
export function createSqliteDialect(dataSource: DataSource): DatabaseDialect {
  const connection = sqliteConnectionOf(dataSource);
  const version = connection.version();
  const [major, minor] = version.split('.').map(Number);
  if (major < MIN_VERSION[0] || (major === MIN_VERSION[0] && minor < MIN_VERSION[1])) {
    throw new OutboxError(`nestjs-outbox needs SQLite ${MIN_VERSION.join('.')} or later; better-sqlite3 runs SQLite ${version}`);
  }
  return new SqliteDialect(connection, version);
}
