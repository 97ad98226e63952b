import { CLAIMABLE_STATUSES, MessageStatus, UNFINISHED_STATUSES } from '../message/message-status';

const { PENDING, FAILED, MANUAL_REQUIRED, DONE, ABANDONED } = MessageStatus;

const statusIn = (statuses: readonly MessageStatus[]) => `status IN (${statuses.map((s) => `'${s}'`).join(', ')})`;

/** `status IN (claimable)`: the claim filter, and the predicate of the partial claim index. */
export const CLAIMABLE_SQL = statusIn(CLAIMABLE_STATUSES);
/** `status IN (unfinished)`: the predicate of the partial ordering index. */
export const UNFINISHED_SQL = statusIn(UNFINISHED_STATUSES);
/** Never sent (or processed): what `cancel()` and `abandon()` may turn ABANDONED. */
export const ABANDONABLE_SQL = statusIn([PENDING, FAILED, MANUAL_REQUIRED]);
/** Given up on or waiting for a retry: what `requeue()` may make due again. */
export const REQUEUABLE_SQL = statusIn([FAILED, MANUAL_REQUIRED]);
/** Sent (or processed) or given up: what retention deletes or archives once old enough. */
export const FINISHED_SQL = statusIn([DONE, ABANDONED]);

/**
 * The claim filter's ordering rule for candidate rows aliased `c`, in SQL that PostgreSQL and
 * SQLite share: a row with an ordering key is claimable only when no earlier row of its key (and
 * consumer, in the inbox) is unfinished. MySQL probes each status apart (see mysql-sql.ts).
 */
export function orderingRule(table: string, scope: string): string {
  return `(c.ordering_key IS NULL OR NOT EXISTS (
             SELECT 1 FROM ${table} AS e
             WHERE e.ordering_key = c.ordering_key${scope ? ` AND e.${scope} = c.${scope}` : ''} AND e.id < c.id AND e.${UNFINISHED_SQL}))`;
}

/**
 * The `StateTable.statusSummary` statement, in SQL all three databases share: one aggregate scan
 * counting rows per status (and `scope`), with how many are due and the oldest due time, joined
 * to the clock so that an empty table still reports the time. `now` is the dialect's clock
 * expression; `time(expression, alias)` selects a time as the dialect reads it back.
 */
export function statusSummarySql(
  table: string,
  scope: string | null,
  now: string,
  time = (expression: string, alias: string) => `${expression} AS ${alias}`,
): string {
  const due = `${CLAIMABLE_SQL} AND next_attempt_at <= ${now}`;
  return `SELECT ${time('clock.db_now', 'db_now')}, g.scope, g.status, g.n, g.due, ${time('g.oldest_due', 'oldest_due')}
    FROM (SELECT ${now} AS db_now) AS clock
    LEFT JOIN (
      SELECT ${scope ?? 'NULL'} AS scope, status, count(*) AS n,
             SUM(CASE WHEN ${due} THEN 1 ELSE 0 END) AS due,
             MIN(CASE WHEN ${due} THEN next_attempt_at END) AS oldest_due
      FROM ${table} GROUP BY ${scope ? `${scope}, ` : ''}status) AS g ON 1 = 1`;
}

/**
 * Claimable rows (PENDING, FAILED: due or not) per transport, through the claim index, which
 * holds only claimable rows (PostgreSQL, SQLite) or leads with the transport (MySQL): for
 * telling which transports have messages that no lane of this process will ever claim.
 */
export function claimableByTransportSql(table: string): string {
  return `SELECT transport, count(*) AS n FROM ${table} WHERE ${CLAIMABLE_SQL} GROUP BY transport`;
}

/** The rows of `claimableByTransportSql` as counts by transport name. */
export function toCountsByTransport(rows: Record<string, any>[]): Record<string, number> {
  return Object.fromEntries(rows.map((row) => [row.transport as string, Number(row.n)]));
}
