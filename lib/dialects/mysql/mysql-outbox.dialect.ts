import { DataSource, EntityManager } from 'typeorm';
import { DEFAULT_TRANSPORT_NAME } from '../../options/transport-lanes';
import { ABANDONABLE_SQL } from '../status-sql';
import { claimableByTransportSql, toCountsByTransport } from '../status-sql';
import { MessageStatus } from '../../message/message-status';
import { NewOutboxRow } from '../../message/validate-message';
import { compareIds } from '../compare-ids';
import { outboxIndexNames } from '../../naming/index-names';
import { ClaimedMessage, OutboxDialect, WakeupSignal } from '../outbox-dialect';
import { OutboxMessageQuery, OutboxMessageState } from '../../engine/message-views';
import { MysqlPendingWatch } from './mysql-pending-watch';
import { toClaimedMessage, toOutboxMessageState } from '../row-mapping';
import { execute, SqlTarget } from '../sql-executor';
import { ClaimTarget, MysqlClaimStrategy } from './mysql-claim';
import { forceIndex, isoTime, microseconds, MysqlTable, mysqlTable, NOW, toDate, utcDatetime } from './mysql-sql';
import { MysqlStateTable } from './mysql-state-table';
import { messageColumnValues, OUTBOX_INSERT_COLUMNS } from '../outbox-insert-values';

const { PENDING, ABANDONED } = MessageStatus;

/**
 * MySQL/MariaDB outbox: claims through the server's claim strategy, inserts that are no-ops for
 * duplicates. No NOTIFY: other instances' rows are found by a cheap periodic look
 * (`MysqlPendingWatch`), with polling as the backstop. Settles come from the shared state table.
 */
export class MysqlOutboxDialect extends MysqlStateTable implements OutboxDialect {
  /** Stats per transport: each transport's lane is watched on its own. */
  protected override readonly summaryScope = 'transport';

  /**
   * @param quotedTable the quoted table name
   * @param version4 the table is of schema version 4 (its indexes, `mysqlTable`)
   */
  constructor(
    quotedTable: string,
    private readonly claimStrategy: MysqlClaimStrategy,
    version4: boolean,
  ) {
    super(mysqlTable(quotedTable, version4), 'outbox', null);
  }

  async insert(manager: EntityManager, row: NewOutboxRow): Promise<boolean> {
    // IGNORE turns every error the row could raise into a warning (a value too long is cut, a bad
    // one coerced), not only the duplicate key. Safe here: `toNewOutboxRow` checked the row, so
    // its texts fit their 255-character columns, the message id is a UUID, payload and headers
    // are JSON text (LONGTEXT, no constraint) and the attempt budget is a positive integer.
    // `ON DUPLICATE KEY UPDATE id = id` would not tell an insert from a duplicate: with mysql2's
    // default FOUND_ROWS flag both report one row.
    const result = await execute(
      manager,
      `INSERT IGNORE INTO ${this.table}
         (${OUTBOX_INSERT_COLUMNS}, created_at)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, '${PENDING}', ?,
               GREATEST(${NOW} + INTERVAL ? MICROSECOND, COALESCE(CAST(? AS DATETIME(6)), ${NOW})), ${NOW})`,
      [...messageColumnValues(row), row.maxAttempts, microseconds(row.delayMs), row.availableAt === null ? null : utcDatetime(row.availableAt)],
    );
    return result.affected === 1;
  }

  async findDuplicateMessageId(manager: EntityManager, row: NewOutboxRow): Promise<string | null> {
    // Locking reads: under REPEATABLE READ a plain read would use the transaction's snapshot, which
    // may predate the row the insert collided with. One unique lookup at a time, message id first,
    // so a lookup that finds nothing locks only a gap between two random UUIDs.
    const byMessageId = await execute(manager, `SELECT message_id FROM ${this.table} WHERE message_id = ? LOCK IN SHARE MODE`, [row.messageId]);
    if (byMessageId.records.length > 0 || row.bizKey === null) return byMessageId.records[0]?.message_id ?? null;
    const byBizKey = await execute(manager, `SELECT message_id FROM ${this.table} WHERE biz_key = ? AND message_type = ? LOCK IN SHARE MODE`, [
      row.bizKey,
      row.type,
    ]);
    return byBizKey.records[0]?.message_id ?? null;
  }

  async claim(dataSource: DataSource, limit: number, claimToken: string, claimedBy: string, transport = DEFAULT_TRANSPORT_NAME): Promise<ClaimedMessage[]> {
    const target = outboxLaneClaimTarget(this.indexed, transport);
    const rows = await this.claimStrategy.claim(dataSource, target, limit, claimToken, claimedBy);
    const claimed = await this.readClaim(dataSource, rows, claimToken, (r) =>
      toClaimedMessage(r, { id: r.id, createdAt: toDate(r.created_at)!, claimToken, transport }),
    );
    return claimed.sort((a, b) => compareIds(a.id, b.id));
  }

  async cancel(manager: EntityManager, bizKey: string, type: string | undefined): Promise<number> {
    const result = await execute(
      manager,
      `UPDATE ${this.table} ${forceIndex(outboxIndexNames(this.indexed.name).typeBizKey)} SET status = '${ABANDONED}', processed_at = ${NOW}
       WHERE biz_key = ? AND (? IS NULL OR message_type = ?) AND ${ABANDONABLE_SQL}`,
      [bizKey, type ?? null, type ?? null],
    );
    return result.affected ?? 0;
  }

  async findMessage(target: SqlTarget, query: OutboxMessageQuery): Promise<OutboxMessageState | null> {
    const [filter, params] = 'messageId' in query ? ['message_id = ?', [query.messageId]] : ['biz_key = ? AND message_type = ?', [query.bizKey, query.type]];
    const result = await execute(
      target,
      `SELECT message_id, message_type, biz_key, ordering_key, status, attempts, last_error,
              ${isoTime('created_at', 'created_at')}, ${isoTime('processed_at', 'processed_at')}
       FROM ${this.table} WHERE ${filter} LIMIT 1`,
      params,
    );
    const r = result.records[0];
    return r ? toOutboxMessageState(r, { createdAt: toDate(r.created_at)!, processedAt: toDate(r.processed_at) }) : null;
  }

  async claimableByTransport(target: SqlTarget): Promise<Record<string, number>> {
    return toCountsByTransport((await execute(target, claimableByTransportSql(this.table))).records);
  }

  /** No NOTIFY here: a look at the newest PENDING ids every `probeIntervalMs` (`MysqlPendingWatch`). */
  async listen(dataSource: DataSource, signal: WakeupSignal, onSignal: () => void, onError: (error: Error) => void): Promise<() => Promise<void>> {
    const watch = await MysqlPendingWatch.start(dataSource, this.indexed, signal.probeIntervalMs, onSignal, onError);
    return () => watch.stop();
  }
}

/**
 * The rows one transport's claim may take: its own, through the lane index, `(status, transport,
 * id, next_attempt_at)` at version 4 and `(transport, status, id, next_attempt_at)` before; both
 * walk one status of one transport in id order.
 */
export function outboxLaneClaimTarget(table: MysqlTable, transport: string): ClaimTarget {
  return {
    table: { ...table, useClaimIndex: forceIndex(outboxIndexNames(table.name).lane) },
    scope: null,
    filter: { sql: 'c.transport = ?', params: [transport] },
    columns: `CAST(id AS CHAR) AS id, message_id, message_type, exchange, routing_key, destination, payload, headers,
              attempts, max_attempts, ordering_key, biz_key, ${isoTime('created_at', 'created_at')}`,
  };
}
