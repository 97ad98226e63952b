import { OutboxOptionsError } from '../errors';

/** Default name of the outbox table. */
export const DEFAULT_OUTBOX_TABLE = 'outbox_message';
/** Default name of the inbox table. */
export const DEFAULT_INBOX_TABLE = 'inbox_message';

const IDENTIFIER = /^[A-Za-z_][A-Za-z0-9_]{0,62}$/;

/**
 * Table names reach SQL text, so only plain identifiers are accepted: configuration must never
 * be a path to SQL injection.
 */
export function assertTableName(option: string, name: string): string {
  if (typeof name !== 'string' || !IDENTIFIER.test(name)) {
    throw new OutboxOptionsError([
      `${option} must be a plain SQL identifier (letters, digits, underscore; at most 63 characters), got ${JSON.stringify(name)}`,
    ]);
  }
  return name;
}
