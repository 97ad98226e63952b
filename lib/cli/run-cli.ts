import { OutboxOptionsError } from '../errors';
import { parseCommandOptions } from './cli-arguments';
import { CliCommand, CliOutput, ExitCode } from './cli-command';
import { CliUsageError } from './cli-usage.error';
import { commandLineHelp, COMMANDS } from './commands';

/** Runs one command line (the arguments after the program's name) and returns its exit code. */
export async function runCli(argv: string[], output: CliOutput): Promise<ExitCode> {
  const [name, ...args] = argv;
  if (name === undefined) {
    output.err(commandLineHelp());
    return ExitCode.USAGE;
  }
  if (name === '--help' || name === '-h' || (name === 'help' && args.length === 0)) {
    output.out(commandLineHelp());
    return ExitCode.OK;
  }
  if (name === '--version' || name === '-v') {
    output.out(`${packageVersion()}\n`);
    return ExitCode.OK;
  }
  const command = COMMANDS.find((candidate) => candidate.name === (name === 'help' ? args[0] : name));
  if (!command) {
    output.err(`nestjs-outbox: unknown command ${JSON.stringify(name === 'help' ? args[0] : name)}\n\n${commandLineHelp()}`);
    return ExitCode.USAGE;
  }
  if (name === 'help') {
    output.out(command.help);
    return ExitCode.OK;
  }
  try {
    const values = parseCommandOptions(command, args);
    if (values.help) {
      output.out(command.help);
      return ExitCode.OK;
    }
    return await command.run(values, output);
  } catch (error) {
    return reportError(command, error, output);
  }
}

/** A wrong command line (a table name OutboxModule would refuse too) exits with 2, anything else with 1. */
function reportError(command: CliCommand, error: unknown, output: CliOutput): ExitCode {
  const message = error instanceof Error ? error.message : String(error);
  output.err(`nestjs-outbox ${command.name}: ${message}\n`);
  return error instanceof CliUsageError || error instanceof OutboxOptionsError ? ExitCode.USAGE : ExitCode.FAILURE;
}

/** The installed package's version: package.json is two folders up, from lib/cli and from dist/cli alike. */
function packageVersion(): string {
  // eslint-disable-next-line @typescript-eslint/no-require-imports -- package.json lies outside the compiled sources
  return (require('../../package.json') as { version: string }).version;
}
