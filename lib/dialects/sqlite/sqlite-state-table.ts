import { DataSource } from 'typeorm';
import { messageRefFilter, MessageScope, requeuedStatus } from '../message-ref-sql';
import {
  ChangeBatch, ChangeBatchOutcome, ClaimRef, ExpiredClaim, FailedSettlement, HealthCounts, ListedMessage, ListWindow, MessageChange, MessageFilter, MessageRef,
  ParkedKey, StateTable,
} from '../../engine/state-table';
import { StatusSummary } from '../../engine/status-summary';
import { MessageStatus } from '../../message/message-status';
import { toExpiredClaim, toParkedKey, toStatusSummary } from '../row-mapping';
import { ABANDONABLE_SQL, CLAIMABLE_SQL, orderingRule, REQUEUABLE_SQL, statusSummarySql, UNFINISHED_SQL } from '../status-sql';
import { SqlTarget } from '../sql-executor';
import { sqliteConnectionOf } from './sqlite-connection';
import { SqliteRow } from './sqlite-statements';
import { sqliteExecute } from './sqlite-executor';
import { fromSqliteTime, SQLITE_NOW, sqliteNowMinusMs, sqliteNowPlusMs } from './sqlite-time';
import { listMessagesSql, toListedMessage } from '../listed-message-sql';
import { changeAssignments, changeCandidatesSql, changedStatuses, outcomeOfChanged } from '../message-change-sql';
import { SqlParams, statusInSql } from '../message-filter-sql';
import { SQLITE_FILTER } from './sqlite-filter';

const { PENDING, PROCESSING, DONE, FAILED, MANUAL_REQUIRED, ABANDONED } = MessageStatus;


/**
 * A batch of claims as one JSON parameter, read back as rows `s(id, token)`: one statement per
 * batch whatever its size (SQLite caps bound parameters), as PostgreSQL's `unnest` does.
 */
const CLAIMS = `SELECT CAST(value ->> 0 AS INTEGER) AS id, value ->> 1 AS token FROM json_each(?)`;
const claimsParam = (claims: ClaimRef[]) => JSON.stringify(claims.map((c) => [c.id, c.claimToken]));

/**
 * SQLite transitions shared by the outbox and inbox tables: batch settles through `UPDATE ...
 * FROM` a JSON batch (one statement per outcome per batch), each row fenced by its claim token.
 * Every statement given the DataSource runs outside the application's transactions.
 */
export class SqliteStateTable implements StateTable {
  /** The column `statusSummary` groups by besides status: the scope, unless a table says otherwise. */
  protected readonly summaryScope: string | null = null;

  /**
   * @param table the quoted table name
   * @param scope the column that scopes message ids and ordering keys (`consumer` in the inbox)
   */
  constructor(
    protected readonly table: string,
    readonly label: string,
    private readonly scope: MessageScope,
  ) {}

  async settleDone(target: SqlTarget, claims: ClaimRef[]): Promise<number> {
    if (claims.length === 0) return 0;
    const rows = await sqliteExecute(
      target,
      `WITH s AS (${CLAIMS})
       UPDATE ${this.table} AS t SET status = '${DONE}', processed_at = ${SQLITE_NOW}, claim_token = NULL, last_error = NULL
       FROM s WHERE t.id = s.id AND t.claim_token = s.token AND t.status = '${PROCESSING}'
       RETURNING id`,
      [claimsParam(claims)],
    );
    return rows.length;
  }

  async settleFailed(target: SqlTarget, settlements: FailedSettlement[]): Promise<number> {
    if (settlements.length === 0) return 0;
    const rows = await sqliteExecute(
      target,
      `WITH s AS (
         SELECT CAST(value ->> 0 AS INTEGER) AS id, value ->> 1 AS token, value ->> 2 AS status,
                value ->> 3 AS delay_ms, value ->> 4 AS error
         FROM json_each(?))
       UPDATE ${this.table} AS t
       SET status = s.status, attempts = t.attempts + 1, last_error = s.error,
           next_attempt_at = ${sqliteNowPlusMs('s.delay_ms')},
           claim_token = NULL, claimed_at = NULL, claimed_by = NULL
       FROM s WHERE t.id = s.id AND t.claim_token = s.token AND t.status = '${PROCESSING}'
       RETURNING id`,
      [JSON.stringify(settlements.map((s) => [s.id, s.claimToken, s.status, s.delayMs, s.error]))],
    );
    return rows.length;
  }

  async release(dataSource: DataSource, claims: ClaimRef[]): Promise<number> {
    if (claims.length === 0) return 0;
    const rows = await sqliteExecute(
      dataSource,
      `WITH s AS (${CLAIMS})
       UPDATE ${this.table} AS t
       SET status = CASE WHEN t.attempts = 0 THEN '${PENDING}' ELSE '${FAILED}' END,
           next_attempt_at = ${SQLITE_NOW}, claim_token = NULL, claimed_at = NULL, claimed_by = NULL
       FROM s WHERE t.id = s.id AND t.claim_token = s.token AND t.status = '${PROCESSING}'
       RETURNING id`,
      [claimsParam(claims)],
    );
    return rows.length;
  }

  async releaseClaim(dataSource: DataSource, claimToken: string): Promise<number> {
    const rows = await sqliteExecute(
      dataSource,
      `UPDATE ${this.table}
       SET status = CASE WHEN attempts = 0 THEN '${PENDING}' ELSE '${FAILED}' END,
           next_attempt_at = ${SQLITE_NOW}, claim_token = NULL, claimed_at = NULL, claimed_by = NULL
       WHERE status = '${PROCESSING}' AND claim_token = ?
       RETURNING id`,
      [claimToken],
    );
    return rows.length;
  }

  async findExpiredClaims(dataSource: DataSource, olderThanMs: number, limit: number): Promise<ExpiredClaim[]> {
    const rows = await sqliteExecute(
      dataSource,
      `SELECT id, claim_token, attempts, max_attempts, claimed_by, ordering_key FROM ${this.table}
       WHERE status = '${PROCESSING}' AND claimed_at < ${sqliteNowMinusMs('?')}
       ORDER BY claimed_at LIMIT ?`,
      [olderThanMs, limit],
    );
    return rows.map((r) => toExpiredClaim(r, { id: String(r.id) }));
  }

  async healthCounts(dataSource: DataSource, staleAfterMs: number): Promise<HealthCounts> {
    const [row] = await sqliteExecute(
      dataSource,
      `SELECT
         (SELECT count(*) FROM ${this.table} WHERE ${CLAIMABLE_SQL} AND next_attempt_at <= ${SQLITE_NOW}) AS backlog,
         (SELECT count(*) FROM ${this.table}
          WHERE status = '${PROCESSING}' AND claimed_at < ${sqliteNowMinusMs('?')}) AS stale`,
      [staleAfterMs],
    );
    return { backlog: Number(row.backlog), staleProcessing: Number(row.stale) };
  }

  async statusSummary(target: SqlTarget): Promise<StatusSummary> {
    const rows = await sqliteExecute(target, statusSummarySql(this.table, this.summaryScope, SQLITE_NOW));
    return toStatusSummary(rows, fromSqliteTime);
  }

  async deleteFinished(dataSource: DataSource, olderThanMs: number, limit: number): Promise<number> {
    // Oldest ids first, through the primary key: finished history sits at the low end.
    const rows = await sqliteExecute(
      dataSource,
      `DELETE FROM ${this.table} WHERE id IN (
         SELECT id FROM ${this.table}
         WHERE status IN ('${DONE}', '${ABANDONED}') AND processed_at < ${sqliteNowMinusMs('?')}
         ORDER BY id LIMIT ?)
       RETURNING id`,
      [olderThanMs, limit],
    );
    return rows.length;
  }

  async findParkedKeys(dataSource: DataSource, limit: number): Promise<ParkedKey[]> {
    const scope = this.scope ? `AND w.${this.scope} = c.${this.scope}` : '';
    const rows = await sqliteExecute(
      dataSource,
      `SELECT c.ordering_key, ${this.scope ? `c.${this.scope}` : 'NULL'} AS scope, c.message_id, c.message_type,
              c.attempts, c.last_error,
              (SELECT count(*) FROM ${this.table} AS w
               WHERE w.ordering_key = c.ordering_key ${scope} AND w.id > c.id AND w.${UNFINISHED_SQL}) AS waiting
       FROM ${this.table} AS c
       WHERE c.status = '${MANUAL_REQUIRED}' AND c.ordering_key IS NOT NULL AND ${orderingRule(this.table, this.scope ?? '')}
       ORDER BY c.id LIMIT ?`,
      [limit],
    );
    return rows.map((r) => toParkedKey(r));
  }

  async requeue(dataSource: DataSource, ref: MessageRef): Promise<boolean> {
    const filter = messageRefFilter(this.scope, ref, () => '?');
    const rows = await sqliteExecute(
      dataSource,
      `UPDATE ${this.table} SET status = '${requeuedStatus(this.scope)}', attempts = 0, next_attempt_at = ${SQLITE_NOW}
       WHERE ${filter.sql} AND ${REQUEUABLE_SQL}
       RETURNING id`,
      filter.params,
    );
    return rows.length > 0;
  }

  async abandon(dataSource: DataSource, ref: MessageRef): Promise<boolean> {
    const filter = messageRefFilter(this.scope, ref, () => '?');
    const rows = await sqliteExecute(
      dataSource,
      `UPDATE ${this.table} SET status = '${ABANDONED}', processed_at = ${SQLITE_NOW}
       WHERE ${filter.sql} AND ${ABANDONABLE_SQL}
       RETURNING id`,
      filter.params,
    );
    return rows.length > 0;
  }

  async listMessages(target: SqlTarget, filter: MessageFilter, window: ListWindow): Promise<ListedMessage[]> {
    const params = new SqlParams(SQLITE_FILTER.placeholder);
    const sql = listMessagesSql(this.table, this.scope, filter, window, params, SQLITE_FILTER, { id: (c) => c, time: (c) => c });
    const rows = await sqliteExecute(target, sql, params.values);
    return rows.map((r) =>
      toListedMessage(r, this.scope, String(r.id), {
        createdAt: fromSqliteTime(r.created_at),
        processedAt: fromSqliteTime(r.processed_at),
        nextAttemptAt: fromSqliteTime(r.next_attempt_at),
      }),
    );
  }

  async changeMessages(dataSource: DataSource, change: MessageChange, filter: MessageFilter, batch: ChangeBatch): Promise<ChangeBatchOutcome> {
    const statuses = changedStatuses(change, filter.statuses);
    if (statuses.length === 0) return { changed: 0, lastId: null };
    // One statement, so one write transaction: no claim runs between choosing the rows and changing them.
    const params = new SqlParams(SQLITE_FILTER.placeholder);
    const candidates = changeCandidatesSql({ table: this.table }, this.scope, change, filter, statuses, batch, 'c.id', params, SQLITE_FILTER);
    const rows = `WHERE id IN (${candidates}) AND ${statusInSql('status', statuses)} RETURNING id`;
    const sql =
      change === 'purge'
        ? `DELETE FROM ${this.table} ${rows}`
        : `UPDATE ${this.table} SET ${changeAssignments(change, this.scope, SQLITE_NOW)} ${rows}`;
    const changed = await sqliteExecute(dataSource, sql, params.values);
    return outcomeOfChanged(changed.map((r) => String(r.id)));
  }

  /**
   * The conditional-update claim, as one write transaction outside the application's: marks up
   * to `limit` candidates (a subquery over alias `c`, its parameters first) PROCESSING under
   * `claimToken`, re-checking that each is still claimable, and reads them back by token. SQLite
   * lets one writer at a time into the file, so no two claimants, in any process, take a row twice.
   */
  protected claimRows(
    dataSource: DataSource,
    candidates: { sql: string; params: unknown[] },
    columns: string,
    claimToken: string,
    claimedBy: string,
  ): Promise<SqliteRow[]> {
    return sqliteConnectionOf(dataSource).outsideTransaction((statements) =>
      statements.immediateTransaction(() => {
        statements.all(
          `UPDATE ${this.table} SET status = '${PROCESSING}', claim_token = ?, claimed_at = ${SQLITE_NOW}, claimed_by = ?
           WHERE id IN (${candidates.sql}) AND ${CLAIMABLE_SQL}`,
          [claimToken, claimedBy, ...candidates.params],
        );
        // By status too: claim_token has no index, the partial processing index holds only rows in flight.
        return statements.all(
          `SELECT ${columns} FROM ${this.table} WHERE status = '${PROCESSING}' AND claim_token = ? ORDER BY id`,
          [claimToken],
        );
      }),
    );
  }
}
