import { OutboxTableMissingError } from '../errors';

/**
 * The table a database error says does not exist, if that is what it says: PostgreSQL's
 * undefined_table (42P01), MySQL and MariaDB's ER_NO_SUCH_TABLE (1146), SQLite's "no such table"
 * (better-sqlite3's own error, or as TypeORM wraps it).
 */
export function missingTable(error: unknown): string | undefined {
  if (!(error instanceof Error)) return undefined;
  const { code, errno } = error as { code?: unknown; errno?: unknown };
  const message = error.message;
  if (code === '42P01') return /relation "([^"]+)" does not exist/.exec(message)?.[1] ?? 'unknown';
  if (code === 'ER_NO_SUCH_TABLE' || errno === 1146) return /Table '([^']+)' doesn't exist/.exec(message)?.[1] ?? 'unknown';
  if (code === 'SQLITE_ERROR') return /no such table: (\S+)/.exec(message)?.[1];
  return undefined;
}

/**
 * `error`, or `OutboxTableMissingError` caused by it when it says a table does not exist. Only for
 * the library's own statements: a missing table there is one of its tables, gone.
 */
export function namingMissingTable(error: unknown): unknown {
  const table = missingTable(error);
  return table === undefined ? error : new OutboxTableMissingError(table, { cause: error });
}
