import { DataSource } from 'typeorm';
import { ArchiveTable, ChangeBatch, ChangeBatchOutcome, MessageChange, MessageFilter } from '../../engine/state-table';
import { MessageStatus } from '../../message/message-status';
import { assertMovedWhole } from '../archive-batch';
import { changeAssignments, changeCandidatesSql, changedStatuses, highestId } from '../message-change-sql';
import { FilterFlavour, filterConditions, LIKE_ESCAPE, likeContaining, SqlParams } from '../message-filter-sql';
import { MessageScope } from '../message-ref-sql';
import { execute } from '../sql-executor';
import { SqlStateTable } from '../sql-state-table';
import { noPerClaimValues, StateTableFlavour } from '../state-table-flavour';
import { FINISHED_SQL } from '../status-sql';
import {
  claimFence,
  isoTime,
  microseconds,
  mysqlLaterUnfinishedCount,
  mysqlOrderingRule,
  MysqlTable,
  NOW,
  NOW_MINUS,
  perRow,
  sqlId,
  toDate,
  utcDatetime,
} from './mysql-sql';

const { PROCESSING } = MessageStatus;

/**
 * Operator filters on MySQL/MariaDB: `?` parameters, times as UTC DATETIME(6) literals (which
 * every time column holds), and LIKE, which the tables' binary collation makes case-sensitive.
 */
const MYSQL_FILTER: FilterFlavour = {
  placeholder: () => '?',
  id: sqlId,
  time: (params, instant) => `CAST(${params.add(utcDatetime(instant.toISOString()))} AS DATETIME(6))`,
  contains: (column, params, text) => `${column} LIKE ${params.add(likeContaining(text))} ESCAPE '${LIKE_ESCAPE}'`,
};

/**
 * MySQL/MariaDB's spelling of the state table: `?` parameters, UTC DATETIME(6) times with
 * microsecond intervals, counts from the driver (no `RETURNING`), index hints where the optimizer
 * chooses wrong (see `MysqlTable`), and batch settles fenced by each claim's token and ids
 * (`claimFence`; no `unnest`).
 */
function mysqlFlavour(table: MysqlTable): StateTableFlavour {
  return {
    now: NOW,
    nowPlus: (us) => `${NOW} + INTERVAL (${us}) MICROSECOND`,
    nowMinus: (us) => `${NOW} - INTERVAL ${us} MICROSECOND`,
    duration: microseconds,
    filter: MYSQL_FILTER,
    async run(target, sql, params) {
      const result = await execute(target, sql, params);
      return { rows: result.records, changed: result.affected ?? 0 };
    },
    returningId: '',
    selectId: (column) => `CAST(${column} AS CHAR)`,
    selectTime: isoTime,
    readTime: (value) => toDate(value as string | null),
    byClaimToken: table.useProcessingIndex,
    orderingRule: (scope) => mysqlOrderingRule(table, scope),
    laterUnfinishedCount: (scope) => mysqlLaterUnfinishedCount(table, scope),
    updateClaims(claims, values, set) {
      // Each value's `CASE id` adds its parameters where the SET list places it.
      const params: unknown[] = [];
      const value = (name: string) => {
        const perClaim = perRow(claims, values.find((v) => v.name === name)!.of);
        params.push(...perClaim.params);
        return perClaim.sql;
      };
      const assignments = set({ column: (name) => name, value: values.length === 0 ? noPerClaimValues : value });
      const fence = claimFence(claims);
      return {
        sql: `UPDATE ${table.quoted} ${table.usePrimaryKey} SET ${assignments}
       WHERE status = '${PROCESSING}' AND (${fence.sql})`,
        params: [...params, ...fence.params],
      };
    },
  };
}

/**
 * MySQL/MariaDB transitions shared by the outbox and inbox tables. Statements that choose rows
 * and then change them are two statements here: MySQL cannot read the table an UPDATE or DELETE
 * changes in a subquery of it.
 */
export class MysqlStateTable extends SqlStateTable {
  /** The table with its index hints. */
  protected readonly indexed: MysqlTable;

  /**
   * @param indexed the table with its index hints (`mysqlTable`)
   * @param scope the column that scopes message ids and ordering keys (`consumer` in the inbox)
   */
  constructor(indexed: MysqlTable, label: string, scope: MessageScope) {
    super(indexed.quoted, label, scope, mysqlFlavour(indexed));
    this.indexed = indexed;
  }

  override async deleteFinished(dataSource: DataSource, olderThanMs: number, limit: number): Promise<number> {
    // Oldest ids first, through the primary key: finished history sits at the low end. Chosen
    // without locks, then deleted by id with the condition re-checked (a finished row stays
    // finished), so a purge never holds locks on rows it passed over, as a locking scan would.
    const age = microseconds(olderThanMs);
    const candidates = await execute(dataSource, `SELECT id FROM ${this.table} WHERE ${FINISHED_SQL} AND processed_at < ${NOW_MINUS} ORDER BY id LIMIT ?`, [
      age,
      limit,
    ]);
    if (candidates.records.length === 0) return 0;
    const result = await execute(dataSource, `DELETE FROM ${this.table} WHERE id IN (?) AND ${FINISHED_SQL} AND processed_at < ${NOW_MINUS}`, [
      candidates.records.map((r) => BigInt(r.id)),
      age,
    ]);
    return result.affected ?? 0;
  }

  async archiveFinished(dataSource: DataSource, archive: ArchiveTable, olderThanMs: number, limit: number): Promise<number> {
    // Chosen without locks, as `deleteFinished` chooses; then, in one READ COMMITTED transaction,
    // locked by primary key with the condition re-checked against each row's latest version (a
    // row a replay made PENDING meanwhile drops out; one being changed is waited for, briefly),
    // copied, and deleted by the same ids. READ COMMITTED: the copy reads without locking and the
    // statements lock only the rows they name, never gaps of the table.
    const age = microseconds(olderThanMs);
    const candidates = await execute(
      dataSource,
      `SELECT CAST(id AS CHAR) AS id FROM ${this.table} WHERE ${FINISHED_SQL} AND processed_at < ${NOW_MINUS} ORDER BY id LIMIT ?`,
      [age, limit],
    );
    if (candidates.records.length === 0) return 0;
    const columns = archive.columns.join(', ');
    return dataSource.transaction('READ COMMITTED', async (tx) => {
      const locked = await execute(
        tx,
        `SELECT CAST(id AS CHAR) AS id FROM ${this.table} ${this.indexed.usePrimaryKey}
         WHERE id IN (?) AND ${FINISHED_SQL} AND processed_at < ${NOW_MINUS} FOR UPDATE`,
        [candidates.records.map((r) => sqlId(r.id)), age],
      );
      if (locked.records.length === 0) return 0;
      const ids = locked.records.map((r) => sqlId(r.id));
      const copied = await execute(
        tx,
        `INSERT INTO ${archive.quoted} (${columns}, archived_at)
         SELECT ${columns}, ${NOW} FROM ${this.table} ${this.indexed.usePrimaryKey} WHERE id IN (?)`,
        [ids],
      );
      const deleted = await execute(tx, `DELETE FROM ${this.table} WHERE id IN (?) AND ${FINISHED_SQL}`, [ids]);
      assertMovedWhole(copied.affected ?? 0, deleted.affected ?? 0, archive);
      return deleted.affected ?? 0;
    });
  }

  override async changeMessages(dataSource: DataSource, change: MessageChange, filter: MessageFilter, batch: ChangeBatch): Promise<ChangeBatchOutcome> {
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
