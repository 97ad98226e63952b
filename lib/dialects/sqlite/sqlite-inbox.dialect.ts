import { DataSource, EntityManager } from 'typeorm';
import { MessageStatus } from '../../message/message-status';
import { ClaimedInboxMessage, InboxAcquisition, InboxDialect, InboxRow, RecordedAttempt, StartedNotes } from '../inbox-dialect';
import { InboxUpsertSql } from '../inbox-upsert-sql';
import { toClaimedInboxMessage } from '../row-mapping';
import { SqlQuery } from '../sql-query';
import { sqliteExecute } from './sqlite-executor';
import { CLAIMABLE_SQL, orderingRule } from '../status-sql';
import { SqliteStateTable } from './sqlite-state-table';
import { SQLITE_NOW } from './sqlite-time';
import { SqliteTransactionGate } from './sqlite-transaction-gate';

const { DONE, FAILED } = MessageStatus;
/** A unique index other than the conflict target refused the row. */
const UNIQUE_VIOLATION = 'SQLITE_CONSTRAINT_UNIQUE';

/**
 * SQLite inbox: dedupe through unique keys and `ON CONFLICT`, claims as conditional updates.
 * The inbox runs its transactions through `runTransactionsOneAtATime`: on the one connection
 * they would otherwise nest.
 */
export class SqliteInboxDialect extends SqliteStateTable implements InboxDialect {
  protected override readonly summaryScope = 'consumer';
  readonly runTransactionsOneAtATime: <T>(work: () => Promise<T>) => Promise<T>;
  private readonly statements: InboxUpsertSql;

  constructor(table: string, transactionGate: SqliteTransactionGate) {
    super(table, 'inbox', 'consumer');
    this.statements = new InboxUpsertSql(this.table, this.flavour);
    this.runTransactionsOneAtATime = (work) => transactionGate.run(work);
  }

  async acquire(manager: EntityManager, row: InboxRow, startMarked = false): Promise<InboxAcquisition> {
    const { sql, params } = this.statements.insertDone(row);
    const inserted = await sqliteExecute(manager, sql, params);
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
    return this.upsertAttempt(dataSource, this.statements.markStarted(row, notes));
  }

  async recordFailure(dataSource: DataSource, row: InboxRow, error: string, fatal: boolean, attemptCounted = false): Promise<RecordedAttempt | undefined> {
    return this.upsertAttempt(dataSource, this.statements.recordFailure(row, error, fatal, attemptCounted));
  }

  /** One upsert of the row of `(consumer, messageId)`; undefined when it wrote nothing (a duplicate). */
  private async upsertAttempt(dataSource: DataSource, { sql, params }: SqlQuery): Promise<RecordedAttempt | undefined> {
    try {
      const [recorded] = await sqliteExecute(dataSource, sql, params);
      return recorded as RecordedAttempt | undefined;
    } catch (err) {
      // Another row holds the same (consumer, bizKey, type): this delivery is a duplicate of it.
      const code = (err as { driverError?: { code?: string } }).driverError?.code ?? (err as { code?: string }).code;
      if (code === UNIQUE_VIOLATION) return undefined;
      throw err;
    }
  }

  async insertPending(dataSource: DataSource, row: InboxRow): Promise<boolean> {
    const { sql, params } = this.statements.insertPending(row);
    const inserted = await sqliteExecute(dataSource, sql, params);
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
