import { Logger } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { DatabaseDialect } from '../dialects/database-dialect';
import { archiveTableName, TableKind } from '../naming/index-names';
import { qualifiedTable } from '../dialects/resolve-dialect';
import { OutboxSchemaError } from '../errors';
import { tableNameOption, TableNames } from '../naming/table-names';
import { tableColumns, withQueryRunner } from './outbox-schema-version';
import { archiveColumns } from './table-columns';

/**
 * Archive mode's start-up (`retentionMode: 'archive'`), after the tables themselves are ready:
 * creates a missing archive table under `synchronize`; without it, fails the start-up naming the
 * migration to run, rather than letting every retention run fail on a missing table while the
 * finished rows pile up. An archive table lacking columns fails it either way.
 */
export async function prepareArchiveTablesAtStartup(dataSource: DataSource, dialect: DatabaseDialect, tables: TableNames): Promise<void> {
  const synchronizes = Boolean(dataSource.options.synchronize);
  const created: string[] = [];
  const problems = await withQueryRunner(dataSource, async (runner) => {
    const found: string[] = [];
    for (const [kind, table] of [
      ['outbox', tables.outbox],
      ['inbox', tables.inbox],
    ] as [TableKind, string][]) {
      const archive = archiveTableName(table);
      const columns = await tableColumns(runner, dialect, archive);
      if (columns.size === 0 && synchronizes) {
        // Another process may create it meanwhile: every statement is a no-op on what exists.
        for (const statement of dialect.schemaSql.archiveTableDdl(kind, { table, quoted: qualifiedTable(dataSource, archive), ifNotExists: true })) {
          await runner.query(statement);
        }
        created.push(archive);
        continue;
      }
      const problem = archiveShapeProblem(kind, table, [...columns], tables);
      if (problem) found.push(problem);
    }
    return found;
  });
  if (problems.length > 0) throw new OutboxSchemaError(problems);
  if (created.length > 0) new Logger('OutboxModule').debug(`Ensured archive tables ${created.join(' and ')}`);
}

/**
 * What is wrong with the archive of the table named for `kind`, given the columns the database
 * lists for it (none: it does not exist), if anything. Extra columns are the user's business.
 */
export function archiveShapeProblem(kind: TableKind, table: string, columns: readonly string[], tables: TableNames): string | undefined {
  const archive = archiveTableName(table);
  const option = tableNameOption(kind);
  if (columns.length === 0) {
    return (
      `retentionMode is 'archive' but the archive table ${JSON.stringify(archive)} of the ${kind} table (${option}) does not exist: create it with` +
      ` createArchiveTablesMigration({ tableName: ${JSON.stringify(tables.outbox)}, inboxTableName: ${JSON.stringify(tables.inbox)} }) in the DataSource's migrations,` +
      ` or let the module create it at start-up with the DataSource's synchronize: true`
    );
  }
  const present = new Set(columns.map((column) => column.toLowerCase()));
  const missing = archiveColumns(kind).filter((column) => !present.has(column));
  if (missing.length === 0) return undefined;
  return (
    `the table ${JSON.stringify(archive)} exists but is not the archive of the ${kind} table (${option}): it has no column ${missing.join(', ')}.` +
    ` If it is a table of your own, rename it or set ${option} to another name`
  );
}
