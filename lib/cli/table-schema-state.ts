import { FilteredTable } from '../admin/message-filter-validation';
import { TableKind } from '../naming/index-names';
import { isOutboxV1, LATEST_OUTBOX_VERSION, tableColumns, usableOutboxVersion, withQueryRunner } from '../schema/outbox-schema-version';
import { TABLE_COLUMNS } from '../schema/table-columns';
import { CliConnection } from './cli-connection';
import { suggestedCommand } from './cli-format';

/**
 * Where a table stands: `current` has every column the library uses, at the latest version;
 * `upgradable` works as it is (an outbox table of schema version 2 or 3 where a later version
 * changes something), and `migrate` upgrades it; `behind` is an outbox table of schema version 1, which
 * the library cannot use until `migrate` upgrades it; `unrecognised` exists but lacks columns
 * another way (a table of the application's), which no command touches.
 */
export type SchemaState = 'current' | 'upgradable' | 'behind' | 'missing' | 'unrecognised';

/** Whether the library can use a table in `state` as it is. */
export function isUsable(state: SchemaState): boolean {
  return state === 'current' || state === 'upgradable';
}

/** One of the library's tables as the database's catalog shows it. */
export interface TableSchema {
  kind: TableKind;
  table: string;
  state: SchemaState;
  /** The outbox's schema version (1 to `LATEST_OUTBOX_VERSION`), the inbox's (1: it has had one); null when missing or unrecognised. */
  version: number | null;
  /** The library's columns an unrecognised table lacks. */
  missingColumns: string[];
}

/** Both tables' schema, one catalog query each. */
export async function readTableSchemas(connection: CliConnection): Promise<{ outbox: TableSchema; inbox: TableSchema }> {
  return withQueryRunner(connection.dataSource, async (runner) => {
    const read = async (kind: TableKind, table: string) => {
      const columns = await tableColumns(runner, connection.dialect, table);
      const schema = tableSchema(kind, table, columns);
      if (schema.state !== 'current' || kind !== 'outbox') return schema;
      const version = await usableOutboxVersion(runner, connection.dialect, table, columns);
      return version < LATEST_OUTBOX_VERSION ? { ...schema, state: 'upgradable' as const, version } : schema;
    };
    return { outbox: await read('outbox', connection.tables.outbox), inbox: await read('inbox', connection.tables.inbox) };
  });
}

function tableSchema(kind: TableKind, table: string, columns: Set<string>): TableSchema {
  if (columns.size === 0) return { kind, table, state: 'missing', version: null, missingColumns: [] };
  if (kind === 'outbox' && isOutboxV1(columns)) return { kind, table, state: 'behind', version: 1, missingColumns: [] };
  const missingColumns = TABLE_COLUMNS[kind].filter((column) => !columns.has(column));
  if (missingColumns.length > 0) return { kind, table, state: 'unrecognised', version: null, missingColumns };
  return { kind, table, state: 'current', version: kind === 'outbox' ? LATEST_OUTBOX_VERSION : 1, missingColumns: [] };
}

/** What is wrong with a table that is not `current`, for a person, naming the table. */
export function schemaProblem(schema: TableSchema): string | undefined {
  switch (schema.state) {
    case 'current':
    case 'upgradable':
      return undefined;
    case 'missing':
      return `the ${schema.kind} table ${schema.table} does not exist`;
    case 'behind':
      return `the outbox table ${schema.table} is of schema version 1: version 2 adds the transport and destination columns`;
    case 'unrecognised':
      return (
        `the table ${schema.table} exists but is not an ${schema.kind} table (no column ${schema.missingColumns.join(', ')}):` +
        ` name the library's table with ${schema.kind === 'outbox' ? '--table' : '--inbox-table'}, or move yours out of the way`
      );
  }
}

/**
 * Fails, saying what to run, unless the table a command reads or changes has every column the
 * library's statements use: otherwise the database would answer with a raw "no such column".
 */
export async function requireReadyTable(connection: CliConnection, table: FilteredTable): Promise<void> {
  const schema = (await readTableSchemas(connection))[table];
  const problem = schemaProblem(schema);
  if (!problem) return;
  const fix = schema.state === 'unrecognised' ? '' : `: run ${suggestedCommand('migrate', connection)}`;
  throw new Error(`${problem}${fix}`);
}
