/**
 * A command line the CLI cannot run as given (an unknown option, a missing `-d`, a value of the
 * wrong form, a filter the admin refuses): it exits with code 2 and nothing was read or changed.
 */
export class CliUsageError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'CliUsageError';
  }
}
