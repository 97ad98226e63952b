import { SchemaSql } from '../dialects/schema-sql';
import { createTable } from '../schema/create-tables-at-startup';
import { LATEST_OUTBOX_VERSION, upgradeOutboxTable } from '../schema/outbox-schema-version';
import { outboxUpgradeSummary } from '../schema/outbox-upgrade-summary';
import { assertTableNamesFit } from '../schema/table-name-limits';
import { withSchemaLock } from '../schema/with-schema-lock';
import { COMMON_OPTIONS_HELP } from './cli-arguments';
import { CliCommand, ExitCode } from './cli-command';
import { CliConnection, withConnection } from './cli-connection';
import { printJson } from './cli-format';
import { listedCreatingMigration } from './listed-library-migrations';
import { readTableSchemas, schemaProblem, TableSchema } from './table-schema-state';

/** What `migrate` did to one table. */
export type MigrateAction = 'created' | 'upgraded' | 'none';

/** `nestjs-outbox migrate`: start-up creation's statements, run from the command line. */
export const migrateCommand: CliCommand = {
  name: 'migrate',
  summary: `create missing tables, upgrade the outbox table to schema version ${LATEST_OUTBOX_VERSION}`,
  options: {},
  help: `Usage: nestjs-outbox migrate -d <data-source file> [--table name] [--inbox-table name] [--json]

Creates the outbox and inbox tables, with their indexes, where they are missing, and upgrades an
outbox table of schema version 1, 2 or 3 to version ${LATEST_OUTBOX_VERSION}: the statements OutboxModule runs at start-up under
synchronize: true, and the library's migrations run, whatever the DataSource's synchronize says.
Run it again and it does nothing. It never alters a table that is not one of the library's, and
leaves a missing table to the DataSource's migrations when they include the library's migration
creating it (their CREATE TABLE would fail on a table made here).

On PostgreSQL each upgrade blocks writes to the outbox table while its new index is built (version
2 reads the claimable rows once, version 3 the whole table), and version 4 changes nothing; on
MySQL and MariaDB version 2 adds the columns in place, version 3 changes nothing, and version 4
adds a virtual column and builds its index and the ordering index, reading the table once and
blocking writes to it meanwhile.

Exit code 0 when the tables are ready, 1 when it could not make them so, 2 for a wrong command line.

${COMMON_OPTIONS_HELP}

Examples:
  nestjs-outbox migrate -d dist/data-source.js
  nestjs-outbox migrate -d dist/data-source.js --table billing_outbox --inbox-table billing_inbox
`,
  run: (values, output) =>
    withConnection(values, async (connection) => {
      assertTableNamesFit(connection.dialect.schemaSql.identifierLimit, connection.tables);
      const schemas = await readTableSchemas(connection);
      refuseWhatMigrateMustNotTouch(connection, [schemas.outbox, schemas.inbox]);
      const actions = await migrate(connection, schemas.outbox, schemas.inbox);
      const result = {
        database: connection.dialect.description,
        outbox: {
          table: connection.tables.outbox,
          action: actions.outbox.action,
          fromSchemaVersion: actions.outbox.from,
          schemaVersion: LATEST_OUTBOX_VERSION,
        },
        inbox: { table: connection.tables.inbox, action: actions.inbox },
      };
      if (values.json) printJson(output, result);
      else output.out(`Database: ${result.database}\n${describeActions(result, connection.dialect.schemaSql)}`);
      return ExitCode.OK;
    }),
};

/** Nothing is changed unless every change can be made. */
function refuseWhatMigrateMustNotTouch(connection: CliConnection, schemas: TableSchema[]): void {
  const problems: string[] = [];
  for (const schema of schemas) {
    if (schema.state === 'unrecognised') problems.push(schemaProblem(schema)!);
    const migration = schema.state === 'missing' ? listedCreatingMigration(connection.dataSource, schema.kind, schema.table) : undefined;
    if (migration) {
      problems.push(
        `the DataSource's migrations include ${migration}, which creates the ${schema.kind} table ${schema.table}: run them (typeorm migration:run -d ${connection.file});` +
          ' a table created here would make its CREATE TABLE fail',
      );
    }
  }
  if (problems.length > 0) throw new Error(`migrate changed nothing: ${problems.join('; ')}`);
}

/**
 * Start-up creation's statements, in its order and under its schema lock: each missing table at
 * version 1, then the outbox's upgrade. `IF NOT EXISTS` keeps them no-ops on what a process
 * starting meanwhile created.
 */
async function migrate(
  connection: CliConnection,
  outbox: TableSchema,
  inbox: TableSchema,
): Promise<{ outbox: { action: MigrateAction; from: number | null }; inbox: MigrateAction }> {
  const { dataSource, dialect } = connection;
  return withSchemaLock(dataSource, dialect, async (runner) => {
    for (const schema of [outbox, inbox]) {
      if (schema.state === 'missing') await createTable(runner, dialect, schema.kind, schema.table);
    }
    const from = await upgradeOutboxTable(runner, dialect, outbox.table);
    return {
      outbox: outbox.state === 'missing' ? { action: 'created', from: null } : { action: from === null ? 'none' : 'upgraded', from },
      inbox: inbox.state === 'missing' ? 'created' : 'none',
    };
  });
}

function describeActions(
  result: {
    outbox: { table: string; action: MigrateAction; fromSchemaVersion: number | null };
    inbox: { table: string; action: MigrateAction };
  },
  schemaSql: SchemaSql,
): string {
  const { outbox, inbox } = result;
  if (outbox.action === 'none' && inbox.action === 'none') {
    return `Nothing to do: the outbox table ${outbox.table} is at schema version ${LATEST_OUTBOX_VERSION} and the inbox table ${inbox.table} exists.\n`;
  }
  const lines: string[] = [];
  if (outbox.action === 'created') lines.push(`Created the outbox table ${outbox.table} (schema version ${LATEST_OUTBOX_VERSION}).`);
  if (outbox.action === 'upgraded')
    lines.push(
      `Upgraded the outbox table ${outbox.table} from schema version ${outbox.fromSchemaVersion} to ${LATEST_OUTBOX_VERSION} (${outboxUpgradeSummary(schemaSql, outbox.fromSchemaVersion ?? 0)}).`,
    );
  if (outbox.action === 'none') lines.push(`The outbox table ${outbox.table} is at schema version ${LATEST_OUTBOX_VERSION} already.`);
  lines.push(inbox.action === 'created' ? `Created the inbox table ${inbox.table}.` : `The inbox table ${inbox.table} exists already.`);
  return `${lines.join('\n')}\n`;
}
