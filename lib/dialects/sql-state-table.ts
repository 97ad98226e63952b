import { Logger } from '@nestjs/common';
import { DataSource } from 'typeorm';
import {
  ArchiveTable,
  ChangeBatch,
  ChangeBatchOutcome,
  ClaimRef,
  ExpiredClaim,
  FailedSettlement,
  HealthCounts,
  ListWindow,
  MessageChange,
  MessageFilter,
  MessageRef,
  StateTable,
} from '../engine/state-table';
import { ListedMessage, MessageDetail, ParkedKey, RecentActivity } from '../engine/message-views';
import { StatusSummary } from '../engine/status-summary';
import { MessageStatus } from '../message/message-status';
import { listMessagesSql, toListedMessage } from './listed-message-sql';
import { countMessagesSql, messageDetailSql, recentActivitySql, toMessageDetail, toSliceCounts } from './message-detail-sql';
import { changeAssignments, changeCandidatesSql, changedStatuses, outcomeOfChanged } from './message-change-sql';
import { SqlParams, statusInSql } from './message-filter-sql';
import { messageRefFilter, MessageScope, requeuedStatus } from './message-ref-sql';
import { toExpiredClaim, toParkedKey, toStatusSummary } from './row-mapping';
import { SqlTarget } from './sql-executor';
import { ABANDONABLE_SQL, CLAIMABLE_SQL, FINISHED_SQL, REQUEUABLE_SQL, statusSummarySql } from './status-sql';
import { ClaimBatchNames, PerClaimValue, StateTableFlavour } from './state-table-flavour';
import { readClaimedRows, UnreadableClaim } from './unreadable-row';
import { describeError } from '../retry/error-classifier';

const { PENDING, PROCESSING, DONE, FAILED, MANUAL_REQUIRED, ABANDONED } = MessageStatus;

/**
 * The state-table transitions written once for every database, in the spelling of a
 * `StateTableFlavour`: one statement per call (one per outcome per batch for settles), each
 * claim fenced by its token. A dialect's class adds what differs in more than spelling.
 *
 * SET lists never read a column an earlier assignment of the same statement wrote: MySQL runs
 * assignments left to right, each seeing the ones before it.
 */
export abstract class SqlStateTable implements StateTable {
  /** The column `statusSummary` groups by besides status: the scope, unless a table says otherwise. */
  protected readonly summaryScope: string | null = null;

  /**
   * @param table the quoted (and, where the DataSource has a schema, qualified) table name
   * @param scope the column that scopes message ids and ordering keys (`consumer` in the inbox)
   */
  protected constructor(
    protected readonly table: string,
    readonly label: string,
    protected readonly scope: MessageScope,
    protected readonly flavour: StateTableFlavour,
  ) {}

  /** Reports rows a claim took and could not read; each is reported once, as it is set aside. */
  private readonly logger = new Logger('OutboxClaim');

  abstract archiveFinished(dataSource: DataSource, archive: ArchiveTable, olderThanMs: number, limit: number): Promise<number>;

  async settleDone(target: SqlTarget, claims: ClaimRef[]): Promise<number> {
    if (claims.length === 0) return 0;
    return this.updateClaims(target, claims, [], () => `status = '${DONE}', processed_at = ${this.flavour.now}, claim_token = NULL, last_error = NULL`);
  }

  async settleFailed(target: SqlTarget, settlements: FailedSettlement[]): Promise<number> {
    if (settlements.length === 0) return 0;
    const values: PerClaimValue<FailedSettlement>[] = [
      { name: 'status', type: 'text', of: (s) => s.status },
      { name: 'delay_ms', type: 'bigint', of: (s) => this.flavour.duration(s.delayMs) },
      { name: 'error', type: 'text', of: (s) => s.error },
    ];
    return this.updateClaims(
      target,
      settlements,
      values,
      ({ column, value }) =>
        `status = ${value('status')}, attempts = ${column('attempts')} + 1, last_error = ${value('error')},
           next_attempt_at = ${this.flavour.nowPlus(value('delay_ms'))},
           claim_token = NULL, claimed_at = NULL, claimed_by = NULL`,
    );
  }

  /**
   * Reads the rows a claim under `claimToken` took, each with `read`. A row that cannot be read
   * (see `UnreadableRowError`) fails alone: it is settled MANUAL_REQUIRED at once with the reason,
   * so it is neither given back to be claimed again every poll nor charged for the rest of its
   * batch, and the other rows are returned to be sent. Should that settle fail, the row stays
   * claimed until the stuck detector reclaims it.
   */
  protected async readClaim<T>(dataSource: DataSource, rows: Record<string, any>[], claimToken: string, read: (row: Record<string, any>) => T): Promise<T[]> {
    const { readable, unreadable } = readClaimedRows(rows, claimToken, read);
    if (unreadable.length === 0) return readable;
    try {
      await this.settleUnreadable(dataSource, unreadable);
      for (const row of unreadable) {
        this.logger.error(`${this.label} row ${row.id} (message ${row.messageId ?? 'unknown'}) cannot be read and is now MANUAL_REQUIRED: ${row.reason}`);
      }
    } catch (error) {
      this.logger.error(
        `Could not set aside ${unreadable.length} ${this.label} row(s) that cannot be read; the stuck detector will reclaim them: ${describeError(error, 500)}`,
      );
    }
    return readable;
  }

  /**
   * Unreadable rows become MANUAL_REQUIRED with their reason, fenced by their claim. No attempt
   * is counted: none was made, and the count itself may be what cannot be read.
   */
  private async settleUnreadable(dataSource: DataSource, rows: UnreadableClaim[]): Promise<number> {
    const values: PerClaimValue<UnreadableClaim>[] = [{ name: 'error', type: 'text', of: (row) => row.reason }];
    return this.updateClaims(
      dataSource,
      rows,
      values,
      ({ value }) =>
        `status = '${MANUAL_REQUIRED}', last_error = ${value('error')}, next_attempt_at = ${this.flavour.now},
           claim_token = NULL, claimed_at = NULL, claimed_by = NULL`,
    );
  }

  async renew(dataSource: DataSource, claims: ClaimRef[]): Promise<number> {
    if (claims.length === 0) return 0;
    return this.updateClaims(dataSource, claims, [], () => `claimed_at = ${this.flavour.now}`);
  }

  async release(dataSource: DataSource, claims: ClaimRef[]): Promise<number> {
    if (claims.length === 0) return 0;
    return this.updateClaims(dataSource, claims, [], ({ column }) => this.released(column('attempts')));
  }

  async releaseClaim(dataSource: DataSource, claimToken: string): Promise<number> {
    // Through the processing index: only PROCESSING rows are read.
    const hint = this.flavour.byClaimToken ? ` ${this.flavour.byClaimToken}` : '';
    const result = await this.flavour.run(
      dataSource,
      `UPDATE ${this.table}${hint}
       SET ${this.released('attempts')}
       WHERE status = '${PROCESSING}' AND claim_token = ${this.flavour.filter.placeholder(1)}${this.flavour.returningId}`,
      [claimToken],
    );
    return result.changed;
  }

  async findExpiredClaims(dataSource: DataSource, olderThanMs: number, limit: number): Promise<ExpiredClaim[]> {
    const p = this.flavour.filter.placeholder;
    const result = await this.flavour.run(
      dataSource,
      `SELECT ${this.flavour.selectId('id')} AS id, claim_token, attempts, max_attempts, claimed_by, ordering_key, last_error FROM ${this.table}
       WHERE status = '${PROCESSING}' AND claimed_at < ${this.flavour.nowMinus(p(1))}
       ORDER BY claimed_at LIMIT ${p(2)}`,
      [this.flavour.duration(olderThanMs), limit],
    );
    return result.rows.map((r) => toExpiredClaim(r, { id: String(r.id) }));
  }

  async healthCounts(dataSource: DataSource, staleAfterMs: number): Promise<HealthCounts> {
    const { now } = this.flavour;
    const result = await this.flavour.run(
      dataSource,
      `SELECT
         (SELECT count(*) FROM ${this.table} WHERE ${CLAIMABLE_SQL} AND next_attempt_at <= ${now}) AS backlog,
         (SELECT count(*) FROM ${this.table}
          WHERE status = '${PROCESSING}' AND claimed_at < ${this.flavour.nowMinus(this.flavour.filter.placeholder(1))}) AS stale`,
      [this.flavour.duration(staleAfterMs)],
    );
    const row = result.rows[0];
    return { backlog: Number(row.backlog), staleProcessing: Number(row.stale) };
  }

  async statusSummary(target: SqlTarget): Promise<StatusSummary> {
    const selectTime = this.flavour.selectTime?.bind(this.flavour);
    const result = await this.flavour.run(target, statusSummarySql(this.table, this.summaryScope, this.flavour.now, selectTime));
    return toStatusSummary(result.rows, (value) => this.flavour.readTime(value));
  }

  /**
   * One statement that chooses the oldest finished rows in a subquery and deletes them; a
   * database that cannot read the table a DELETE changes in its subquery overrides this.
   */
  async deleteFinished(dataSource: DataSource, olderThanMs: number, limit: number): Promise<number> {
    // Oldest ids first, through the primary key: finished history sits at the low end.
    const p = this.flavour.filter.placeholder;
    const chosen = `SELECT id FROM ${this.table}
         WHERE ${FINISHED_SQL} AND processed_at < ${this.flavour.nowMinus(p(1))}
         ORDER BY id LIMIT ${p(2)}`;
    const result = await this.flavour.run(
      dataSource,
      `${this.chosenOnce(chosen)}DELETE FROM ${this.table} WHERE id IN (${this.chosenIds(chosen)})${this.flavour.returningId}`,
      [this.flavour.duration(olderThanMs), limit],
    );
    return result.changed;
  }

  async findParkedKeys(dataSource: DataSource, limit: number): Promise<ParkedKey[]> {
    const result = await this.flavour.run(
      dataSource,
      `SELECT c.ordering_key, ${this.scope ? `c.${this.scope}` : 'NULL'} AS scope, ${this.summaryScope === 'transport' ? 'c.transport' : 'NULL'} AS transport,
              c.message_id, c.message_type,
              c.attempts, c.last_error, ${this.flavour.laterUnfinishedCount(this.scope)} AS waiting
       FROM ${this.table} AS c
       WHERE c.status = '${MANUAL_REQUIRED}' AND c.ordering_key IS NOT NULL AND ${this.flavour.orderingRule(this.scope)}
       ORDER BY c.id LIMIT ${this.flavour.filter.placeholder(1)}`,
      [limit],
    );
    return result.rows.map((r) => toParkedKey(r));
  }

  async requeue(dataSource: DataSource, ref: MessageRef): Promise<boolean> {
    const filter = messageRefFilter(this.scope, ref, this.flavour.filter.placeholder);
    const result = await this.flavour.run(
      dataSource,
      `UPDATE ${this.table} SET status = '${requeuedStatus(this.scope)}', attempts = 0, next_attempt_at = ${this.flavour.now}
       WHERE ${filter.sql} AND ${REQUEUABLE_SQL}${this.flavour.returningId}`,
      filter.params,
    );
    return result.changed > 0;
  }

  async abandon(dataSource: DataSource, ref: MessageRef): Promise<boolean> {
    const filter = messageRefFilter(this.scope, ref, this.flavour.filter.placeholder);
    const result = await this.flavour.run(
      dataSource,
      `UPDATE ${this.table} SET status = '${ABANDONED}', processed_at = ${this.flavour.now}
       WHERE ${filter.sql} AND ${ABANDONABLE_SQL}${this.flavour.returningId}`,
      filter.params,
    );
    return result.changed > 0;
  }

  async listMessages(target: SqlTarget, filter: MessageFilter, window: ListWindow): Promise<ListedMessage[]> {
    const { flavour } = this;
    const params = new SqlParams(flavour.filter.placeholder);
    const time = flavour.selectTime ? (column: string) => flavour.selectTime!(column, column) : (column: string) => column;
    const sql = listMessagesSql(this.table, this.scope, filter, window, params, flavour.filter, { id: (column) => flavour.selectId(column), time });
    const result = await flavour.run(target, sql, params.values);
    return result.rows.map((r) =>
      toListedMessage(r, this.scope, String(r.id), {
        createdAt: flavour.readTime(r.created_at)!,
        processedAt: flavour.readTime(r.processed_at),
        nextAttemptAt: flavour.readTime(r.next_attempt_at)!,
      }),
    );
  }

  async readMessage(target: SqlTarget, ref: MessageRef): Promise<MessageDetail | null> {
    const { sql, params } = messageDetailSql(this.table, this.scope, ref, this.flavour);
    const [row] = (await this.flavour.run(target, sql, params)).rows;
    return row ? toMessageDetail(row, this.scope, (value) => this.flavour.readTime(value)) : null;
  }

  async countMessages(target: SqlTarget, filter: MessageFilter): Promise<number> {
    const params = new SqlParams(this.flavour.filter.placeholder);
    const result = await this.flavour.run(target, countMessagesSql(this.table, filter, params, this.flavour.filter), params.values);
    return Number(result.rows[0]?.n ?? 0);
  }

  async recentActivity(target: SqlTarget, windowMs: number, slices: number): Promise<RecentActivity> {
    const params = new SqlParams(this.flavour.filter.placeholder);
    const [row] = (await this.flavour.run(target, recentActivitySql(this.table, windowMs, slices, params, this.flavour), params.values)).rows;
    return { done: toSliceCounts(row, 'done', slices), created: toSliceCounts(row, 'created', slices) };
  }

  /**
   * One statement that chooses the batch's rows in a subquery (passing over rows others hold,
   * where another writer can hold one) and changes them, the statuses re-checked; a database
   * that cannot read the table an UPDATE changes in its subquery overrides this.
   */
  async changeMessages(dataSource: DataSource, change: MessageChange, filter: MessageFilter, batch: ChangeBatch): Promise<ChangeBatchOutcome> {
    const statuses = changedStatuses(change, filter.statuses);
    if (statuses.length === 0) return { changed: 0, lastId: null };
    const params = new SqlParams(this.flavour.filter.placeholder);
    const chosen = changeCandidatesSql({ table: this.table }, this.scope, change, filter, statuses, batch, 'c.id', params, this.flavour.filter);
    const rows = `WHERE id IN (${this.chosenIds(chosen)}) AND ${statusInSql('status', statuses)} RETURNING ${this.flavour.selectId('id')} AS id`;
    const sql =
      this.chosenOnce(chosen, 'c') +
      (change === 'purge'
        ? `DELETE FROM ${this.table} ${rows}`
        : `UPDATE ${this.table} SET ${changeAssignments(change, this.scope, this.flavour.now)} ${rows}`);
    const result = await this.flavour.run(dataSource, sql, params.values);
    return outcomeOfChanged(result.rows.map((r) => String(r.id)));
  }

  /**
   * Where the database locks what a statement chooses (`skipLocked`): the choice, locked, as a
   * MATERIALIZED CTE `chosen`, made once. As an IN subquery the planner may rescan it for every
   * row, and each rescan passes over the rows the statement already changed and locks the next
   * ones, so a batch would take more rows than its limit. Empty where nothing is locked.
   */
  private chosenOnce(chosen: string, alias?: string): string {
    if (!this.flavour.skipLocked) return '';
    return `WITH chosen AS MATERIALIZED (${chosen}\n      ${this.flavour.skipLocked(alias)})\n      `;
  }

  /** The ids of the choice: from `chosen` where `chosenOnce` made it, else the choice itself. */
  private chosenIds(chosen: string): string {
    return this.flavour.skipLocked ? 'SELECT id FROM chosen' : chosen;
  }

  /** The SET list giving a claim back unattempted: due now, PENDING unless it failed before. */
  private released(attempts: string): string {
    return `status = CASE WHEN ${attempts} = 0 THEN '${PENDING}' ELSE '${FAILED}' END,
           next_attempt_at = ${this.flavour.now}, claim_token = NULL, claimed_at = NULL, claimed_by = NULL`;
  }

  private async updateClaims<T extends ClaimRef>(
    target: SqlTarget,
    claims: T[],
    values: PerClaimValue<T>[],
    set: (names: ClaimBatchNames) => string,
  ): Promise<number> {
    const statement = this.flavour.updateClaims(claims, values, set);
    return (await this.flavour.run(target, statement.sql, statement.params)).changed;
  }
}
