import { DataSource, EntityManager } from 'typeorm';
import { DEFAULT_TRANSPORT_NAME } from '../../options/transport-lanes';
import type { PostgresDriver } from 'typeorm/driver/postgres/PostgresDriver';
import { MessageStatus } from '../../message/message-status';
import { NewOutboxRow } from '../../message/validate-message';
import { ClaimedMessage, InsertClaim, InsertedClaimedRow, OutboxDialect, WakeupSignal } from '../outbox-dialect';
import { OutboxMessageQuery, OutboxMessageState } from '../../engine/message-views';
import { compareIds } from '../compare-ids';
import { toClaimedMessage, toOutboxMessageState } from '../row-mapping';
import { ABANDONABLE_SQL, CLAIMABLE_SQL, orderingRule } from '../status-sql';
import { claimableByTransportSql, toCountsByTransport } from '../status-sql';
import { PostgresStateTable } from './postgres-state-table';
import { execute, SqlTarget } from '../sql-executor';
import { messageColumnValues, OUTBOX_INSERT_COLUMNS } from '../outbox-insert-values';

const { PENDING, PROCESSING, ABANDONED } = MessageStatus;

/**
 * PostgreSQL outbox: single-statement claims with `FOR UPDATE SKIP LOCKED`, inserts that are
 * no-ops for duplicates, and NOTIFY wake-ups. Settles come from the shared state table.
 */
export class PostgresOutboxDialect extends PostgresStateTable implements OutboxDialect {
  /** Stats per transport: each transport's lane is watched on its own. */
  protected override readonly summaryScope = 'transport';
  /** @param table the schema-qualified, quoted table name */
  constructor(table: string) {
    super(table, 'outbox', null);
  }

  async insert(manager: EntityManager, row: NewOutboxRow): Promise<boolean> {
    const result = await execute(
      manager,
      `INSERT INTO ${this.table}
         (${OUTBOX_INSERT_COLUMNS})
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, '${PENDING}', $11,
               GREATEST(now() + $12 * interval '1 millisecond', COALESCE($13::timestamptz, now())))
       ON CONFLICT DO NOTHING
       RETURNING id`,
      [...messageColumnValues(row), row.maxAttempts, row.delayMs, row.availableAt],
    );
    return result.records.length === 1;
  }

  async insertClaimed(manager: EntityManager, row: NewOutboxRow, claim: InsertClaim): Promise<InsertedClaimedRow | null> {
    // As a claim leaves it: PROCESSING under the claim's token, due now, unattempted. The lease
    // runs from the insert (clock_timestamp()), not from the transaction's start (now()), which
    // may be long before.
    const result = await execute(
      manager,
      `INSERT INTO ${this.table}
         (${OUTBOX_INSERT_COLUMNS}, claim_token, claimed_at, claimed_by)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, '${PROCESSING}', $11, now(), $12, clock_timestamp(), $13)
       ON CONFLICT DO NOTHING
       RETURNING id, floor(extract(epoch FROM created_at) * 1000)::float8 AS created_at_ms`,
      [...messageColumnValues(row), row.maxAttempts, claim.token, claim.claimedBy],
    );
    const inserted = result.records[0];
    return inserted ? { id: inserted.id, createdAt: new Date(Number(inserted.created_at_ms)) } : null;
  }

  async confirmClaimed(dataSource: DataSource, ids: string[], token: string): Promise<string[]> {
    const result = await execute(
      dataSource,
      `UPDATE ${this.table} SET claimed_at = now()
       WHERE id = ANY($1::bigint[]) AND claim_token = $2 AND status = '${PROCESSING}'
       RETURNING id`,
      [ids, token],
    );
    return result.records.map((r) => String(r.id));
  }

  async findDuplicateMessageId(manager: EntityManager, row: NewOutboxRow): Promise<string | null> {
    const result = await execute(
      manager,
      `SELECT message_id FROM ${this.table}
       WHERE message_id = $1 OR (biz_key = $2 AND message_type = $3) LIMIT 1`,
      [row.messageId, row.bizKey, row.type],
    );
    return result.records[0]?.message_id ?? null;
  }

  async claim(dataSource: DataSource, limit: number, claimToken: string, claimedBy: string, transport = DEFAULT_TRANSPORT_NAME): Promise<ClaimedMessage[]> {
    // One statement is one short transaction: rows are locked, marked and committed together.
    // The lane index (transport, id) over claimable rows gives this lane's rows in id order.
    const result = await execute(
      dataSource,
      `UPDATE ${this.table} SET status = '${PROCESSING}', claim_token = $1, claimed_at = now(), claimed_by = $2
       WHERE id IN (
         SELECT c.id FROM ${this.table} AS c
         WHERE c.transport = $4 AND c.${CLAIMABLE_SQL} AND c.next_attempt_at <= now() AND ${orderingRule(this.table, '')}
         ORDER BY c.id LIMIT $3
         FOR UPDATE OF c SKIP LOCKED)
       RETURNING id, message_id, message_type, exchange, routing_key, destination, payload::text AS payload,
                 headers::text AS headers, attempts, max_attempts, ordering_key, biz_key,
                 floor(extract(epoch FROM created_at) * 1000)::float8 AS created_at_ms`,
      [claimToken, claimedBy, limit, transport],
    );
    // Per row, only what differs between rows: the claim token and the transport are the claim's,
    // and the creation time comes as epoch milliseconds, which the driver reads as a number
    // instead of parsing a timestamp text into a Date (docs/performance.md).
    const claimed = await this.readClaim(dataSource, result.records, claimToken, (r) =>
      toClaimedMessage(r, { id: r.id, createdAt: new Date(Number(r.created_at_ms)), claimToken, transport }),
    );
    return claimed.sort((a, b) => compareIds(a.id, b.id));
  }

  async cancel(manager: EntityManager, bizKey: string, type: string | undefined, insertedClaimed: string[] = []): Promise<number> {
    const result = await execute(
      manager,
      `UPDATE ${this.table} SET status = '${ABANDONED}', processed_at = now(), claim_token = NULL
       WHERE biz_key = $1 AND ($2::text IS NULL OR message_type = $2)
         AND (${ABANDONABLE_SQL} OR (status = '${PROCESSING}' AND id = ANY($3::bigint[])))
       RETURNING id`,
      [bizKey, type ?? null, insertedClaimed],
    );
    return result.records.length;
  }

  async findMessage(target: SqlTarget, query: OutboxMessageQuery): Promise<OutboxMessageState | null> {
    const [filter, params] = 'messageId' in query ? ['message_id = $1', [query.messageId]] : ['biz_key = $1 AND message_type = $2', [query.bizKey, query.type]];
    const result = await execute(
      target,
      `SELECT message_id, message_type, biz_key, ordering_key, status, attempts, last_error, created_at, processed_at
       FROM ${this.table} WHERE ${filter} LIMIT 1`,
      params,
    );
    const r = result.records[0];
    return r ? toOutboxMessageState(r, { createdAt: r.created_at, processedAt: r.processed_at }) : null;
  }

  async claimableByTransport(target: SqlTarget): Promise<Record<string, number>> {
    return toCountsByTransport((await execute(target, claimableByTransportSql(this.table))).records);
  }

  async notifyPublished(manager: EntityManager, channel: string): Promise<void> {
    await execute(manager, `SELECT pg_notify($1, '')`, [channel]);
  }

  async listen(dataSource: DataSource, { channel }: WakeupSignal, onSignal: () => void, onError: (error: Error) => void): Promise<() => Promise<void>> {
    // A dedicated pooled connection: LISTEN belongs to a session, so it must not be shared.
    const driver = dataSource.driver as PostgresDriver;
    const [client, release] = (await driver.obtainMasterConnection()) as [PgClient, (error?: unknown) => void];
    const onNotification = (message: { channel: string }) => {
      if (message.channel === channel) onSignal();
    };
    let released = false;
    const releaseOnce = (error?: unknown) => {
      if (released) return;
      released = true;
      client.removeListener('notification', onNotification);
      client.removeListener('error', onClientError);
      release(error);
    };
    const onClientError = (error: Error) => {
      releaseOnce(error);
      onError(error);
    };
    client.on('notification', onNotification);
    client.on('error', onClientError);
    try {
      await client.query(`LISTEN ${driver.escape(channel)}`);
    } catch (error) {
      releaseOnce(error);
      throw error;
    }
    return async () => {
      if (released) return;
      try {
        await client.query(`UNLISTEN ${driver.escape(channel)}`);
        releaseOnce();
      } catch (error) {
        releaseOnce(error);
      }
    };
  }
}

interface PgClient {
  query(sql: string): Promise<unknown>;
  on(event: string, listener: (...args: any[]) => void): void;
  removeListener(event: string, listener: (...args: any[]) => void): void;
}
