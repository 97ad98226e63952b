import { DataSource } from 'typeorm';
import { ArchiveTable } from '../../engine/state-table';
import { MessageStatus } from '../../message/message-status';
import { assertMovedWhole } from '../archive-batch';
import { FilterFlavour } from '../message-filter-sql';
import { MessageScope } from '../message-ref-sql';
import { SqlStateTable } from '../sql-state-table';
import { StateTableFlavour } from '../state-table-flavour';
import { CLAIMABLE_SQL, FINISHED_SQL, orderingRule, UNFINISHED_SQL } from '../status-sql';
import { sqliteConnectionOf } from './sqlite-connection';
import { sqliteExecute } from './sqlite-executor';
import { SqliteRow } from './sqlite-statements';
import { fromSqliteTime, SQLITE_NOW, sqliteNowMinusMs, sqliteNowPlusMs, toSqliteTime } from './sqlite-time';

const { PROCESSING } = MessageStatus;

/**
 * Operator filters on SQLite: `?` parameters and times as the stored UTC text, which compares as
 * text. A substring is found with `instr`, not LIKE: SQLite's LIKE ignores the case of ASCII
 * letters, and `instr` has no wildcards to escape.
 */
const SQLITE_FILTER: FilterFlavour = {
  placeholder: () => '?',
  id: (id) => BigInt(id),
  time: (params, instant) => params.add(toSqliteTime(instant.toISOString())),
  contains: (column, params, text) => `instr(${column}, ${params.add(text)}) > 0`,
};

/**
 * SQLite's spelling of the state table: `?` parameters, its clock as the stored UTC text, counts
 * from `RETURNING`, no locking clauses (one writer at a time), and batch settles through `UPDATE
 * ... FROM` a batch given as one JSON parameter (SQLite caps bound parameters), read back as rows.
 */
function sqliteFlavour(table: string): StateTableFlavour {
  return {
    now: SQLITE_NOW,
    nowPlus: sqliteNowPlusMs,
    nowMinus: sqliteNowMinusMs,
    duration: (ms) => ms,
    filter: SQLITE_FILTER,
    async run(target, sql, params) {
      const rows = await sqliteExecute(target, sql, params);
      return { rows, changed: rows.length };
    },
    returningId: '\n       RETURNING id',
    selectId: (column) => column,
    readTime: (value) => fromSqliteTime(value as string | null),
    byClaimToken: '',
    orderingRule: (scope) => orderingRule(table, scope ?? ''),
    laterUnfinishedCount: (scope) =>
      `(SELECT count(*) FROM ${table} AS w
               WHERE w.ordering_key = c.ordering_key ${scope ? `AND w.${scope} = c.${scope}` : ''} AND w.id > c.id AND w.${UNFINISHED_SQL})`,
    updateClaims(claims, values, set) {
      const columns = ['CAST(value ->> 0 AS INTEGER) AS id', 'value ->> 1 AS token', ...values.map((v, i) => `value ->> ${i + 2} AS ${v.name}`)];
      return {
        sql: `WITH s AS (SELECT ${columns.join(', ')} FROM json_each(?))
       UPDATE ${table} AS t SET ${set({ column: (name) => `t.${name}`, value: (name) => `s.${name}` })}
       FROM s WHERE t.id = s.id AND t.claim_token = s.token AND t.status = '${PROCESSING}'
       RETURNING id`,
        params: [JSON.stringify(claims.map((c) => [c.id, c.claimToken, ...values.map((v) => v.of(c))]))],
      };
    },
  };
}

/**
 * SQLite transitions shared by the outbox and inbox tables. Every statement given the DataSource
 * runs outside the application's transactions.
 */
export class SqliteStateTable extends SqlStateTable {
  /**
   * @param table the quoted table name
   * @param scope the column that scopes message ids and ordering keys (`consumer` in the inbox)
   */
  constructor(table: string, label: string, scope: MessageScope) {
    super(table, label, scope, sqliteFlavour(table));
  }

  async archiveFinished(dataSource: DataSource, archive: ArchiveTable, olderThanMs: number, limit: number): Promise<number> {
    // One IMMEDIATE transaction: no other writer, in any process, runs between choosing the rows
    // and deleting them. Chosen once, by id, then copied and deleted by those ids: the clock moves
    // between statements, and an age condition evaluated again could take a row not copied.
    const columns = archive.columns.join(', ');
    return sqliteConnectionOf(dataSource).outsideTransaction((statements) =>
      statements.immediateTransaction(() => {
        const chosen = statements.all(`SELECT id FROM ${this.table} WHERE ${FINISHED_SQL} AND processed_at < ${sqliteNowMinusMs('?')} ORDER BY id LIMIT ?`, [
          olderThanMs,
          limit,
        ]);
        if (chosen.length === 0) return 0;
        const ids = JSON.stringify(chosen.map((r) => String(r.id)));
        const copied = statements.all(
          `INSERT INTO ${archive.quoted} (${columns}, archived_at)
           SELECT ${columns}, ${SQLITE_NOW} FROM ${this.table} WHERE id IN (SELECT CAST(value AS INTEGER) FROM json_each(?))
           RETURNING archive_id`,
          [ids],
        );
        const deleted = statements.all(
          `DELETE FROM ${this.table} WHERE id IN (SELECT CAST(value AS INTEGER) FROM json_each(?)) AND ${FINISHED_SQL} RETURNING id`,
          [ids],
        );
        assertMovedWhole(copied.length, deleted.length, archive);
        return deleted.length;
      }),
    );
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
        return statements.all(`SELECT ${columns} FROM ${this.table} WHERE status = '${PROCESSING}' AND claim_token = ? ORDER BY id`, [claimToken]);
      }),
    );
  }
}
