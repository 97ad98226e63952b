import { DataSource, EntityManager } from 'typeorm';
import { MessageStatus } from '../../message/message-status';
import { ClaimedInboxMessage, InboxAcquisition, InboxDialect, InboxRow, RecordedAttempt, StartedNotes } from '../inbox-dialect';
import { compareIds } from '../compare-ids';
import { InboxUpsertSql } from '../inbox-upsert-sql';
import { SqlQuery } from '../sql-query';
import { toClaimedInboxMessage } from '../row-mapping';
import { CLAIMABLE_SQL, orderingRule } from '../status-sql';
import { PostgresStateTable } from './postgres-state-table';
import { execute } from '../sql-executor';

const { PROCESSING, DONE, FAILED } = MessageStatus;
const UNIQUE_VIOLATION = '23505';

/** PostgreSQL inbox: dedupe through unique keys and `ON CONFLICT`, claims with SKIP LOCKED. */
export class PostgresInboxDialect extends PostgresStateTable implements InboxDialect {
  protected override readonly summaryScope = 'consumer';
  private readonly statements: InboxUpsertSql;

  constructor(table: string) {
    super(table, 'inbox', 'consumer');
    this.statements = new InboxUpsertSql(this.table, this.flavour);
  }

  async acquire(manager: EntityManager, row: InboxRow, startMarked = false): Promise<InboxAcquisition> {
    const { sql, params } = this.statements.insertDone(row);
    const inserted = await execute(manager, sql, params);
    if (inserted.records.length === 1) return { kind: 'process', id: inserted.records[0].id };
    // The row exists (committed: ON CONFLICT waited for any writer). Lock it so that a
    // concurrent redelivery after failed attempts is processed by one transaction only.
    const existing = await execute(
      manager,
      `SELECT id, status FROM ${this.table}
       WHERE consumer = $1 AND (message_id = $2 OR (biz_key = $3 AND message_type = $4))
       ORDER BY id LIMIT 1 FOR UPDATE`,
      [row.consumer, row.messageId, row.bizKey, row.type],
    );
    const found = existing.records[0] as { id: string; status: MessageStatus } | undefined;
    if (!found) return { kind: 'duplicate', status: DONE };
    if (found.status !== FAILED) return { kind: 'duplicate', status: found.status };
    await execute(
      manager,
      `UPDATE ${this.table} SET status = '${DONE}', processed_at = now(), last_error = NULL${startMarked ? ', attempts = GREATEST(attempts - 1, 0)' : ''}
       WHERE id = $1`,
      [found.id],
    );
    return { kind: 'process', id: found.id };
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
      const result = await execute(dataSource, sql, params);
      return result.records[0] as RecordedAttempt | undefined;
    } catch (err) {
      // Another row holds the same (consumer, bizKey, type): this delivery is a duplicate of it.
      const code = (err as { code?: string; driverError?: { code?: string } }).driverError?.code ?? (err as { code?: string }).code;
      if (code === UNIQUE_VIOLATION) return undefined;
      throw err;
    }
  }

  async insertPending(dataSource: DataSource, row: InboxRow): Promise<boolean> {
    const { sql, params } = this.statements.insertPending(row);
    const result = await execute(dataSource, sql, params);
    return result.records.length === 1;
  }

  async claim(dataSource: DataSource, consumers: string[], limit: number, claimToken: string, claimedBy: string): Promise<ClaimedInboxMessage[]> {
    const result = await execute(
      dataSource,
      `UPDATE ${this.table} SET status = '${PROCESSING}', claim_token = $1, claimed_at = now(), claimed_by = $2
       WHERE id IN (
         SELECT c.id FROM ${this.table} AS c
         WHERE c.${CLAIMABLE_SQL} AND c.next_attempt_at <= now() AND c.consumer = ANY($4)
           AND ${orderingRule(this.table, 'consumer')}
         ORDER BY c.id LIMIT $3
         FOR UPDATE OF c SKIP LOCKED)
       RETURNING id, claim_token, consumer, message_id, message_type, exchange, routing_key, payload,
                 headers::text AS headers, attempts, max_attempts, ordering_key`,
      [claimToken, claimedBy, limit, consumers],
    );
    const claimed = await this.readClaim(dataSource, result.records, claimToken, (r) => toClaimedInboxMessage(r, { id: r.id }));
    return claimed.sort((a, b) => compareIds(a.id, b.id));
  }
}
