import { DATABASE_KIND } from './database';

/**
 * An exchange or queue name of a test file, suffixed with the database kind: the projects of the
 * database matrix share one broker and run their files concurrently.
 */
export function brokerName(base: string): string {
  return `${base}.${DATABASE_KIND}`;
}
