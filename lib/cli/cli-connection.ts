import { DataSource } from 'typeorm';
import { DatabaseDialect } from '../dialects/database-dialect';
import { InboxDialect } from '../dialects/inbox-dialect';
import { OutboxDialect } from '../dialects/outbox-dialect';
import { qualifiedTable, resolveDialect } from '../dialects/resolve-dialect';
import { TableNames } from '../naming/table-names';
import { dataSourceFileOption, tableNamesOption } from './cli-arguments';
import { OptionValues } from './cli-command';
import { CliUsageError } from './cli-usage.error';
import { outboxStatementsVersion } from '../schema/outbox-schema-version';
import { loadDataSourceFile } from './data-source-file';

/** An open DataSource, its dialect and the two tables a command works on. */
export interface CliConnection {
  /** The DataSource file as given, for the commands the output suggests. */
  file: string;
  dataSource: DataSource;
  dialect: DatabaseDialect;
  tables: TableNames;
  outbox: OutboxDialect;
  inbox: InboxDialect;
}

/**
 * Runs `work` on the DataSource of the `-d` file, initialized for it and destroyed afterwards
 * whatever happens. As TypeORM's CLI does, the DataSource's own schema-changing options
 * (`synchronize`, `migrationsRun`, `dropSchema`) are turned off: only the command changes
 * anything. Its logging is too, so that stdout carries only the command's output.
 */
export async function withConnection<T>(values: OptionValues, work: (connection: CliConnection) => Promise<T>): Promise<T> {
  const file = dataSourceFileOption(values);
  if (file === undefined) throw new CliUsageError('-d <data-source file> is required: the file exporting your TypeORM DataSource');
  const tables = tableNamesOption(values);
  const dataSource = await loadDataSourceFile(file);
  try {
    if (!dataSource.isInitialized) {
      dataSource.setOptions({ synchronize: false, migrationsRun: false, dropSchema: false, subscribers: [], logging: false });
      try {
        await dataSource.initialize();
      } catch (error) {
        throw new Error(`cannot connect through the DataSource of ${file}: ${(error as Error).message}`, { cause: error });
      }
    }
    const dialect = await resolveDialect(dataSource);
    dialect.guardConnections?.(dataSource);
    const outbox = dialect.outbox(qualifiedTable(dataSource, tables.outbox), await outboxStatementsVersion(dataSource, dialect, tables.outbox));
    const inbox = dialect.inbox(qualifiedTable(dataSource, tables.inbox));
    return await work({ file, dataSource, dialect, tables, outbox, inbox });
  } finally {
    if (dataSource.isInitialized) await dataSource.destroy();
  }
}
