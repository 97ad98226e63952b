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
import { execute, SqlTarget } from '../sql-executor';
import { listMessagesSql, toListedMessage } from '../listed-message-sql';
import { changeAssignments, changeCandidatesSql, changedStatuses, outcomeOfChanged } from '../message-change-sql';
import { SqlParams, statusInSql } from '../message-filter-sql';
import { POSTGRES_FILTER } from './postgres-filter';

const { PENDING, PROCESSING, DONE, FAILED, MANUAL_REQUIRED, ABANDONED } = MessageStatus;


/**
 * PostgreSQL transitions shared by the outbox and inbox tables: batch settles through `unnest`
 * (one statement per outcome per batch), each row fenced by its claim token.
 */
export class PostgresStateTable implements StateTable {
  /** The column `statusSummary` groups by besides status: the scope, unless a table says otherwise. */
  protected readonly summaryScope: string | null = null;

  /**
   * @param table the schema-qualified, quoted table name
   * @param scope the column that scopes message ids and ordering keys (`consumer` in the inbox)
   */
  constructor(
    protected readonly table: string,
    readonly label: string,
    private readonly scope: MessageScope,
  ) {}

  async settleDone(target: SqlTarget, claims: ClaimRef[]): Promise<number> {
    if (claims.length === 0) return 0;
    const result = await execute(
      target,
      `UPDATE ${this.table} AS t SET status = '${DONE}', processed_at = now(), claim_token = NULL, last_error = NULL
       FROM unnest($1::bigint[], $2::uuid[]) AS s(id, token)
       WHERE t.id = s.id AND t.claim_token = s.token AND t.status = '${PROCESSING}'
       RETURNING t.id`,
      [claims.map((c) => c.id), claims.map((c) => c.claimToken)],
    );
    return result.records.length;
  }

  async settleFailed(target: SqlTarget, settlements: FailedSettlement[]): Promise<number> {
    if (settlements.length === 0) return 0;
    const result = await execute(
      target,
      `UPDATE ${this.table} AS t
       SET status = s.status, attempts = t.attempts + 1, last_error = s.error,
           next_attempt_at = now() + s.delay_ms * interval '1 millisecond',
           claim_token = NULL, claimed_at = NULL, claimed_by = NULL
       FROM unnest($1::bigint[], $2::uuid[], $3::text[], $4::bigint[], $5::text[]) AS s(id, token, status, delay_ms, error)
       WHERE t.id = s.id AND t.claim_token = s.token AND t.status = '${PROCESSING}'
       RETURNING t.id`,
      [
        settlements.map((s) => s.id),
        settlements.map((s) => s.claimToken),
        settlements.map((s) => s.status),
        settlements.map((s) => s.delayMs),
        settlements.map((s) => s.error),
      ],
    );
    return result.records.length;
  }

  async release(dataSource: DataSource, claims: ClaimRef[]): Promise<number> {
    if (claims.length === 0) return 0;
    const result = await execute(
      dataSource,
      `UPDATE ${this.table} AS t
       SET status = CASE WHEN t.attempts = 0 THEN '${PENDING}' ELSE '${FAILED}' END,
           next_attempt_at = now(), claim_token = NULL, claimed_at = NULL, claimed_by = NULL
       FROM unnest($1::bigint[], $2::uuid[]) AS s(id, token)
       WHERE t.id = s.id AND t.claim_token = s.token AND t.status = '${PROCESSING}'
       RETURNING t.id`,
      [claims.map((c) => c.id), claims.map((c) => c.claimToken)],
    );
    return result.records.length;
  }

  async releaseClaim(dataSource: DataSource, claimToken: string): Promise<number> {
    // Through the processing index: only PROCESSING rows are read.
    const result = await execute(
      dataSource,
      `UPDATE ${this.table}
       SET status = CASE WHEN attempts = 0 THEN '${PENDING}' ELSE '${FAILED}' END,
           next_attempt_at = now(), claim_token = NULL, claimed_at = NULL, claimed_by = NULL
       WHERE status = '${PROCESSING}' AND claim_token = $1
       RETURNING id`,
      [claimToken],
    );
    return result.records.length;
  }

  async findExpiredClaims(dataSource: DataSource, olderThanMs: number, limit: number): Promise<ExpiredClaim[]> {
    const result = await execute(
      dataSource,
      `SELECT id, claim_token, attempts, max_attempts, claimed_by, ordering_key FROM ${this.table}
       WHERE status = '${PROCESSING}' AND claimed_at < now() - $1 * interval '1 millisecond'
       ORDER BY claimed_at LIMIT $2`,
      [olderThanMs, limit],
    );
    return result.records.map((r) => toExpiredClaim(r, { id: r.id }));
  }

  async healthCounts(dataSource: DataSource, staleAfterMs: number): Promise<HealthCounts> {
    const result = await execute(
      dataSource,
      `SELECT
         (SELECT count(*) FROM ${this.table} WHERE ${CLAIMABLE_SQL} AND next_attempt_at <= now()) AS backlog,
         (SELECT count(*) FROM ${this.table}
          WHERE status = '${PROCESSING}' AND claimed_at < now() - $1 * interval '1 millisecond') AS stale`,
      [staleAfterMs],
    );
    const row = result.records[0];
    return { backlog: Number(row.backlog), staleProcessing: Number(row.stale) };
  }

  async statusSummary(target: SqlTarget): Promise<StatusSummary> {
    const result = await execute(target, statusSummarySql(this.table, this.summaryScope, 'now()'));
    return toStatusSummary(result.records, (value: Date | null) => value);
  }

  async deleteFinished(dataSource: DataSource, olderThanMs: number, limit: number): Promise<number> {
    // Oldest ids first, through the primary key: finished history sits at the low end.
    const result = await execute(
      dataSource,
      `DELETE FROM ${this.table} WHERE id IN (
         SELECT id FROM ${this.table}
         WHERE status IN ('${DONE}', '${ABANDONED}') AND processed_at < now() - $1 * interval '1 millisecond'
         ORDER BY id LIMIT $2
         FOR UPDATE SKIP LOCKED)
       RETURNING id`,
      [olderThanMs, limit],
    );
    return result.records.length;
  }

  async findParkedKeys(dataSource: DataSource, limit: number): Promise<ParkedKey[]> {
    const scope = this.scope ? `AND w.${this.scope} = c.${this.scope}` : '';
    const result = await execute(
      dataSource,
      `SELECT c.ordering_key, ${this.scope ? `c.${this.scope}` : 'NULL'} AS scope, c.message_id, c.message_type,
              c.attempts, c.last_error,
              (SELECT count(*) FROM ${this.table} AS w
               WHERE w.ordering_key = c.ordering_key ${scope} AND w.id > c.id AND w.${UNFINISHED_SQL}) AS waiting
       FROM ${this.table} AS c
       WHERE c.status = '${MANUAL_REQUIRED}' AND c.ordering_key IS NOT NULL AND ${orderingRule(this.table, this.scope ?? '')}
       ORDER BY c.id LIMIT $1`,
      [limit],
    );
    return result.records.map((r) => toParkedKey(r));
  }

  async requeue(dataSource: DataSource, ref: MessageRef): Promise<boolean> {
    const filter = messageRefFilter(this.scope, ref, (n) => `$${n}`);
    const result = await execute(
      dataSource,
      `UPDATE ${this.table} SET status = '${requeuedStatus(this.scope)}', attempts = 0, next_attempt_at = now()
       WHERE ${filter.sql} AND ${REQUEUABLE_SQL}
       RETURNING id`,
      filter.params,
    );
    return result.records.length > 0;
  }

  async abandon(dataSource: DataSource, ref: MessageRef): Promise<boolean> {
    const filter = messageRefFilter(this.scope, ref, (n) => `$${n}`);
    const result = await execute(
      dataSource,
      `UPDATE ${this.table} SET status = '${ABANDONED}', processed_at = now()
       WHERE ${filter.sql} AND ${ABANDONABLE_SQL}
       RETURNING id`,
      filter.params,
    );
    return result.records.length > 0;
  }

  async listMessages(target: SqlTarget, filter: MessageFilter, window: ListWindow): Promise<ListedMessage[]> {
    const params = new SqlParams(POSTGRES_FILTER.placeholder);
    const sql = listMessagesSql(this.table, this.scope, filter, window, params, POSTGRES_FILTER, { id: (c) => `${c}::text`, time: (c) => c });
    const result = await execute(target, sql, params.values);
    return result.records.map((r) =>
      toListedMessage(r, this.scope, r.id, { createdAt: r.created_at, processedAt: r.processed_at, nextAttemptAt: r.next_attempt_at }),
    );
  }

  async changeMessages(dataSource: DataSource, change: MessageChange, filter: MessageFilter, batch: ChangeBatch): Promise<ChangeBatchOutcome> {
    const statuses = changedStatuses(change, filter.statuses);
    if (statuses.length === 0) return { changed: 0, lastId: null };
    const params = new SqlParams(POSTGRES_FILTER.placeholder);
    // Rows another transaction holds are passed over, never waited on: a claim under way makes them PROCESSING.
    const candidates = `${changeCandidatesSql({ table: this.table }, this.scope, change, filter, statuses, batch, 'c.id', params, POSTGRES_FILTER)}
      FOR UPDATE OF c SKIP LOCKED`;
    const rows = `WHERE id IN (${candidates}) AND ${statusInSql('status', statuses)} RETURNING id::text AS id`;
    const sql =
      change === 'purge'
        ? `DELETE FROM ${this.table} ${rows}`
        : `UPDATE ${this.table} SET ${changeAssignments(change, this.scope, 'now()')} ${rows}`;
    const result = await execute(dataSource, sql, params.values);
    return outcomeOfChanged(result.records.map((r) => r.id));
  }
}
