import { Logger } from '@nestjs/common';

/**
 * Sends the lines the library logs through Nest's Logger (such as a MySQL server without SKIP
 * LOCKED) to stderr: stdout carries only the command's output, which `--json` makes one document.
 */
export function logLibraryToStderr(): void {
  const write = (level: string) => (message: unknown) => process.stderr.write(`[nestjs-outbox] ${level}: ${String(message)}\n`);
  Logger.overrideLogger({ log: write('log'), warn: write('warn'), error: write('error'), debug: () => undefined, verbose: () => undefined });
}
