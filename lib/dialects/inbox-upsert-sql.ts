import { failedStatusSql, GiveUpOperands, givesUpSql } from '../engine/give-up-rule';
import { MessageStatus } from '../message/message-status';
import { InboxRow, StartedNotes } from './inbox-dialect';
import { SqlParams } from './message-filter-sql';
import { SqlQuery } from './sql-query';
import { StateTableFlavour } from './state-table-flavour';

const { PENDING, DONE, FAILED } = MessageStatus;

/** The columns an inbox row is inserted with, in the order of `inboxRowParams`. */
export const INBOX_ROW_COLUMNS = 'consumer, message_id, message_type, biz_key, ordering_key, exchange, routing_key, payload, headers, max_attempts';

/** The values of `INBOX_ROW_COLUMNS` for one row. */
export function inboxRowParams(row: InboxRow): unknown[] {
  return [row.consumer, row.messageId, row.type, row.bizKey, row.orderingKey, row.exchange, row.routingKey, row.payload, row.headers, row.maxAttempts];
}

/** A redelivery's row whose used attempts (the last one started and never finished among them) reach its limit. */
const STARTED_OPERANDS: GiveUpOperands = { usedAttempts: 't.attempts', maxAttempts: 't.max_attempts' };

/**
 * The inbox statements of databases with `INSERT ... ON CONFLICT ... RETURNING` (PostgreSQL,
 * SQLite), which they write alike but for the spelling of parameters and of the clock. Each
 * statement adds its parameters in the order they appear, as `?` parameters need.
 */
export class InboxUpsertSql {
  /**
   * @param table the quoted (and qualified) inbox table name
   * @param flavour the database's spelling: its parameters and its clock
   */
  constructor(
    private readonly table: string,
    private readonly flavour: Pick<StateTableFlavour, 'now' | 'filter'>,
  ) {}

  /** Transactional mode: the delivery recorded DONE, unless its row exists; returns the new row's id. */
  insertDone(row: InboxRow): SqlQuery {
    const params = this.params();
    const sql = `INSERT INTO ${this.table} (${INBOX_ROW_COLUMNS}, status, processed_at) VALUES (${this.rowValues(row, params)}, '${DONE}', ${this.flavour.now})
       ON CONFLICT DO NOTHING RETURNING id`;
    return { sql, params: params.values };
  }

  /** Deferred mode: the delivery stored PENDING, unless its row exists; returns the new row's id. */
  insertPending(row: InboxRow): SqlQuery {
    const params = this.params();
    const sql = `INSERT INTO ${this.table} (${INBOX_ROW_COLUMNS}, status) VALUES (${this.rowValues(row, params)}, '${PENDING}')
       ON CONFLICT DO NOTHING RETURNING id`;
    return { sql, params: params.values };
  }

  /** `InboxDialect.markStarted` as one upsert returning the row's status and attempts. */
  markStarted(row: InboxRow, notes: StartedNotes): SqlQuery {
    const params = this.params();
    const usedUp = givesUpSql(STARTED_OPERANDS);
    const sql = `INSERT INTO ${this.table} AS t (${INBOX_ROW_COLUMNS}, status, attempts, last_error)
       VALUES (${this.rowValues(row, params)}, '${FAILED}', 1, ${params.add(notes.started)})
       ON CONFLICT (consumer, message_id) DO UPDATE
         SET attempts = CASE WHEN ${usedUp} THEN t.attempts ELSE t.attempts + 1 END,
             status = ${failedStatusSql(STARTED_OPERANDS)},
             last_error = CASE WHEN ${usedUp} THEN ${params.add(notes.gaveUp)} ELSE excluded.last_error END
         WHERE t.status = '${FAILED}'
       RETURNING status, attempts`;
    return { sql, params: params.values };
  }

  /** `InboxDialect.recordFailure` as one upsert returning the row's status and attempts. */
  recordFailure(row: InboxRow, error: string, fatal: boolean, attemptCounted: boolean): SqlQuery {
    const params = this.params();
    const added = attemptCounted ? 0 : 1;
    // Each operand is added where it is written (the operands of a condition in its order), so
    // `?` parameters line up.
    const sql = `INSERT INTO ${this.table} AS t (${INBOX_ROW_COLUMNS}, status, attempts, last_error)
       VALUES (${this.rowValues(row, params)},
               ${failedStatusSql({ fatal: params.add(fatal), usedAttempts: '1', maxAttempts: params.add(row.maxAttempts) })},
               1, ${params.add(error)})
       ON CONFLICT (consumer, message_id) DO UPDATE
         SET attempts = t.attempts + ${params.add(added)}, last_error = excluded.last_error,
             status = ${failedStatusSql({ fatal: params.add(fatal), usedAttempts: `t.attempts + ${params.add(added)}`, maxAttempts: 't.max_attempts' })}
         WHERE t.status = '${FAILED}'
       RETURNING status, attempts`;
    return { sql, params: params.values };
  }

  private params(): SqlParams {
    return new SqlParams(this.flavour.filter.placeholder);
  }

  /** The placeholders of a row's `INBOX_ROW_COLUMNS`, its values added to `params`. */
  private rowValues(row: InboxRow, params: SqlParams): string {
    return inboxRowParams(row)
      .map((value) => params.add(value))
      .join(', ');
  }
}
