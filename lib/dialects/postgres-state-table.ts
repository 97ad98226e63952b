import { DataSource } from 'typeorm';
import { ClaimRef, ExpiredClaim, FailedSettlement, HealthCounts, StateTable } from '../engine/state-table';
import { MessageStatus } from '../message/message-status';
import { execute, SqlTarget } from './sql-executor';

const { PENDING, PROCESSING, DONE, FAILED, ABANDONED } = MessageStatus;

/** `status IN (claimable)`, matching the partial claim index. */
export const PG_CLAIMABLE = `status IN ('${PENDING}', '${FAILED}')`;

/**
 * PostgreSQL transitions shared by the outbox and inbox tables: batch settles through `unnest`
 * (one statement per outcome per batch), each row fenced by its claim token.
 */
export class PostgresStateTable implements StateTable {
  /** @param table the schema-qualified, quoted table name */
  constructor(protected readonly table: string, readonly label: string) {}

  async settleDone(target: SqlTarget, claims: ClaimRef[]): Promise<number> {
    if (claims.length === 0) return 0;
    const result = await execute(
      target,
      `UPDATE ${this.table} AS t SET status = '${DONE}', processed_at = now(), claim_token = NULL, last_error = NULL
       FROM unnest($1::bigint[], $2::uuid[]) AS s(id, token)
       WHERE t.id = s.id AND t.claim_token = s.token AND t.status = '${PROCESSING}'
       RETURNING t.id`,
      [claims.map((c) => c.id), claims.map((c) => c.claimToken)],
    );
    return result.records.length;
  }

  async settleFailed(target: SqlTarget, settlements: FailedSettlement[]): Promise<number> {
    if (settlements.length === 0) return 0;
    const result = await execute(
      target,
      `UPDATE ${this.table} AS t
       SET status = s.status, attempts = t.attempts + 1, last_error = s.error,
           next_attempt_at = now() + s.delay_ms * interval '1 millisecond',
           claim_token = NULL, claimed_at = NULL, claimed_by = NULL
       FROM unnest($1::bigint[], $2::uuid[], $3::text[], $4::bigint[], $5::text[]) AS s(id, token, status, delay_ms, error)
       WHERE t.id = s.id AND t.claim_token = s.token AND t.status = '${PROCESSING}'
       RETURNING t.id`,
      [
        settlements.map((s) => s.id),
        settlements.map((s) => s.claimToken),
        settlements.map((s) => s.status),
        settlements.map((s) => s.delayMs),
        settlements.map((s) => s.error),
      ],
    );
    return result.records.length;
  }

  async release(dataSource: DataSource, claims: ClaimRef[]): Promise<number> {
    if (claims.length === 0) return 0;
    const result = await execute(
      dataSource,
      `UPDATE ${this.table} AS t
       SET status = CASE WHEN t.attempts = 0 THEN '${PENDING}' ELSE '${FAILED}' END,
           next_attempt_at = now(), claim_token = NULL, claimed_at = NULL, claimed_by = NULL
       FROM unnest($1::bigint[], $2::uuid[]) AS s(id, token)
       WHERE t.id = s.id AND t.claim_token = s.token AND t.status = '${PROCESSING}'
       RETURNING t.id`,
      [claims.map((c) => c.id), claims.map((c) => c.claimToken)],
    );
    return result.records.length;
  }

  async findExpiredClaims(dataSource: DataSource, olderThanMs: number, limit: number): Promise<ExpiredClaim[]> {
    const result = await execute(
      dataSource,
      `SELECT id, claim_token, attempts, max_attempts, claimed_by FROM ${this.table}
       WHERE status = '${PROCESSING}' AND claimed_at < now() - $1 * interval '1 millisecond'
       ORDER BY claimed_at LIMIT $2`,
      [olderThanMs, limit],
    );
    return result.records.map((r) => ({
      id: r.id,
      claimToken: r.claim_token,
      attempts: r.attempts,
      maxAttempts: r.max_attempts,
      claimedBy: r.claimed_by,
    }));
  }

  async healthCounts(dataSource: DataSource, staleAfterMs: number): Promise<HealthCounts> {
    const result = await execute(
      dataSource,
      `SELECT
         (SELECT count(*) FROM ${this.table} WHERE ${PG_CLAIMABLE}) AS backlog,
         (SELECT count(*) FROM ${this.table}
          WHERE status = '${PROCESSING}' AND claimed_at < now() - $1 * interval '1 millisecond') AS stale`,
      [staleAfterMs],
    );
    const row = result.records[0];
    return { backlog: Number(row.backlog), staleProcessing: Number(row.stale) };
  }

  async deleteFinished(dataSource: DataSource, olderThanMs: number, limit: number): Promise<number> {
    // Oldest ids first, through the primary key: finished history sits at the low end.
    const result = await execute(
      dataSource,
      `DELETE FROM ${this.table} WHERE id IN (
         SELECT id FROM ${this.table}
         WHERE status IN ('${DONE}', '${ABANDONED}') AND processed_at < now() - $1 * interval '1 millisecond'
         ORDER BY id LIMIT $2
         FOR UPDATE SKIP LOCKED)
       RETURNING id`,
      [olderThanMs, limit],
    );
    return result.records.length;
  }
}

/** Orders bigint ids given as strings without losing precision. */
export function compareIds(a: string, b: string): number {
  return a.length - b.length || (a < b ? -1 : a > b ? 1 : 0);
}
