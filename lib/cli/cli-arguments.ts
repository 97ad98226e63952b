import { parseArgs, ParseArgsConfig } from 'node:util';
import { DEFAULT_INBOX_TABLE, DEFAULT_OUTBOX_TABLE, TableNames, tableNameProblem, tableNamesClash } from '../naming/table-names';
import { CliCommand, OptionValues } from './cli-command';
import { CliUsageError } from './cli-usage.error';

/** The options every command takes. `--dataSource` is TypeORM's CLI spelling of `-d`. */
export const COMMON_OPTIONS: NonNullable<ParseArgsConfig['options']> = {
  'data-source': { type: 'string', short: 'd' },
  dataSource: { type: 'string' },
  table: { type: 'string' },
  'inbox-table': { type: 'string' },
  json: { type: 'boolean' },
  help: { type: 'boolean', short: 'h' },
};

/** The help lines of the common options, for each command's `--help`. */
export const COMMON_OPTIONS_HELP = `Common options:
  -d, --data-source <file>  the file exporting your TypeORM DataSource (.js; .ts with ts-node installed)
  --table <name>            the outbox table (default ${DEFAULT_OUTBOX_TABLE}), as OutboxModule's tableName
  --inbox-table <name>      the inbox table (default ${DEFAULT_INBOX_TABLE}), as OutboxModule's inboxTableName
  --json                    one JSON document on stdout instead of text
  -h, --help                this help`;

/** The command's options from its arguments (everything after the command's name). */
export function parseCommandOptions(command: CliCommand, args: string[]): OptionValues {
  try {
    const { values } = parseArgs({ args, options: { ...COMMON_OPTIONS, ...command.options }, strict: true, allowPositionals: false });
    return values;
  } catch (error) {
    // parseArgs reports a malformed command line as a TypeError with an ERR_PARSE_ARGS_* code.
    if ((error as { code?: string }).code?.startsWith('ERR_PARSE_ARGS')) {
      throw new CliUsageError(`${(error as Error).message} (see nestjs-outbox ${command.name} --help)`);
    }
    throw error;
  }
}

/** A string option's value; undefined when it was not given. */
export function stringOption(values: OptionValues, name: string): string | undefined {
  const value = values[name];
  return typeof value === 'string' ? value : undefined;
}

/** The DataSource file given with `-d` (or `--dataSource`), if any. */
export function dataSourceFileOption(values: OptionValues): string | undefined {
  const short = stringOption(values, 'data-source');
  const typeorm = stringOption(values, 'dataSource');
  if (short !== undefined && typeorm !== undefined && short !== typeorm)
    throw new CliUsageError('give the DataSource file once: -d and --dataSource name two files');
  return short ?? typeorm;
}

/** The two tables the command works on, checked as OutboxModule checks `tableName` and `inboxTableName`. */
export function tableNamesOption(values: OptionValues): TableNames {
  const tables = { outbox: stringOption(values, 'table') ?? DEFAULT_OUTBOX_TABLE, inbox: stringOption(values, 'inbox-table') ?? DEFAULT_INBOX_TABLE };
  const problem = tableNameProblem('--table', tables.outbox) ?? tableNameProblem('--inbox-table', tables.inbox) ?? tableNamesClash(tables);
  if (problem) throw new CliUsageError(problem);
  return tables;
}

/** An integer option, or the text as given (so that the check that refuses it can quote it). */
export function integerOption(values: OptionValues, name: string): number | string | undefined {
  const value = stringOption(values, name);
  return value !== undefined && /^-?\d{1,15}$/.test(value) ? Number(value) : value;
}
