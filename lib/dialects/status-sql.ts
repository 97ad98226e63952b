import { CLAIMABLE_STATUSES, MessageStatus, UNFINISHED_STATUSES } from '../message/message-status';

const { PENDING, FAILED, MANUAL_REQUIRED } = MessageStatus;

const statusIn = (statuses: readonly MessageStatus[]) => `status IN (${statuses.map((s) => `'${s}'`).join(', ')})`;

/** `status IN (claimable)`: the claim filter, and the predicate of the partial claim index. */
export const CLAIMABLE_SQL = statusIn(CLAIMABLE_STATUSES);
/** `status IN (unfinished)`: the predicate of the partial ordering index. */
export const UNFINISHED_SQL = statusIn(UNFINISHED_STATUSES);
/** Never sent (or processed): what `cancel()` and `abandon()` may turn ABANDONED. */
export const ABANDONABLE_SQL = statusIn([PENDING, FAILED, MANUAL_REQUIRED]);
/** Given up on or waiting for a retry: what `requeue()` may make due again. */
export const REQUEUABLE_SQL = statusIn([FAILED, MANUAL_REQUIRED]);

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
