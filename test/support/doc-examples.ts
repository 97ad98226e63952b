import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { REPOSITORY_ROOT } from './readme-quick-start';

/** A documentation example marked for compiling: `<!-- compiled: outbox-config.ts -->` before a ```ts fence. */
export interface DocExample {
  file: string;
  code: string;
}

const MARKED_BLOCK = /<!-- compiled: ([\w.-]+\.ts) -->\n```ts\n([\s\S]*?)\n```/g;

/** The examples of `doc` (a path from the repository's root) marked for compiling; they import each other by their file names. */
export function docExamples(doc: string): DocExample[] {
  const text = readFileSync(join(REPOSITORY_ROOT, doc), 'utf8');
  return [...text.matchAll(MARKED_BLOCK)].map(([, file, code]) => ({ file, code }));
}
