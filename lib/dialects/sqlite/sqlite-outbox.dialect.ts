import { DataSource, EntityManager } from 'typeorm';
import { DEFAULT_TRANSPORT_NAME } from '../../options/transport-lanes';
import { MessageStatus } from '../../message/message-status';
import { NewOutboxRow } from '../../message/validate-message';
import { ClaimedMessage, OutboxDialect } from '../outbox-dialect';
import { OutboxMessageQuery, OutboxMessageState } from '../../engine/message-views';
import { toClaimedMessage, toOutboxMessageState } from '../row-mapping';
import { SqlTarget } from '../sql-executor';
import { sqliteExecute } from './sqlite-executor';
import { ABANDONABLE_SQL, CLAIMABLE_SQL, orderingRule } from '../status-sql';
import { claimableByTransportSql, toCountsByTransport } from '../status-sql';
import { SqliteStateTable } from './sqlite-state-table';
import { fromSqliteTime, SQLITE_NOW, sqliteNowPlusMs, toSqliteTime } from './sqlite-time';
import { messageColumnValues, OUTBOX_INSERT_COLUMNS } from '../outbox-insert-values';

const { PENDING, ABANDONED } = MessageStatus;

/**
 * SQLite outbox: conditional-update claims in one write transaction outside the application's
 * transactions, and inserts that are no-ops for duplicates. No cross-instance wake-up: polling
 * (and the in-process wake-up after commit) finds new rows. Settles come from the shared state table.
 */
export class SqliteOutboxDialect extends SqliteStateTable implements OutboxDialect {
  /** Stats per transport: each transport's lane is watched on its own. */
  protected override readonly summaryScope = 'transport';
  /** @param table the quoted table name */
  constructor(table: string) {
    super(table, 'outbox', null);
  }

  async insert(manager: EntityManager, row: NewOutboxRow): Promise<boolean> {
    const rows = await sqliteExecute(
      manager,
      `INSERT INTO ${this.table}
         (${OUTBOX_INSERT_COLUMNS})
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, '${PENDING}', ?, max(${sqliteNowPlusMs('?')}, COALESCE(?, ${SQLITE_NOW})))
       ON CONFLICT DO NOTHING
       RETURNING id`,
      [...messageColumnValues(row), row.maxAttempts, row.delayMs, row.availableAt === null ? null : toSqliteTime(row.availableAt)],
    );
    return rows.length === 1;
  }

  async findDuplicateMessageId(manager: EntityManager, row: NewOutboxRow): Promise<string | null> {
    const rows = await sqliteExecute(
      manager,
      `SELECT message_id FROM ${this.table}
       WHERE message_id = ? OR (biz_key = ? AND message_type = ?) LIMIT 1`,
      [row.messageId, row.bizKey, row.type],
    );
    return rows[0]?.message_id ?? null;
  }

  async claim(dataSource: DataSource, limit: number, claimToken: string, claimedBy: string, transport = DEFAULT_TRANSPORT_NAME): Promise<ClaimedMessage[]> {
    const rows = await this.claimRows(
      dataSource,
      {
        sql: `SELECT c.id FROM ${this.table} AS c
              WHERE c.transport = ? AND c.${CLAIMABLE_SQL} AND c.next_attempt_at <= ${SQLITE_NOW} AND ${orderingRule(this.table, '')}
              ORDER BY c.id LIMIT ?`,
        params: [transport, limit],
      },
      'id, claim_token, message_id, message_type, transport, exchange, routing_key, destination, payload, headers, attempts, max_attempts, ordering_key, biz_key, created_at',
      claimToken,
      claimedBy,
    );
    return this.readClaim(dataSource, rows, claimToken, (r) => toClaimedMessage(r, { id: String(r.id), createdAt: fromSqliteTime(r.created_at) }));
  }

  async cancel(manager: EntityManager, bizKey: string, type: string | undefined): Promise<number> {
    const rows = await sqliteExecute(
      manager,
      `UPDATE ${this.table} SET status = '${ABANDONED}', processed_at = ${SQLITE_NOW}
       WHERE biz_key = ? AND (? IS NULL OR message_type = ?) AND ${ABANDONABLE_SQL}
       RETURNING id`,
      [bizKey, type ?? null, type ?? null],
    );
    return rows.length;
  }

  async findMessage(target: SqlTarget, query: OutboxMessageQuery): Promise<OutboxMessageState | null> {
    const [filter, params] = 'messageId' in query ? ['message_id = ?', [query.messageId]] : ['biz_key = ? AND message_type = ?', [query.bizKey, query.type]];
    const rows = await sqliteExecute(
      target,
      `SELECT message_id, message_type, biz_key, ordering_key, status, attempts, last_error, created_at, processed_at
       FROM ${this.table} WHERE ${filter} LIMIT 1`,
      params,
    );
    const r = rows[0];
    return r
      ? toOutboxMessageState(r, { createdAt: fromSqliteTime(r.created_at as string), processedAt: fromSqliteTime(r.processed_at as string | null) })
      : null;
  }

  async claimableByTransport(target: SqlTarget): Promise<Record<string, number>> {
    return toCountsByTransport(await sqliteExecute(target, claimableByTransportSql(this.table)));
  }
}
