import { inboxStats, outboxStats } from '../admin/outbox-stats';
import { LATEST_OUTBOX_VERSION } from '../schema/outbox-schema-version';
import { outboxUpgradeSummary } from '../schema/outbox-upgrade-summary';
import { COMMON_OPTIONS_HELP } from './cli-arguments';
import { CliCommand, ExitCode } from './cli-command';
import { CliConnection, withConnection } from './cli-connection';
import { printJson, suggestedCommand } from './cli-format';
import { listedCreatingMigration } from './listed-library-migrations';
import { printStatusReport, StatusReport, TableStatus } from './status-report';
import { isUsable, readTableSchemas, schemaProblem, TableSchema } from './table-schema-state';

/** `nestjs-outbox status`: the tables' schema and counts; exits with 1 until both are ready. */
export const statusCommand: CliCommand = {
  name: 'status',
  summary: 'schema version of the tables; rows per status, due, lag, in flight',
  options: {},
  help: `Usage: nestjs-outbox status -d <data-source file> [--table name] [--inbox-table name] [--json]

Reports whether the outbox table exists and at which schema version (1 to ${LATEST_OUTBOX_VERSION}, the
latest; the library works with versions 2 and 3 too, which \`migrate\` upgrades), whether the inbox table
exists with its columns, and for each table the library can use the rows per status, in total and per transport (outbox) or consumer (inbox): how many are
due, the lag of the oldest due row and the rows in flight, by the database's clock. One catalog
query and one aggregate statement per table; it changes nothing.

Exit code 0 when both tables are ready, 1 while a table is missing, of schema version 1, or not
one of the library's (it says what to run), 2 for a wrong command line: a CI step or a deploy
check can run it before starting the application.

${COMMON_OPTIONS_HELP}

Examples:
  nestjs-outbox status -d dist/data-source.js
  nestjs-outbox status -d src/data-source.ts --table billing_outbox --inbox-table billing_inbox --json
`,
  run: (values, output) =>
    withConnection(values, async (connection) => {
      const report = await statusReport(connection);
      if (values.json) printJson(output, report);
      else output.out(printStatusReport(report));
      return report.ready ? ExitCode.OK : ExitCode.FAILURE;
    }),
};

async function statusReport(connection: CliConnection): Promise<StatusReport> {
  const schemas = await readTableSchemas(connection);
  // A table behind or unrecognised lacks columns the counting statement reads.
  const outbox = isUsable(schemas.outbox.state) ? await connection.outbox.statusSummary(connection.dataSource) : null;
  const inbox = isUsable(schemas.inbox.state) ? await connection.inbox.statusSummary(connection.dataSource) : null;
  const ready = isUsable(schemas.outbox.state) && isUsable(schemas.inbox.state);
  return {
    database: connection.dialect.description,
    ready,
    outbox: {
      ...tableStatus(schemas.outbox),
      schemaVersion: schemas.outbox.version ?? (schemas.outbox.state as 'missing' | 'unrecognised'),
      latestSchemaVersion: LATEST_OUTBOX_VERSION,
      upgrade:
        schemas.outbox.state === 'behind' || schemas.outbox.state === 'upgradable'
          ? outboxUpgradeSummary(connection.dialect.schemaSql, schemas.outbox.version ?? 0)
          : null,
      stats: outbox && outboxStats(outbox),
    },
    inbox: { ...tableStatus(schemas.inbox), stats: inbox && inboxStats(inbox) },
    at: (outbox ?? inbox)?.at ?? null,
    next: ready && schemas.outbox.state !== 'upgradable' ? null : nextStep(connection, [schemas.outbox, schemas.inbox]),
  };
}

function tableStatus(schema: TableSchema): TableStatus {
  return { table: schema.table, state: schema.state, problem: schemaProblem(schema) ?? null };
}

/**
 * `migrate` makes missing tables and upgrades a version-1 outbox; a missing table whose creating
 * migration the DataSource lists is left to the migrations, whose CREATE TABLE would fail on it.
 */
function nextStep(connection: CliConnection, schemas: TableSchema[]): string | null {
  if (schemas.some((schema) => schema.state === 'unrecognised')) return null;
  const byMigrations = schemas.some((schema) => schema.state === 'missing' && listedCreatingMigration(connection.dataSource, schema.kind, schema.table));
  if (byMigrations) return `run the DataSource's migrations, which include the library's (typeorm migration:run -d ${connection.file})`;
  return suggestedCommand('migrate', connection);
}
