import { createTableDdl, outboxUpgradeDdl, TableDdl } from '../dialects/schema-sql';
import { MysqlDialect } from '../dialects/mysql/mysql.dialect';
import { qualifiedTable } from '../dialects/resolve-dialect';
import { TableNames } from '../naming/table-names';
import { assertTableNamesFit } from '../schema/table-name-limits';
import { COMMON_OPTIONS_HELP, dataSourceFileOption, integerOption, stringOption, tableNamesOption } from './cli-arguments';
import { CliCommand, ExitCode, OptionValues } from './cli-command';
import { CliConnection, withConnection } from './cli-connection';
import { printJson } from './cli-format';
import { CliUsageError } from './cli-usage.error';
import { DdlSource, DIALECT_NAMES, DialectName, offlineDdlSource } from './offline-ddl';
import { LATEST_OUTBOX_VERSION } from '../schema/outbox-schema-version';

/** What `sql --json` prints. */
export interface SqlScript {
  dialect: DialectName;
  from: number;
  to: number;
  statements: string[];
}

/** `nestjs-outbox sql`: the tables' DDL for a range of schema versions, printed, never run. */
export const sqlCommand: CliCommand = {
  name: 'sql',
  summary: 'print the DDL of the tables for a database, for a range of schema versions',
  options: {
    dialect: { type: 'string' },
    from: { type: 'string' },
    to: { type: 'string' },
    schema: { type: 'string' },
    'server-version': { type: 'string' },
    'if-not-exists': { type: 'boolean' },
  },
  help: `Usage: nestjs-outbox sql --dialect postgres|mysql|mariadb|sqlite [--from 0|1|2|3] [--to 1|2|3|${LATEST_OUTBOX_VERSION}] [options]
       nestjs-outbox sql -d <data-source file> [--from 0|1|2|3] [--to 1|2|3|${LATEST_OUTBOX_VERSION}] [options]

Prints the statements that take the tables from schema version --from to --to: version 1 creates
the outbox table (as createOutboxTableMigration does) and the inbox table; versions 2 to ${LATEST_OUTBOX_VERSION} upgrade
the outbox table (version 3 changes PostgreSQL's only: its one statement replaces the business-key
unique constraint with a unique index over the rows that have a business key; version 4 changes
MySQL's and MariaDB's only: its one ALTER adds a generated column, the ordering key of unfinished
rows, and the ordering index over it).
Default --from 0 --to ${LATEST_OUTBOX_VERSION}: both tables, ready. --from 1 prints only the upgrades.
They are the statements the migrations and migrate run, each ended by ";" and a newline, for a
review, a migration tool of your own, or a pipe into psql, mysql or sqlite3. Nothing is run.

Without -d no connection is made. MySQL and MariaDB statements depend on the server (collation,
expression defaults): they are written for MySQL 8.4 and MariaDB 11.4, the same for every version from
MySQL 8.0.17 and MariaDB 10.2.1 on; give --server-version for an older one. With -d the database
and the server's capabilities are read from the DataSource's connection, and its schema applies.

Options:
  --dialect <name>          postgres, mysql, mariadb or sqlite (with -d: checked against the database)
  --from <version>          the version the tables are at: 0 (none), 1, 2 or 3 (default 0)
  --to <version>            the version to reach: 1 to ${LATEST_OUTBOX_VERSION} (default ${LATEST_OUTBOX_VERSION})
  --schema <name>           qualify the table names with this schema (without -d)
  --server-version <text>   the MySQL or MariaDB server's VERSION(), e.g. 8.0.36 or 10.11.6-MariaDB (without -d)
  --if-not-exists           CREATE ... IF NOT EXISTS, as start-up creation writes them
  (--json prints {"dialect", "from", "to", "statements": [...]} instead of the script)

${COMMON_OPTIONS_HELP}

Examples:
  nestjs-outbox sql --dialect postgres | psql "$DATABASE_URL"
  nestjs-outbox sql --dialect mariadb --from 1 > upgrade-outbox.sql
  nestjs-outbox sql --dialect postgres --from 2 > upgrade-outbox-v3.sql
  nestjs-outbox sql --dialect mysql --from 3 > upgrade-outbox-v4.sql
  nestjs-outbox sql -d dist/data-source.js --table billing_outbox --inbox-table billing_inbox
`,
  async run(values, output) {
    const range = versionRange(values);
    const tables = tableNamesOption(values);
    const ifNotExists = values['if-not-exists'] === true;
    const print = (source: DdlSource) => {
      assertTableNamesFit(source.ddl.identifierLimit, tables);
      const script: SqlScript = { dialect: source.name, ...range, statements: statementsBetween(source, tables, range, ifNotExists) };
      if (values.json) printJson(output, script);
      else output.out(scriptText(source, tables, script));
      return ExitCode.OK;
    };
    const dialect = dialectOption(values);
    if (dataSourceFileOption(values) === undefined) {
      if (dialect === undefined) throw new CliUsageError(`give --dialect (${DIALECT_NAMES.join(', ')}), or -d <data-source file> to read it from the database`);
      return print(offlineDdlSource(dialect, { schema: stringOption(values, 'schema'), serverVersion: stringOption(values, 'server-version') }));
    }
    for (const option of ['schema', 'server-version']) {
      if (values[option] !== undefined) throw new CliUsageError(`--${option} is for sql without -d: with -d the DataSource's options and server say it`);
    }
    return withConnection(values, async (connection) => {
      const source = connectedDdlSource(connection);
      if (dialect !== undefined && dialect !== source.name)
        throw new CliUsageError(`--dialect ${dialect} does not match the DataSource's database, ${source.name}`);
      return print(source);
    });
  },
};

function dialectOption(values: OptionValues): DialectName | undefined {
  const dialect = stringOption(values, 'dialect');
  if (dialect === undefined || (DIALECT_NAMES as readonly string[]).includes(dialect)) return dialect as DialectName | undefined;
  throw new CliUsageError(`--dialect must be one of ${DIALECT_NAMES.join(', ')}, got ${JSON.stringify(dialect)}`);
}

function versionRange(values: OptionValues): { from: number; to: number } {
  const from = integerOption(values, 'from') ?? 0;
  const to = integerOption(values, 'to') ?? LATEST_OUTBOX_VERSION;
  if (typeof from !== 'number' || from < 0 || from >= LATEST_OUTBOX_VERSION)
    throw new CliUsageError(`--from must be 0 (no tables) to ${LATEST_OUTBOX_VERSION - 1}, got ${JSON.stringify(from)}`);
  if (typeof to !== 'number' || to < 1 || to > LATEST_OUTBOX_VERSION)
    throw new CliUsageError(`--to must be 1 to ${LATEST_OUTBOX_VERSION}, got ${JSON.stringify(to)}`);
  if (from >= to) throw new CliUsageError(`--from (${from}) must be below --to (${to}): there is nothing to print`);
  return { from, to };
}

/** The DDL of the DataSource's database, for its server, naming the tables as the library does. */
function connectedDdlSource({ dataSource, dialect }: CliConnection): DdlSource {
  const type = dataSource.driver.options.type;
  const name: DialectName = dialect instanceof MysqlDialect ? dialect.server.flavor : type === 'postgres' ? 'postgres' : 'sqlite';
  return { name, description: dialect.description, ddl: dialect.schemaSql, quoted: (table) => qualifiedTable(dataSource, table) };
}

/** Each version's statements, in the order the migrations apply them. */
export function statementsBetween(source: DdlSource, tables: TableNames, range: { from: number; to: number }, ifNotExists: boolean): string[] {
  const request = (table: string): TableDdl => ({ table, quoted: source.quoted(table), ifNotExists });
  const statements: string[] = [];
  for (let version = range.from + 1; version <= range.to; version++) {
    if (version === 1)
      statements.push(...createTableDdl(source.ddl, 'outbox', request(tables.outbox)), ...createTableDdl(source.ddl, 'inbox', request(tables.inbox)));
    else statements.push(...outboxUpgradeDdl(source.ddl, version as 2 | 3 | 4, request(tables.outbox)));
  }
  return statements;
}

/** The script: a header in comments, then each statement ended by `;` and a newline, a blank line between them. */
export function scriptText(source: DdlSource, tables: TableNames, script: SqlScript): string {
  const created = script.from === 0 ? `outbox table ${tables.outbox}, inbox table ${tables.inbox}` : `outbox table ${tables.outbox}`;
  const nothing = script.statements.length === 0 ? `-- nothing to run: on this database version ${script.to} is version ${script.from}\n` : '';
  const header = `-- nestjs-outbox schema version ${script.from} to ${script.to}: ${created}\n-- for ${source.description}\n${nothing}\n`;
  return header + script.statements.map((statement) => `${statement};\n`).join('\n');
}
