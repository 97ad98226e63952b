import { CliCommand } from './cli-command';
import { listCommand } from './list-command';
import { migrateCommand } from './migrate-command';
import { parkedCommand } from './parked-command';
import { sqlCommand } from './sql-command';
import { abandonCommand, purgeCommand, replayCommand, requeueCommand } from './state-change-commands';
import { statusCommand } from './status-command';

/** Every command, in the order the help lists them. */
export const COMMANDS: readonly CliCommand[] = [
  statusCommand,
  migrateCommand,
  sqlCommand,
  listCommand,
  parkedCommand,
  requeueCommand,
  abandonCommand,
  purgeCommand,
  replayCommand,
];

/** The help of the command line as a whole. */
export function commandLineHelp(): string {
  const width = Math.max(...COMMANDS.map((command) => command.name.length));
  return `Usage: nestjs-outbox <command> -d <data-source file> [options]

The outbox and inbox tables of nestjs-outbox, from the command line: their schema, and the
operations on messages that need a person. -d names the file exporting your TypeORM DataSource,
as TypeORM's CLI takes it.

Commands:
${COMMANDS.map((command) => `  ${command.name.padEnd(width)}  ${command.summary}`).join('\n')}

nestjs-outbox <command> --help describes a command and its options.
Exit codes: 0 done, 1 failed (status: not ready), 2 wrong command line.
`;
}
