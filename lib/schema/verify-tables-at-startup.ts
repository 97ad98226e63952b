import { DataSource } from 'typeorm';
import { DatabaseDialect } from '../dialects/database-dialect';
import { TableKind } from '../dialects/index-names';
import { OutboxSchemaError } from '../errors';
import { TableNames } from '../options/table-names';
import { isOutboxV1, tableColumns, withQueryRunner } from './outbox-schema-version';
import { tableShapeProblem } from './table-shape';

/**
 * Fails the start-up, naming each table and what to do, when a table lacks the library's columns
 * or (without `synchronize`, which creates or upgrades it next) does not exist or is of an older
 * schema version: otherwise the first publish or claim would fail with a raw "column does not
 * exist", or dispatchers would log a missing table forever. Runs before start-up creation, which
 * must never add its indexes to a table of another shape. One catalog query per table.
 */
export async function verifyTablesAtStartup(dataSource: DataSource, dialect: DatabaseDialect, tables: TableNames): Promise<void> {
  const synchronizes = Boolean(dataSource.options.synchronize);
  const problems = await withQueryRunner(dataSource, async (runner) => {
    const found: string[] = [];
    for (const [kind, table] of [
      ['outbox', tables.outbox],
      ['inbox', tables.inbox],
    ] as [TableKind, string][]) {
      const columns = await tableColumns(runner, dialect, table);
      if (synchronizes && (columns.size === 0 || (kind === 'outbox' && isOutboxV1(columns)))) continue;
      const problem = tableShapeProblem(kind, table, [...columns]);
      if (problem) found.push(problem);
    }
    return found;
  });
  if (problems.length > 0) throw new OutboxSchemaError(problems);
}
