import { DataSource, EntityManager } from 'typeorm';
import { CONSUMER_NAME_MAX_LENGTH } from '../../message/message-limits';
import { OutboxError } from '../../errors';
import { MessageStatus } from '../../message/message-status';
import { failedStatus } from '../../engine/give-up-rule';
import { compareIds } from '../compare-ids';
import { INBOX_ROW_COLUMNS, inboxRowParams } from '../inbox-upsert-sql';
import { ClaimedInboxMessage, InboxAcquisition, InboxDialect, InboxRow, RecordedAttempt, StartedNotes } from '../inbox-dialect';
import { toClaimedInboxMessage } from '../row-mapping';
import { execute } from '../sql-executor';
import { ClaimTarget, MysqlClaimStrategy } from './mysql-claim';
import { mysqlTable, NOW } from './mysql-sql';
import { MysqlStateTable } from './mysql-state-table';

const { PENDING, DONE, FAILED, MANUAL_REQUIRED } = MessageStatus;

/** One `?` per column of `INBOX_ROW_COLUMNS`. */
const ROW_VALUES = INBOX_ROW_COLUMNS.split(',')
  .map(() => '?')
  .join(', ');

/** An inbox row locked for the rest of the transaction. */
interface LockedRow {
  id: string;
  status: MessageStatus;
  attempts: number;
  max_attempts: number;
}

/**
 * MySQL/MariaDB inbox: dedupe through the unique keys and `INSERT IGNORE`, claims through the
 * server's claim strategy.
 *
 * `INSERT IGNORE` turns every error the row could raise into a warning, not only the duplicate
 * key. Safe here: `identifyDelivery` keeps message id, type, business and ordering keys within
 * 255 characters, exchange and routing key are AMQP short strings (at most 255 bytes), payload and
 * headers are LONGTEXT; the consumer name, the one text no one else bounds, is checked below.
 *
 * When an insert finds the row already there, it holds a shared lock on that row's unique-key
 * entry. The row is then looked up without a lock and locked by primary key: locking it through
 * the unique key as well would upgrade the shared lock, which deadlocks two deliveries of one
 * message that both hold it.
 */
export class MysqlInboxDialect extends MysqlStateTable implements InboxDialect {
  protected override readonly summaryScope = 'consumer';
  private readonly claimTarget: ClaimTarget;

  /** @param quotedTable the quoted table name */
  constructor(
    quotedTable: string,
    private readonly claimStrategy: MysqlClaimStrategy,
  ) {
    // The inbox table is not versioned: its ordering index is `(consumer, ordering_key, status, id)`.
    super(mysqlTable(quotedTable, false), 'inbox', 'consumer');
    this.claimTarget = {
      table: this.indexed,
      scope: 'consumer',
      columns: `CAST(id AS CHAR) AS id, consumer, message_id, message_type, exchange, routing_key, payload, headers,
                attempts, max_attempts, ordering_key`,
    };
  }

  async acquire(manager: EntityManager, row: InboxRow, startMarked = false): Promise<InboxAcquisition> {
    assertConsumerFits(row);
    // Waits for a transaction inserting the same message (its key entry is locked) and then
    // inserts nothing when that one committed.
    const inserted = await execute(
      manager,
      `INSERT IGNORE INTO ${this.table} (${INBOX_ROW_COLUMNS}, status, processed_at, next_attempt_at, created_at)
       VALUES (${ROW_VALUES}, '${DONE}', ${NOW}, ${NOW}, ${NOW})`,
      inboxRowParams(row),
    );
    if (inserted.affected === 1) return { kind: 'process', id: String(inserted.raw.insertId) };
    // The row exists, committed. Locked so that a concurrent redelivery after failed attempts is
    // processed by one transaction only.
    const found = await this.lockExisting(manager, row, true);
    if (!found) return { kind: 'duplicate', status: DONE };
    if (found.status !== FAILED) return { kind: 'duplicate', status: found.status };
    await execute(
      manager,
      `UPDATE ${this.table} SET status = '${DONE}', processed_at = ${NOW}, last_error = NULL${startMarked ? ', attempts = GREATEST(attempts - 1, 0)' : ''}
       WHERE id = ?`,
      [BigInt(found.id)],
    );
    return { kind: 'process', id: found.id };
  }

  async markStarted(dataSource: DataSource, row: InboxRow, notes: StartedNotes): Promise<RecordedAttempt | undefined> {
    // The attempt that started last and never finished is among the row's used attempts.
    return this.upsertAttempt(dataSource, row, { status: FAILED, error: notes.started }, (found) =>
      failedStatus(found.attempts, found.max_attempts) === MANUAL_REQUIRED
        ? { status: MANUAL_REQUIRED, attempts: found.attempts, error: notes.gaveUp }
        : { status: FAILED, attempts: found.attempts + 1, error: notes.started },
    );
  }

  async recordFailure(dataSource: DataSource, row: InboxRow, error: string, fatal: boolean, attemptCounted = false): Promise<RecordedAttempt | undefined> {
    return this.upsertAttempt(dataSource, row, { status: failedStatus(1, row.maxAttempts, fatal), error }, (found) => {
      const attempts = found.attempts + (attemptCounted ? 0 : 1);
      return { status: failedStatus(attempts, found.max_attempts, fatal), attempts, error };
    });
  }

  /**
   * Inserts the row of `(consumer, messageId)` as `inserted` with one attempt, or, when it exists
   * and is FAILED, sets what `update` makes of it. Undefined when it wrote nothing: only this
   * delivery's own FAILED row takes an attempt; none (another row holds the same consumer,
   * bizKey and type) or one already handled means the delivery is a duplicate.
   *
   * In a short transaction of its own: MySQL's ON DUPLICATE KEY UPDATE has no WHERE, would update
   * whichever row a key collided with, and does not say whether it inserted.
   */
  private async upsertAttempt(
    dataSource: DataSource,
    row: InboxRow,
    inserted: { status: MessageStatus; error: string },
    update: (found: LockedRow) => RecordedAttempt & { error: string },
  ): Promise<RecordedAttempt | undefined> {
    assertConsumerFits(row);
    return dataSource.transaction(async (tx) => {
      const insert = await execute(
        tx,
        `INSERT IGNORE INTO ${this.table} (${INBOX_ROW_COLUMNS}, status, attempts, last_error, next_attempt_at, created_at)
         VALUES (${ROW_VALUES}, ?, 1, ?, ${NOW}, ${NOW})`,
        [...inboxRowParams(row), inserted.status, inserted.error],
      );
      if (insert.affected === 1) return { status: inserted.status, attempts: 1 };
      const found = await this.lockExisting(tx, row, false);
      if (!found || found.status !== FAILED) return undefined;
      const next = update(found);
      await execute(tx, `UPDATE ${this.table} SET attempts = ?, last_error = ?, status = ? WHERE id = ?`, [
        next.attempts,
        next.error,
        next.status,
        BigInt(found.id),
      ]);
      return { status: next.status, attempts: next.attempts };
    });
  }

  async insertPending(dataSource: DataSource, row: InboxRow): Promise<boolean> {
    assertConsumerFits(row);
    const result = await execute(
      dataSource,
      `INSERT IGNORE INTO ${this.table} (${INBOX_ROW_COLUMNS}, status, next_attempt_at, created_at) VALUES (${ROW_VALUES}, '${PENDING}', ${NOW}, ${NOW})`,
      inboxRowParams(row),
    );
    return result.affected === 1;
  }

  async claim(dataSource: DataSource, consumers: string[], limit: number, claimToken: string, claimedBy: string): Promise<ClaimedInboxMessage[]> {
    if (consumers.length === 0) return [];
    const target = { ...this.claimTarget, filter: { sql: 'c.consumer IN (?)', params: [consumers] } };
    const rows = await this.claimStrategy.claim(dataSource, target, limit, claimToken, claimedBy);
    const claimed = await this.readClaim(dataSource, rows, claimToken, (r) => {
      const message = toClaimedInboxMessage(r, { id: r.id });
      // Not selected: every row of the claim is held under its one token.
      message.claimToken = claimToken;
      return message;
    });
    return claimed.sort((a, b) => compareIds(a.id, b.id));
  }

  /**
   * The existing row of a delivery (by message id, or by type + bizKey when `byBizKey`, the
   * oldest first), locked by primary key. The plain read sees it: the insert before waited for its
   * writer, and is the first statement of the transaction, so the snapshot is taken after.
   */
  private async lockExisting(manager: EntityManager, row: InboxRow, byBizKey: boolean): Promise<LockedRow | undefined> {
    const byMessageId = `(SELECT id FROM ${this.table} WHERE consumer = ? AND message_id = ?)`;
    const found = await execute(
      manager,
      byBizKey && row.bizKey !== null
        ? `${byMessageId} UNION ALL (SELECT id FROM ${this.table} WHERE consumer = ? AND biz_key = ? AND message_type = ?) ORDER BY id LIMIT 1`
        : byMessageId,
      byBizKey && row.bizKey !== null ? [row.consumer, row.messageId, row.consumer, row.bizKey, row.type] : [row.consumer, row.messageId],
    );
    if (found.records.length === 0) return undefined;
    const locked = await execute(manager, `SELECT CAST(id AS CHAR) AS id, status, attempts, max_attempts FROM ${this.table} WHERE id = ? FOR UPDATE`, [
      BigInt(found.records[0].id),
    ]);
    return locked.records[0] as LockedRow | undefined;
  }
}

/**
 * `INSERT IGNORE` would cut a longer consumer name and dedupe it against another consumer's rows.
 * `@InboxHandler()` names are checked at start-up; this guards the dialect for any other caller.
 */
function assertConsumerFits(row: InboxRow): void {
  if (row.consumer.length > CONSUMER_NAME_MAX_LENGTH) {
    throw new OutboxError(`inbox consumer name is longer than ${CONSUMER_NAME_MAX_LENGTH} characters: ${row.consumer.slice(0, 40)}...`);
  }
}
