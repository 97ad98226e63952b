import type { DatabaseKind } from './database';

/**
 * Values read back through `TestDatabase.sql` come in each driver's own types: PostgreSQL and
 * MariaDB/MySQL give dates, SQLite its UTC text ('YYYY-MM-DD HH:MM:SS.SSS'); booleans are 0/1
 * outside PostgreSQL. These turn them into one JavaScript type, and a time into the parameter
 * each database stores as that instant.
 */

/** A time as a parameter the database stores as that instant: ISO text for PostgreSQL, its UTC text elsewhere. */
export function storedTime(kind: DatabaseKind, instant: Date): string {
  const iso = instant.toISOString();
  return kind === 'postgres' ? iso : iso.replace('T', ' ').replace('Z', '');
}

/** A stored time as a Date (null stays null). */
export function toDate(value: unknown): Date | null {
  if (value === null || value === undefined) return null;
  if (value instanceof Date) return value;
  if (typeof value === 'string') {
    // SQLite text has neither the 'T' nor the zone; it is UTC.
    const iso = /^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}(\.\d+)?$/.test(value) ? `${value.replace(' ', 'T')}Z` : value;
    const date = new Date(iso);
    if (Number.isNaN(date.getTime())) throw new Error(`not a stored time: "${value}"`);
    return date;
  }
  throw new Error(`not a stored time: ${String(value)}`);
}

/** A stored boolean (PostgreSQL boolean, or 0/1 elsewhere). */
export function toBoolean(value: unknown): boolean {
  if (typeof value === 'boolean') return value;
  if (value === 0 || value === 1 || value === '0' || value === '1') return Number(value) === 1;
  throw new Error(`not a stored boolean: ${String(value)}`);
}
