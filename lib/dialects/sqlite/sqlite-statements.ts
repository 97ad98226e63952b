import type BetterSqlite3 from 'better-sqlite3';
import { DataSource, QueryFailedError } from 'typeorm';

/** A row as better-sqlite3 returns it. */
export type SqliteRow = Record<string, any>;

/** Synchronous statements on the raw connection, for work that runs outside any transaction. */
export interface SqliteStatements {
  /** Runs one statement: its rows when it returns rows (SELECT, RETURNING), else []. */
  all(sql: string, params?: unknown[]): SqliteRow[];
  /** Runs `work` as one `BEGIN IMMEDIATE` transaction: it holds the write lock from the start. */
  immediateTransaction<T>(work: () => T): T;
}

/**
 * Statements run directly on the raw better-sqlite3 connection, past TypeORM's query runner but
 * as it runs them: prepared once per connection, logged by the DataSource's logger, failures
 * raised as `QueryFailedError`.
 */
export class RawSqliteStatements {
  private readonly prepared = new WeakMap<BetterSqlite3.Database, Map<string, BetterSqlite3.Statement>>();

  constructor(private readonly dataSource: DataSource) {}

  on(database: BetterSqlite3.Database): SqliteStatements {
    return {
      all: (sql, params = []) => this.run(database, sql, params),
      immediateTransaction: (work) => database.transaction(work).immediate(),
    };
  }

  private run(database: BetterSqlite3.Database, sql: string, params: unknown[]): SqliteRow[] {
    // better-sqlite3 binds no booleans and no undefined.
    const values = params.map((p) => (typeof p === 'boolean' ? (p ? 1 : 0) : p === undefined ? null : p));
    this.dataSource.logger.logQuery(sql, values);
    try {
      const statement = this.prepare(database, sql);
      if (statement.reader) return statement.all(...values) as SqliteRow[];
      statement.run(...values);
      return [];
    } catch (error) {
      this.dataSource.logger.logQueryError(error as Error, sql, values);
      throw new QueryFailedError(sql, values, error as Error);
    }
  }

  private prepare(database: BetterSqlite3.Database, sql: string): BetterSqlite3.Statement {
    let cache = this.prepared.get(database);
    if (!cache) {
      cache = new Map();
      this.prepared.set(database, cache);
    }
    let statement = cache.get(sql);
    if (!statement) {
      statement = database.prepare(sql);
      cache.set(sql, statement);
    }
    return statement;
  }
}
