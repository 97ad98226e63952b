import type { DataSourceOptions, ValueTransformer } from 'typeorm';
import { utcDatetime } from '../dialects/mysql/mysql-sql';

/*
 * The time columns of the read models. Every time in the tables is an instant, stored as each
 * database stores it (PostgreSQL timestamptz; MariaDB/MySQL DATETIME(6) holding UTC; SQLite text
 * 'YYYY-MM-DD HH:MM:SS.SSS', UTC). The columns are declared as `Date`, for which TypeORM hands
 * over pg's Date and parses SQLite's text as UTC, and sends a Date in a `where` with its zone
 * (pg) or as that UTC text (SQLite). MariaDB/MySQL is left: mysql2 reads a DATETIME, and writes
 * a Date parameter, in the connection's `timezone`, by default the process's own zone, which is
 * wrong for UTC values. That depends on the DataSource, which a column's transformer never sees:
 * each DataSource's columns get the transformer of its driver (`recordTimesFor`) once it is open.
 */

/** How a DataSource's time columns are read and compared, and why they may be off. */
export interface RecordTimes {
  /** None where TypeORM's own conversions are right. */
  transformer?: ValueTransformer;
  /** Set when some stored times cannot be read back exactly with this DataSource's settings. */
  warning?: string;
}

/** The DATETIME's wall-clock time, which mysql2 read as local time, as the UTC instant it stands for. */
function fromLocalWallClock(value: Date): Date {
  return new Date(
    Date.UTC(value.getFullYear(), value.getMonth(), value.getDate(), value.getHours(), value.getMinutes(), value.getSeconds(), value.getMilliseconds()),
  );
}

/** Whether the process's time zone changes its offset in the year (daylight saving time). */
function localZoneShifts(): boolean {
  const year = new Date().getFullYear();
  return new Date(year, 0, 1).getTimezoneOffset() !== new Date(year, 6, 1).getTimezoneOffset();
}

const OFFSET = /^([+-])(\d\d):(\d\d)$/;

/**
 * MariaDB/MySQL: how mysql2 turned a DATETIME holding UTC into a Date, undone. With `timezone:
 * 'Z'` it read it right; with an offset, as that offset's time; by default ('local', or with
 * `dateStrings`, whose text TypeORM parses as local time) as the process's local time, which is
 * right again once the wall-clock time is read back from the Date, except in the hour a
 * daylight-saving change skips, which no local Date can hold. A `where` value goes as a DATETIME
 * literal in UTC, which the server compares with the column whatever the session's time zone.
 */
function mysqlTimes(options: { timezone?: string; dateStrings?: boolean | string[] }): RecordTimes {
  const textDatetimes = options.dateStrings === true || (Array.isArray(options.dateStrings) && options.dateStrings.includes('DATETIME'));
  const timezone = textDatetimes ? 'local' : (options.timezone ?? 'local');
  const reading = (read: (value: Date) => Date): ValueTransformer => ({
    from: (value: unknown) => (value instanceof Date ? read(value) : value),
    to: (value: unknown) => (value instanceof Date ? utcDatetime(value.toISOString()) : value),
  });
  if (timezone === 'Z') return { transformer: reading((value) => value) };
  const offset = OFFSET.exec(timezone);
  if (offset) {
    const ms = (offset[1] === '-' ? -1 : 1) * (Number(offset[2]) * 60 + Number(offset[3])) * 60_000;
    return { transformer: reading((value) => new Date(value.getTime() + ms)) };
  }
  if (timezone === 'local') {
    const warning = localZoneShifts()
      ? "the DataSource reads MariaDB/MySQL times as the process's local time (its timezone option is 'local', mysql2's default, or dateStrings is on): " +
        'the outbox read models convert them back to UTC, except times in the hour a daylight-saving change skips, which read an hour late. ' +
        "Set timezone: 'Z' on the DataSource to read every time exactly"
      : undefined;
    return { transformer: reading(fromLocalWallClock), warning };
  }
  return {
    transformer: reading((value) => value),
    warning:
      `the DataSource's timezone option ${JSON.stringify(timezone)} is neither 'Z', 'local' nor an offset like '+02:00': ` +
      "the outbox read models cannot tell how mysql2 reads MariaDB/MySQL times. Set timezone: 'Z' on the DataSource",
  };
}

/** How the read models' time columns are read and compared on a DataSource of these options. */
export function recordTimesFor(options: DataSourceOptions): RecordTimes {
  if (options.type !== 'mysql' && options.type !== 'mariadb') return {};
  // `extra` goes to mysql2 last, over TypeORM's own settings.
  return mysqlTimes({ ...options, ...(options.extra as object | undefined) });
}
