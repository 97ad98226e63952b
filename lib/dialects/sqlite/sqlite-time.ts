/**
 * Times in SQLite tables are TEXT in one format, 'YYYY-MM-DD HH:MM:SS.SSS' UTC, always from
 * SQLite's own clock: every comparison is a text comparison, and text order is time order.
 */
const FORMAT = `'%Y-%m-%d %H:%M:%f'`;

/** The database's clock now (the same value throughout one statement). */
export const SQLITE_NOW = `strftime(${FORMAT}, 'now')`;

/** The database's clock shifted by `milliseconds` (a SQL expression: a parameter or a column). */
export function sqliteNowPlusMs(milliseconds: string): string {
  return `strftime(${FORMAT}, 'now', '+' || (${milliseconds} / 1000.0) || ' seconds')`;
}

/** The database's clock `milliseconds` (a SQL expression) ago. */
export function sqliteNowMinusMs(milliseconds: string): string {
  return `strftime(${FORMAT}, 'now', '-' || (${milliseconds} / 1000.0) || ' seconds')`;
}

/** A stored time as a Date. */
export function fromSqliteTime(value: string): Date;
export function fromSqliteTime(value: string | null): Date | null;
export function fromSqliteTime(value: string | null): Date | null {
  return value === null ? null : new Date(`${value.replace(' ', 'T')}Z`);
}

/** An ISO 8601 UTC instant (`Date.toISOString()`) in the stored format, so that it compares with stored times as text. */
export function toSqliteTime(iso: string): string {
  return iso.replace('T', ' ').replace('Z', '');
}
