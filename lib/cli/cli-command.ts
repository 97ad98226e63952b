import { ParseArgsConfig } from 'node:util';

/** How a command ended: 0 done (or all well), 1 failed (or not ready), 2 the command line was wrong. */
export enum ExitCode {
  OK = 0,
  FAILURE = 1,
  USAGE = 2,
}

/** Where a command writes: stdout carries its result, stderr its errors and notes. */
export interface CliOutput {
  out(text: string): void;
  err(text: string): void;
}

/** The option values `util.parseArgs` gives a command. */
export type OptionValues = Record<string, string | boolean | (string | boolean)[] | undefined>;

/** One command of the command line: its options, its help and what it does. */
export interface CliCommand {
  readonly name: string;
  /** One line for the list of commands. */
  readonly summary: string;
  /** The text `--help` prints: synopsis, options, examples. */
  readonly help: string;
  /** Options of its own, besides the common ones (`-d`, `--table`, `--inbox-table`, `--json`, `--help`). */
  readonly options: NonNullable<ParseArgsConfig['options']>;
  run(values: OptionValues, output: CliOutput): Promise<ExitCode>;
}
