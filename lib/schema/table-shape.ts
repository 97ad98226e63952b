import { TableKind } from '../naming/index-names';
import { tableNameOption } from '../naming/table-names';
import { OUTBOX_V2_COLUMNS, TABLE_COLUMNS } from './table-columns';

/**
 * What is wrong with the table named for `kind`, given the columns the database lists for it
 * (none: it does not exist), if anything. Column names compare ignoring case, as MariaDB/MySQL
 * and SQLite compare them; extra columns are the user's business.
 */
export function tableShapeProblem(kind: TableKind, table: string, columns: readonly string[]): string | undefined {
  const option = tableNameOption(kind);
  if (columns.length === 0) {
    const migration = kind === 'outbox' ? 'createOutboxTableMigration' : 'createInboxTableMigration';
    return (
      `the ${kind} table ${JSON.stringify(table)} (${option}) does not exist: create it with the library's migrations` +
      ` (OUTBOX_MIGRATIONS, or ${migration}(${JSON.stringify(table)}) for a custom name) in the DataSource's migrations,` +
      ` or let the module create it at start-up with the DataSource's synchronize: true`
    );
  }
  const present = new Set(columns.map((column) => column.toLowerCase()));
  const missing = TABLE_COLUMNS[kind].filter((column) => !present.has(column));
  if (missing.length === 0) return undefined;
  if (kind === 'outbox' && missing.every((column) => OUTBOX_V2_COLUMNS.includes(column))) {
    return (
      `the outbox table ${JSON.stringify(table)} (${option}) is of schema version 1 (no column ${missing.join(', ')}): add the library's` +
      ` upgrade migration to the DataSource's migrations and run them (OUTBOX_MIGRATIONS includes it, or createOutboxTableV2Migration(${JSON.stringify(table)})` +
      ` for a custom name), or let the module upgrade it at start-up with the DataSource's synchronize: true`
    );
  }
  return (
    `the table ${JSON.stringify(table)} (${option}) exists but is not an ${kind} table: it has no column ${missing.join(', ')}.` +
    ` If it is a table of your own, set ${option} to another name; if it is an ${kind} table of an older version, run the library's migrations`
  );
}
