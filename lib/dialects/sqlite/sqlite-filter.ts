import { FilterFlavour } from '../message-filter-sql';
import { toSqliteTime } from './sqlite-time';

/**
 * Operator filters on SQLite: `?` parameters and times as the stored UTC text, which compares as
 * text. A substring is found with `instr`, not LIKE: SQLite's LIKE ignores the case of ASCII
 * letters, and `instr` has no wildcards to escape.
 */
export const SQLITE_FILTER: FilterFlavour = {
  placeholder: () => '?',
  id: (id) => BigInt(id),
  time: (params, instant) => params.add(toSqliteTime(instant.toISOString())),
  contains: (column, params, text) => `instr(${column}, ${params.add(text)}) > 0`,
};
