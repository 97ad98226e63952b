import { FilteredTable } from '../admin/message-filter-validation';
import { CliConnection } from './cli-connection';
import { suggestedCommand } from './cli-format';
import { readTableSchemas, schemaProblem } from './table-schema-state';

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
