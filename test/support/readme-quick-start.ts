import { readFileSync } from 'node:fs';
import { join } from 'node:path';

/** The repository's root. */
export const REPOSITORY_ROOT = join(__dirname, '..', '..');

/** A block of the README's quick start: `<!-- quick-start: app.module.ts -->` before a ```ts fence. */
export interface QuickStartBlock {
  file: string;
  code: string;
}

const MARKED_BLOCK = /<!-- quick-start: ([\w.-]+\.ts) -->\n```ts\n([\s\S]*?)\n```/g;

/**
 * The README's quick-start blocks, as a newcomer copies them. They import each other by their
 * file names, and the library as `nestjs-outbox`.
 */
export function quickStartBlocks(): QuickStartBlock[] {
  const readme = readFileSync(join(REPOSITORY_ROOT, 'README.md'), 'utf8');
  return [...readme.matchAll(MARKED_BLOCK)].map(([, file, code]) => ({ file, code }));
}
