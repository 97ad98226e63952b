import { archiveNames, derivedNames, TableKind } from './index-names';
import { OutboxOptionsError } from '../errors';

/** Default name of the outbox table. */
export const DEFAULT_OUTBOX_TABLE = 'outbox_message';
/** Default name of the inbox table. */
export const DEFAULT_INBOX_TABLE = 'inbox_message';

/**
 * The longest table name on any database. Each database allows less, as its index names derive
 * from the table name (see `longestTableName`).
 */
export const MAX_TABLE_NAME_LENGTH = 63;

const IDENTIFIER = new RegExp(`^[A-Za-z_][A-Za-z0-9_]{0,${MAX_TABLE_NAME_LENGTH - 1}}$`);

/** The names of the two tables, as the module uses them. */
export interface TableNames {
  outbox: string;
  inbox: string;
}

/** The option that names a table of `kind`, for messages. */
export function tableNameOption(kind: TableKind): 'tableName' | 'inboxTableName' {
  return kind === 'outbox' ? 'tableName' : 'inboxTableName';
}

/**
 * Table names reach SQL text, so only plain identifiers are accepted: configuration must never
 * be a path to SQL injection. ASCII only, so a name has as many bytes as characters.
 */
export function tableNameProblem(option: string, name: unknown): string | undefined {
  if (typeof name === 'string' && IDENTIFIER.test(name)) return undefined;
  return `${option} must be a plain SQL identifier (letters, digits, underscore; at most ${MAX_TABLE_NAME_LENGTH} characters), got ${JSON.stringify(name)}`;
}

/** `name` when it is a plain identifier; otherwise throws `OutboxOptionsError` naming `option`. */
export function assertTableName(option: string, name: string): string {
  const problem = tableNameProblem(option, name);
  if (problem) throw new OutboxOptionsError([problem]);
  return name;
}

/**
 * Why the two tables cannot coexist under these names, if they cannot. Names are compared
 * ignoring case: SQLite, and MariaDB/MySQL on Windows and macOS, take `Outbox` and `outbox` for
 * one table. Index and constraint names derive from the table names and share one namespace per
 * schema on PostgreSQL, so they must differ across the two tables too, as must the archive
 * tables' (reserved whatever `retentionMode`, so that archiving can be turned on later).
 */
export function tableNamesClash(tables: TableNames): string | undefined {
  if (tables.outbox.toLowerCase() === tables.inbox.toLowerCase()) {
    return (
      `tableName and inboxTableName must name two tables, but both are ${JSON.stringify(tables.outbox)}` +
      ' (table names are compared ignoring case, as SQLite and MariaDB/MySQL on Windows and macOS compare them):' +
      ' outbox and inbox rows have different columns and keys. Choose another inboxTableName'
    );
  }
  const outboxNames = new Set(namesFrom('outbox', tables.outbox).map((name) => name.toLowerCase()));
  const shared = namesFrom('inbox', tables.inbox).filter((name) => outboxNames.has(name.toLowerCase()));
  if (shared.length === 0) return undefined;
  return (
    `tableName ${JSON.stringify(tables.outbox)} and inboxTableName ${JSON.stringify(tables.inbox)} would both use the name ${shared.join(', ')}` +
    ' (index, constraint and archive table names derive from the table names, and PostgreSQL keeps them in one namespace with the tables). Choose names that do not overlap'
  );
}

/** The table's name, and every name derived from it: its keys and indexes, its archive table's. */
function namesFrom(kind: TableKind, table: string): string[] {
  return [table, ...derivedNames(kind, table), ...Object.values(archiveNames(table))];
}
