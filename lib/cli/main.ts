import { Logger } from '@nestjs/common';
import { runCli } from './run-cli';

/**
 * The `nestjs-outbox` command line: runs `argv` and exits with its code. The exit waits for
 * stdout and stderr to drain, and does not wait for handles the DataSource file may have left
 * open (the DataSource itself is closed by then).
 */
export async function main(argv: string[] = process.argv.slice(2)): Promise<void> {
  logLibraryToStderr();
  // A reader that stops early (`| head`) closes the pipe: the rest of the output has nowhere to go.
  process.stdout.on('error', (error: NodeJS.ErrnoException) => {
    if (error.code !== 'EPIPE') throw error;
  });
  let code: number;
  try {
    code = await runCli(argv, { out: (text) => process.stdout.write(text), err: (text) => process.stderr.write(text) });
  } catch (error) {
    process.stderr.write(`nestjs-outbox: ${error instanceof Error ? error.message : String(error)}\n`);
    code = 1;
  }
  process.stderr.write('', () => process.stdout.write('', () => process.exit(code)));
}

/**
 * Sends the lines the library logs through Nest's Logger (such as a MySQL server without SKIP
 * LOCKED) to stderr: stdout carries only the command's output, which `--json` makes one document.
 */
function logLibraryToStderr(): void {
  const write = (level: string) => (message: unknown) => process.stderr.write(`[nestjs-outbox] ${level}: ${String(message)}\n`);
  Logger.overrideLogger({ log: write('log'), warn: write('warn'), error: write('error'), debug: () => undefined, verbose: () => undefined });
}

if (require.main === module) void main();
