import { ClaimRef } from '../../engine/state-table';
import { UNFINISHED_STATUSES } from '../../message/message-status';
import { outboxIndexNames, stateIndexNames } from '../../naming/index-names';
import { UNFINISHED_ORDERING_KEY } from './mysql-schema';

/**
 * The database's clock, in UTC whatever the session's time zone: every time column is a
 * DATETIME(6) holding UTC, written and compared through this.
 */
export const NOW = 'UTC_TIMESTAMP(6)';

/** `NOW` minus a parameter in microseconds; pass `microseconds(ms)`. */
export const NOW_MINUS = `${NOW} - INTERVAL ? MICROSECOND`;

/** A millisecond duration as the whole microseconds `INTERVAL ? MICROSECOND` takes. */
export function microseconds(ms: number): number {
  return Math.round(ms * 1000);
}

/**
 * A time column as ISO-8601 UTC text, so that it becomes the right Date whatever the driver's
 * `timezone` and `dateStrings` settings are.
 */
export function isoTime(column: string, alias: string): string {
  return `DATE_FORMAT(${column}, '%Y-%m-%dT%H:%i:%s.%fZ') AS ${alias}`;
}

/** An ISO 8601 UTC instant (`Date.toISOString()`) as a DATETIME literal in UTC, which every time column holds. */
export function utcDatetime(iso: string): string {
  return iso.replace('T', ' ').replace('Z', '');
}

/** The Date of an `isoTime` column. */
export function toDate(text: string | null): Date | null {
  return text === null ? null : new Date(text);
}

/** An id as SQL receives it: an exact integer, not a string compared as a float. */
export function sqlId(id: string): bigint {
  return BigInt(id);
}

/**
 * A table's names and the index hints its statements need. The optimizer is not left to choose
 * where its choice goes wrong. With the ordering rule's subqueries in a claim, MariaDB prefers
 * the shorter processing index and sorts the whole backlog (evaluating the rule for every row of
 * it) over walking the claim index in id order and stopping at the limit. And a statement that
 * names its rows by id but also tests their status may be run through a status index when the
 * statistics say that status is rare: inside a REPEATABLE READ transaction (a deferred handler's
 * settle, a publisher's cancel) it would then lock gaps of that index until the commit, stalling
 * the claims and inserts of every other session.
 */
export interface MysqlTable {
  quoted: string;
  /** The plain name, from which index names derive. */
  name: string;
  /** `FORCE INDEX` of the claim index `(status, id, next_attempt_at)`. */
  useClaimIndex: string;
  /**
   * The outbox table at schema version 4: its ordering index is on the generated
   * `unfinished_ordering_key`, its lane index leads with `status`, and it has no processing
   * index. Otherwise (the inbox, an outbox before version 4) the ordering index is
   * `([consumer,] ordering_key, status, id)` and PROCESSING rows are found through
   * `(status, claimed_at)`.
   */
  outboxVersion4: boolean;
  /** `FORCE INDEX` of the index the ordering rule probes: `(unfinished_ordering_key, id)` or `([consumer,] ordering_key, status, id)`. */
  useOrderingIndex: string;
  /** `FORCE INDEX` of the index that finds PROCESSING rows: the outbox's lane index `(status, transport, …)` at version 4, else `(status, claimed_at)`. */
  useProcessingIndex: string;
  /** `FORCE INDEX (PRIMARY)`, for statements naming their rows by id. */
  usePrimaryKey: string;
}

/**
 * @param quoted the table name as `qualifiedTable` gives it (a plain identifier, quoted)
 * @param outboxVersion4 the table is an outbox table at schema version 4
 */
export function mysqlTable(quoted: string, outboxVersion4: boolean): MysqlTable {
  const name = quoted.split('.').pop()!.replace(/`/g, '');
  const indexes = stateIndexNames(name);
  return {
    quoted,
    name,
    outboxVersion4,
    useClaimIndex: forceIndex(indexes.claimable),
    useOrderingIndex: forceIndex(outboxVersion4 ? outboxIndexNames(name).unfinished : indexes.ordering),
    useProcessingIndex: forceIndex(outboxVersion4 ? outboxIndexNames(name).lane : indexes.processing),
    usePrimaryKey: 'FORCE INDEX (PRIMARY)',
  };
}

/** An index hint naming one index of the table. */
export function forceIndex(index: string): string {
  return `FORCE INDEX (\`${index}\`)`;
}

/**
 * The claim filter's ordering rule for candidate rows aliased `c`: a row with an ordering key is
 * claimable only when no earlier row of its key (and consumer, in the inbox) is unfinished.
 *
 * On the version-4 outbox table one probe of `(unfinished_ordering_key, id)`, which holds the
 * key's unfinished rows only. Otherwise one probe per unfinished status: each is a lookup of
 * (key, status) in the ordering index, which passes over only the key's unfinished rows. A single
 * `status IN (...)` probe walks the key's whole finished history on MySQL and MariaDB, which have
 * no partial indexes.
 */
export function mysqlOrderingRule(table: MysqlTable, scope: string | null): string {
  if (table.outboxVersion4) {
    return `(c.ordering_key IS NULL OR NOT EXISTS (SELECT 1 FROM ${table.quoted} AS e ${table.useOrderingIndex}
       WHERE ${scope ? `e.${scope} = c.${scope} AND ` : ''}e.${UNFINISHED_ORDERING_KEY} = c.ordering_key AND e.id < c.id))`;
  }
  const probes = UNFINISHED_STATUSES.map(
    (status) => `NOT EXISTS (SELECT 1 FROM ${table.quoted} AS e ${table.useOrderingIndex}
       WHERE ${scope ? `e.${scope} = c.${scope} AND ` : ''}e.ordering_key = c.ordering_key AND e.status = '${status}' AND e.id < c.id)`,
  );
  return `(c.ordering_key IS NULL OR (${probes.join(' AND ')}))`;
}

/** The number of unfinished rows after row `c` in its ordering key, probed as above. */
export function mysqlLaterUnfinishedCount(table: MysqlTable, scope: string | null): string {
  if (table.outboxVersion4) {
    return `(SELECT count(*) FROM ${table.quoted} AS w ${table.useOrderingIndex}
       WHERE ${scope ? `w.${scope} = c.${scope} AND ` : ''}w.${UNFINISHED_ORDERING_KEY} = c.ordering_key AND w.id > c.id)`;
  }
  const counts = UNFINISHED_STATUSES.map(
    (status) => `(SELECT count(*) FROM ${table.quoted} AS w ${table.useOrderingIndex}
       WHERE ${scope ? `w.${scope} = c.${scope} AND ` : ''}w.ordering_key = c.ordering_key AND w.status = '${status}' AND w.id > c.id)`,
  );
  return counts.join(' + ');
}

/**
 * `CASE id WHEN ? THEN ? ... END` with its parameters: one value per row of a batch, so that a
 * batch settles in one statement (MySQL has no `unnest`).
 */
export function perRow<T extends ClaimRef>(claims: T[], value: (claim: T) => unknown): { sql: string; params: unknown[] } {
  return {
    sql: `CASE id ${claims.map(() => 'WHEN ? THEN ?').join(' ')} END`,
    params: claims.flatMap((claim) => [sqlId(claim.id), value(claim)]),
  };
}

/**
 * The fence of a batch's settle: each row by its own claim's token, as `(claim_token = ? AND id
 * IN (?))` per token, joined by OR. A batch holds the rows of one claim or of a few (rows of
 * several batches settled together), so the server compares a row with a few tokens and looks
 * its id up in a sorted list, where a `claim_token = CASE id ... END` compared it with every row
 * of the batch. The id lists also give the statement its primary-key ranges.
 */
export function claimFence<T extends ClaimRef>(claims: T[]): { sql: string; params: unknown[] } {
  const idsByToken = new Map<string, bigint[]>();
  for (const claim of claims) {
    const ids = idsByToken.get(claim.claimToken);
    if (ids) ids.push(sqlId(claim.id));
    else idsByToken.set(claim.claimToken, [sqlId(claim.id)]);
  }
  const params: unknown[] = [];
  for (const [token, ids] of idsByToken) params.push(token, ids);
  return { sql: Array.from(idsByToken.keys(), () => '(claim_token = ? AND id IN (?))').join(' OR '), params };
}
