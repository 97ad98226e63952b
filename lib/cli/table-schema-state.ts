import { TableKind } from '../dialects/index-names';
import { isOutboxV1, tableColumns, withQueryRunner } from '../schema/outbox-schema-version';
import { TABLE_COLUMNS } from '../schema/table-columns';
import { CliConnection } from './cli-connection';

/** The outbox table's newest schema version, which `migrate` brings it to. */
export const LATEST_OUTBOX_VERSION = 2;

/**
 * Where a table stands: `current` has every column the library uses; `behind` is an outbox
 * table of schema version 1, which `migrate` upgrades; `unrecognised` exists but lacks columns
 * another way (a table of the application's), which no command touches.
 */
export type SchemaState = 'current' | 'behind' | 'missing' | 'unrecognised';

/** One of the library's tables as the database's catalog shows it. */
export interface TableSchema {
  kind: TableKind;
  table: string;
  state: SchemaState;
  /** The outbox's schema version (1 or 2), the inbox's (1: it has had one); null when missing or unrecognised. */
  version: number | null;
  /** The library's columns an unrecognised table lacks. */
  missingColumns: string[];
}

/** Both tables' schema, one catalog query each. */
export async function readTableSchemas(connection: CliConnection): Promise<{ outbox: TableSchema; inbox: TableSchema }> {
  return withQueryRunner(connection.dataSource, async (runner) => {
    const read = async (kind: TableKind, table: string) => tableSchema(kind, table, await tableColumns(runner, connection.dialect, table));
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
      return undefined;
    case 'missing':
      return `the ${schema.kind} table ${schema.table} does not exist`;
    case 'behind':
      return `the outbox table ${schema.table} is of schema version 1: version ${LATEST_OUTBOX_VERSION} adds the transport and destination columns`;
    case 'unrecognised':
      return (
        `the table ${schema.table} exists but is not an ${schema.kind} table (no column ${schema.missingColumns.join(', ')}):` +
        ` name the library's table with ${schema.kind === 'outbox' ? '--table' : '--inbox-table'}, or move yours out of the way`
      );
  }
}
