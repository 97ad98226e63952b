import { DataSource, EntityManager } from 'typeorm';
import { MessageStatus } from '../../message/message-status';
import { failedStatusSql, GiveUpOperands, givesUpSql } from '../../engine/give-up-rule';
import { ClaimedInboxMessage, InboxAcquisition, InboxDialect, InboxRow, RecordedAttempt, StartedNotes } from '../inbox-dialect';
import { toClaimedInboxMessage } from '../row-mapping';
import { sqliteExecute } from './sqlite-executor';
import { CLAIMABLE_SQL, orderingRule } from '../status-sql';
import { SqliteStateTable } from './sqlite-state-table';
import { SQLITE_NOW } from './sqlite-time';
import { SqliteTransactionGate } from './sqlite-transaction-gate';

const { PENDING, DONE, FAILED } = MessageStatus;
/** A redelivery's row whose used attempts (the last one started and never finished) reach its limit. */
const STARTED_OPERANDS: GiveUpOperands = { usedAttempts: 't.attempts', maxAttempts: 't.max_attempts' };
const USED_UP = givesUpSql(STARTED_OPERANDS);
/** A unique index other than the conflict target refused the row. */
const UNIQUE_VIOLATION = 'SQLITE_CONSTRAINT_UNIQUE';

const COLUMNS = 'consumer, message_id, message_type, biz_key, ordering_key, exchange, routing_key, payload, headers, max_attempts';
const VALUES = '?, ?, ?, ?, ?, ?, ?, ?, ?, ?';
const params = (r: InboxRow) => [r.consumer, r.messageId, r.type, r.bizKey, r.orderingKey, r.exchange, r.routingKey, r.payload, r.headers, r.maxAttempts];

/**
 * SQLite inbox: dedupe through unique keys and `ON CONFLICT`, claims as conditional updates.
 * The inbox runs its transactions through `runTransactionsOneAtATime`: on the one connection
 * they would otherwise nest.
 */
export class SqliteInboxDialect extends SqliteStateTable implements InboxDialect {
  protected override readonly summaryScope = 'consumer';
  readonly runTransactionsOneAtATime: <T>(work: () => Promise<T>) => Promise<T>;

  constructor(table: string, transactionGate: SqliteTransactionGate) {
    super(table, 'inbox', 'consumer');
    this.runTransactionsOneAtATime = (work) => transactionGate.run(work);
  }

  async acquire(manager: EntityManager, row: InboxRow, startMarked = false): Promise<InboxAcquisition> {
    const inserted = await sqliteExecute(
      manager,
      `INSERT INTO ${this.table} (${COLUMNS}, status, processed_at) VALUES (${VALUES}, '${DONE}', ${SQLITE_NOW})
       ON CONFLICT DO NOTHING RETURNING id`,
      params(row),
    );
    if (inserted.length === 1) return { kind: 'process', id: String(inserted[0].id) };
    // The row exists. The INSERT took the file's write lock for this transaction, so no other
    // transaction, in any process, changes the row before this one ends: no row lock needed.
    const [found] = await sqliteExecute(
      manager,
      `SELECT id, status FROM ${this.table}
       WHERE consumer = ? AND (message_id = ? OR (biz_key = ? AND message_type = ?))
       ORDER BY id LIMIT 1`,
      [row.consumer, row.messageId, row.bizKey, row.type],
    );
    if (!found) return { kind: 'duplicate', status: DONE };
    if (found.status !== FAILED) return { kind: 'duplicate', status: found.status as MessageStatus };
    await sqliteExecute(
      manager,
      `UPDATE ${this.table} SET status = '${DONE}', processed_at = ${SQLITE_NOW}, last_error = NULL${startMarked ? ', attempts = MAX(attempts - 1, 0)' : ''}
       WHERE id = ?`,
      [found.id],
    );
    return { kind: 'process', id: String(found.id) };
  }

  async markStarted(dataSource: DataSource, row: InboxRow, notes: StartedNotes): Promise<RecordedAttempt | undefined> {
    return this.upsertAttempt(
      dataSource,
      `INSERT INTO ${this.table} AS t (${COLUMNS}, status, attempts, last_error)
       VALUES (${VALUES}, '${FAILED}', 1, ?)
       ON CONFLICT (consumer, message_id) DO UPDATE
         SET attempts = CASE WHEN ${USED_UP} THEN t.attempts ELSE t.attempts + 1 END,
             status = ${failedStatusSql(STARTED_OPERANDS)},
             last_error = CASE WHEN ${USED_UP} THEN ? ELSE excluded.last_error END
         WHERE t.status = '${FAILED}'
       RETURNING status, attempts`,
      [...params(row), notes.started, notes.gaveUp],
    );
  }

  async recordFailure(dataSource: DataSource, row: InboxRow, error: string, fatal: boolean, attemptCounted = false): Promise<RecordedAttempt | undefined> {
    const added = attemptCounted ? 0 : 1;
    return this.upsertAttempt(
      dataSource,
      `INSERT INTO ${this.table} AS t (${COLUMNS}, status, attempts, last_error)
       VALUES (${VALUES}, ${failedStatusSql({ fatal: '?', usedAttempts: '1', maxAttempts: '?' })}, 1, ?)
       ON CONFLICT (consumer, message_id) DO UPDATE
         SET attempts = t.attempts + ?, last_error = excluded.last_error,
             status = ${failedStatusSql({ fatal: '?', usedAttempts: 't.attempts + ?', maxAttempts: 't.max_attempts' })}
         WHERE t.status = '${FAILED}'
       RETURNING status, attempts`,
      [...params(row), fatal, row.maxAttempts, error, added, fatal, added],
    );
  }

  /** One upsert of the row of `(consumer, messageId)`; undefined when it wrote nothing (a duplicate). */
  private async upsertAttempt(dataSource: DataSource, sql: string, parameters: unknown[]): Promise<RecordedAttempt | undefined> {
    try {
      const [recorded] = await sqliteExecute(dataSource, sql, parameters);
      return recorded as RecordedAttempt | undefined;
    } catch (err) {
      // Another row holds the same (consumer, bizKey, type): this delivery is a duplicate of it.
      const code = (err as { driverError?: { code?: string } }).driverError?.code ?? (err as { code?: string }).code;
      if (code === UNIQUE_VIOLATION) return undefined;
      throw err;
    }
  }

  async insertPending(dataSource: DataSource, row: InboxRow): Promise<boolean> {
    const inserted = await sqliteExecute(
      dataSource,
      `INSERT INTO ${this.table} (${COLUMNS}, status) VALUES (${VALUES}, '${PENDING}')
       ON CONFLICT DO NOTHING RETURNING id`,
      params(row),
    );
    return inserted.length === 1;
  }

  async claim(dataSource: DataSource, consumers: string[], limit: number, claimToken: string, claimedBy: string): Promise<ClaimedInboxMessage[]> {
    const rows = await this.claimRows(
      dataSource,
      {
        sql: `SELECT c.id FROM ${this.table} AS c
              WHERE c.${CLAIMABLE_SQL} AND c.next_attempt_at <= ${SQLITE_NOW}
                AND c.consumer IN (SELECT value FROM json_each(?))
                AND ${orderingRule(this.table, 'consumer')}
              ORDER BY c.id LIMIT ?`,
        params: [JSON.stringify(consumers), limit],
      },
      'id, claim_token, consumer, message_id, message_type, exchange, routing_key, payload, headers, attempts, max_attempts, ordering_key',
      claimToken,
      claimedBy,
    );
    return this.readClaim(dataSource, rows, claimToken, (r) => toClaimedInboxMessage(r, { id: String(r.id) }));
  }
}
