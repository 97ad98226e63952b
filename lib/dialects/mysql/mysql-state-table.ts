import { DataSource } from 'typeorm';
import { messageRefFilter, MessageScope, requeuedStatus } from '../message-ref-sql';
import {
  ChangeBatch, ChangeBatchOutcome, ClaimRef, ExpiredClaim, FailedSettlement, HealthCounts, ListedMessage, ListWindow, MessageChange, MessageFilter, MessageRef,
  ParkedKey, StateTable,
} from '../../engine/state-table';
import { StatusSummary } from '../../engine/status-summary';
import { MessageStatus } from '../../message/message-status';
import { stateIndexNames } from '../index-names';
import { toExpiredClaim, toParkedKey, toStatusSummary } from '../row-mapping';
import { execute, SqlTarget } from '../sql-executor';
import { ABANDONABLE_SQL, CLAIMABLE_SQL, REQUEUABLE_SQL, statusSummarySql } from '../status-sql';
import { forceIndex, microseconds, mysqlLaterUnfinishedCount, mysqlOrderingRule, MysqlTable, mysqlTable, NOW, NOW_MINUS, perRow, sqlId, isoTime, toDate } from './mysql-sql';
import { listMessagesSql, toListedMessage } from '../listed-message-sql';
import { changeAssignments, changeCandidatesSql, changedStatuses, highestId } from '../message-change-sql';
import { filterConditions, SqlParams } from '../message-filter-sql';
import { MYSQL_FILTER } from './mysql-filter';

const { PENDING, PROCESSING, DONE, FAILED, MANUAL_REQUIRED, ABANDONED } = MessageStatus;
const FINISHED = `status IN ('${DONE}', '${ABANDONED}')`;

/**
 * MySQL/MariaDB transitions shared by the outbox and inbox tables: one statement per outcome per
 * batch, each row fenced by its claim token through a `CASE id` of the batch's tokens (MySQL has
 * no `unnest`, and no `RETURNING`: counts are the rows the statement changed).
 *
 * Assignments in a MySQL UPDATE run left to right and see earlier ones, so a SET never reads a
 * column an earlier SET of the same statement wrote; WHERE sees the row as it was.
 */
export class MysqlStateTable implements StateTable {
  /** The column `statusSummary` groups by besides status: the scope, unless a table says otherwise. */
  protected readonly summaryScope: string | null = null;

  /** The quoted table name. */
  protected readonly table: string;
  /** The table with its index hints. */
  protected readonly indexed: MysqlTable;

  /**
   * @param quotedTable the quoted table name
   * @param scope the column that scopes message ids and ordering keys (`consumer` in the inbox)
   */
  constructor(
    quotedTable: string,
    readonly label: string,
    private readonly scope: MessageScope,
  ) {
    this.indexed = mysqlTable(quotedTable);
    this.table = this.indexed.quoted;
  }

  async settleDone(target: SqlTarget, claims: ClaimRef[]): Promise<number> {
    if (claims.length === 0) return 0;
    const token = perRow(claims, (claim) => claim.claimToken);
    const result = await execute(
      target,
      `UPDATE ${this.table} ${this.indexed.usePrimaryKey} SET status = '${DONE}', processed_at = ${NOW}, claim_token = NULL, last_error = NULL
       WHERE id IN (?) AND status = '${PROCESSING}' AND claim_token = ${token.sql}`,
      [claims.map((claim) => sqlId(claim.id)), ...token.params],
    );
    return result.affected ?? 0;
  }

  async settleFailed(target: SqlTarget, settlements: FailedSettlement[]): Promise<number> {
    if (settlements.length === 0) return 0;
    const status = perRow(settlements, (s) => s.status);
    const error = perRow(settlements, (s) => s.error);
    const delay = perRow(settlements, (s) => microseconds(s.delayMs));
    const token = perRow(settlements, (claim) => claim.claimToken);
    const result = await execute(
      target,
      `UPDATE ${this.table} ${this.indexed.usePrimaryKey}
       SET status = ${status.sql}, attempts = attempts + 1, last_error = ${error.sql},
           next_attempt_at = ${NOW} + INTERVAL (${delay.sql}) MICROSECOND,
           claim_token = NULL, claimed_at = NULL, claimed_by = NULL
       WHERE id IN (?) AND status = '${PROCESSING}' AND claim_token = ${token.sql}`,
      [...status.params, ...error.params, ...delay.params, settlements.map((s) => sqlId(s.id)), ...token.params],
    );
    return result.affected ?? 0;
  }

  async release(dataSource: DataSource, claims: ClaimRef[]): Promise<number> {
    if (claims.length === 0) return 0;
    const token = perRow(claims, (claim) => claim.claimToken);
    const result = await execute(
      dataSource,
      `UPDATE ${this.table} ${this.indexed.usePrimaryKey}
       SET status = CASE WHEN attempts = 0 THEN '${PENDING}' ELSE '${FAILED}' END,
           next_attempt_at = ${NOW}, claim_token = NULL, claimed_at = NULL, claimed_by = NULL
       WHERE id IN (?) AND status = '${PROCESSING}' AND claim_token = ${token.sql}`,
      [claims.map((claim) => sqlId(claim.id)), ...token.params],
    );
    return result.affected ?? 0;
  }

  async releaseClaim(dataSource: DataSource, claimToken: string): Promise<number> {
    const result = await execute(
      dataSource,
      `UPDATE ${this.table} ${forceIndex(stateIndexNames(this.indexed.name).processing)}
       SET status = CASE WHEN attempts = 0 THEN '${PENDING}' ELSE '${FAILED}' END,
           next_attempt_at = ${NOW}, claim_token = NULL, claimed_at = NULL, claimed_by = NULL
       WHERE status = '${PROCESSING}' AND claim_token = ?`,
      [claimToken],
    );
    return result.affected ?? 0;
  }

  async findExpiredClaims(dataSource: DataSource, olderThanMs: number, limit: number): Promise<ExpiredClaim[]> {
    const result = await execute(
      dataSource,
      `SELECT CAST(id AS CHAR) AS id, claim_token, attempts, max_attempts, claimed_by, ordering_key FROM ${this.table}
       WHERE status = '${PROCESSING}' AND claimed_at < ${NOW_MINUS}
       ORDER BY claimed_at LIMIT ?`,
      [microseconds(olderThanMs), limit],
    );
    return result.records.map((r) => toExpiredClaim(r, { id: r.id }));
  }

  async healthCounts(dataSource: DataSource, staleAfterMs: number): Promise<HealthCounts> {
    const result = await execute(
      dataSource,
      `SELECT
         (SELECT count(*) FROM ${this.table} WHERE ${CLAIMABLE_SQL} AND next_attempt_at <= ${NOW}) AS backlog,
         (SELECT count(*) FROM ${this.table} WHERE status = '${PROCESSING}' AND claimed_at < ${NOW_MINUS}) AS stale`,
      [microseconds(staleAfterMs)],
    );
    const row = result.records[0];
    return { backlog: Number(row.backlog), staleProcessing: Number(row.stale) };
  }

  async statusSummary(target: SqlTarget): Promise<StatusSummary> {
    const result = await execute(target, statusSummarySql(this.table, this.summaryScope, NOW, isoTime));
    return toStatusSummary(result.records, toDate);
  }

  async deleteFinished(dataSource: DataSource, olderThanMs: number, limit: number): Promise<number> {
    // Oldest ids first, through the primary key: finished history sits at the low end. Chosen
    // without locks, then deleted by id with the condition re-checked (a finished row stays
    // finished), so a purge never holds locks on rows it passed over, as a locking scan would.
    const age = microseconds(olderThanMs);
    const candidates = await execute(
      dataSource,
      `SELECT id FROM ${this.table} WHERE ${FINISHED} AND processed_at < ${NOW_MINUS} ORDER BY id LIMIT ?`,
      [age, limit],
    );
    if (candidates.records.length === 0) return 0;
    const result = await execute(
      dataSource,
      `DELETE FROM ${this.table} WHERE id IN (?) AND ${FINISHED} AND processed_at < ${NOW_MINUS}`,
      [candidates.records.map((r) => BigInt(r.id)), age],
    );
    return result.affected ?? 0;
  }

  async findParkedKeys(dataSource: DataSource, limit: number): Promise<ParkedKey[]> {
    const result = await execute(
      dataSource,
      `SELECT c.ordering_key, ${this.scope ? `c.${this.scope}` : 'NULL'} AS scope, c.message_id, c.message_type,
              c.attempts, c.last_error, ${mysqlLaterUnfinishedCount(this.indexed, this.scope)} AS waiting
       FROM ${this.table} AS c
       WHERE c.status = '${MANUAL_REQUIRED}' AND c.ordering_key IS NOT NULL AND ${mysqlOrderingRule(this.indexed, this.scope)}
       ORDER BY c.id LIMIT ?`,
      [limit],
    );
    return result.records.map((r) => toParkedKey(r));
  }

  async requeue(dataSource: DataSource, ref: MessageRef): Promise<boolean> {
    const filter = messageRefFilter(this.scope, ref, () => '?');
    const result = await execute(
      dataSource,
      `UPDATE ${this.table} SET status = '${requeuedStatus(this.scope)}', attempts = 0, next_attempt_at = ${NOW}
       WHERE ${filter.sql} AND ${REQUEUABLE_SQL}`,
      filter.params,
    );
    return (result.affected ?? 0) > 0;
  }

  async abandon(dataSource: DataSource, ref: MessageRef): Promise<boolean> {
    const filter = messageRefFilter(this.scope, ref, () => '?');
    const result = await execute(
      dataSource,
      `UPDATE ${this.table} SET status = '${ABANDONED}', processed_at = ${NOW}
       WHERE ${filter.sql} AND ${ABANDONABLE_SQL}`,
      filter.params,
    );
    return (result.affected ?? 0) > 0;
  }

  async listMessages(target: SqlTarget, filter: MessageFilter, window: ListWindow): Promise<ListedMessage[]> {
    const params = new SqlParams(MYSQL_FILTER.placeholder);
    const sql = listMessagesSql(this.table, this.scope, filter, window, params, MYSQL_FILTER, { id: (c) => `CAST(${c} AS CHAR)`, time: (c) => isoTime(c, c) });
    const result = await execute(target, sql, params.values);
    return result.records.map((r) =>
      toListedMessage(r, this.scope, r.id, { createdAt: toDate(r.created_at)!, processedAt: toDate(r.processed_at), nextAttemptAt: toDate(r.next_attempt_at)! }),
    );
  }

  async changeMessages(dataSource: DataSource, change: MessageChange, filter: MessageFilter, batch: ChangeBatch): Promise<ChangeBatchOutcome> {
    const statuses = changedStatuses(change, filter.statuses);
    if (statuses.length === 0) return { changed: 0, lastId: null };
    // Chosen without locks, then changed by id with the filter re-checked, as `deleteFinished`
    // does: MySQL cannot read the table an UPDATE or DELETE changes in a subquery of it, so the
    // replay rule is checked when choosing only (the docs say what a publish in between can do).
    const spelling = { table: this.table, noLaterUnfinished: `(${mysqlLaterUnfinishedCount(this.indexed, this.scope)}) = 0` };
    const chosen = new SqlParams(MYSQL_FILTER.placeholder);
    const candidates = changeCandidatesSql(spelling, this.scope, change, filter, statuses, batch, 'CAST(c.id AS CHAR) AS id', chosen, MYSQL_FILTER);
    const ids: string[] = (await execute(dataSource, candidates, chosen.values)).records.map((r) => r.id);
    if (ids.length === 0) return { changed: 0, lastId: null };
    const params = new SqlParams(MYSQL_FILTER.placeholder);
    const rows = `WHERE id IN (${params.add(ids.map(sqlId))}) AND ${filterConditions({ ...filter, statuses }, '', params, MYSQL_FILTER)}`;
    const sql =
      change === 'purge'
        ? `DELETE FROM ${this.table} ${rows}`
        : `UPDATE ${this.table} ${this.indexed.usePrimaryKey} SET ${changeAssignments(change, this.scope, NOW)} ${rows}`;
    // READ COMMITTED: locks only the rows it changes, whatever index the server walks.
    const result = await dataSource.transaction('READ COMMITTED', (tx) => execute(tx, sql, params.values));
    return { changed: result.affected ?? 0, lastId: highestId(ids) };
  }
}
