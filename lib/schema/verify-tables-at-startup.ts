import { DataSource } from 'typeorm';
import { DatabaseDialect, TableLocation } from '../dialects/database-dialect';
import { TableKind } from '../dialects/index-names';
import { qualifiedTable } from '../dialects/resolve-dialect';
import { OutboxSchemaError } from '../errors';
import { TableNames } from '../options/table-names';
import { tableShapeProblem } from './table-shape';

/**
 * Fails the start-up, naming each table and what to do, when a table lacks the library's columns
 * or (without `synchronize`, which creates it next) does not exist: otherwise the first publish or
 * claim would fail with a raw "column does not exist", or dispatchers would log a missing table
 * forever. Runs before start-up creation, which must never add its indexes to a table of another
 * shape. One catalog query per table.
 */
export async function verifyTablesAtStartup(dataSource: DataSource, dialect: DatabaseDialect, tables: TableNames): Promise<void> {
  const createsMissingTables = Boolean(dataSource.options.synchronize);
  const runner = dataSource.createQueryRunner();
  const problems: string[] = [];
  try {
    for (const [kind, table] of [['outbox', tables.outbox], ['inbox', tables.inbox]] as [TableKind, string][]) {
      const query = dialect.tableColumnsQuery(tableLocation(dataSource, table));
      const columns = ((await runner.query(query.sql, query.params)) as { name: string }[]).map((row) => row.name);
      if (columns.length === 0 && createsMissingTables) continue;
      const problem = tableShapeProblem(kind, table, columns);
      if (problem) problems.push(problem);
    }
  } finally {
    await runner.release();
  }
  if (problems.length > 0) throw new OutboxSchemaError(problems);
}

function tableLocation(dataSource: DataSource, name: string): TableLocation {
  const schema = (dataSource.driver.options as { schema?: string }).schema;
  return { name, quoted: qualifiedTable(dataSource, name), ...(schema ? { schema } : {}) };
}
