import { FilterFlavour, LIKE_ESCAPE, likeContaining } from '../message-filter-sql';
import { sqlId, utcDatetime } from './mysql-sql';

/**
 * Operator filters on MySQL/MariaDB: `?` parameters, times as UTC DATETIME(6) literals (which
 * every time column holds), and LIKE, which the tables' binary collation makes case-sensitive.
 */
export const MYSQL_FILTER: FilterFlavour = {
  placeholder: () => '?',
  id: sqlId,
  time: (params, instant) => `CAST(${params.add(utcDatetime(instant.toISOString()))} AS DATETIME(6))`,
  contains: (column, params, text) => `${column} LIKE ${params.add(likeContaining(text))} ESCAPE '${LIKE_ESCAPE}'`,
};
