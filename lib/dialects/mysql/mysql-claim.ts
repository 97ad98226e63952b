import { DataSource } from 'typeorm';
import { CLAIMABLE_STATUSES, MessageStatus } from '../../message/message-status';
import { mysqlOrderingRule, MysqlTable, NOW } from './mysql-sql';

/** The rows one claim may take, in one table. */
export interface ClaimTarget {
  table: MysqlTable;
  /** The column that scopes ordering keys (`consumer` in the inbox). */
  scope: 'consumer' | null;
  /** An extra condition on candidate rows aliased `c` (the inbox's consumers), and its parameters. */
  filter?: { sql: string; params: unknown[] };
  /** The select list read back from the claimed rows. */
  columns: string;
}

/**
 * How a batch of due rows becomes PROCESSING under one claim token. Claimed rows are read back
 * afterwards: MySQL has no `UPDATE ... RETURNING`.
 */
export interface MysqlClaimStrategy {
  /** For the dialect's description. */
  readonly name: string;
  /** Claims up to `limit` rows; resolves to their `target.columns`, in no particular order. */
  claim(dataSource: DataSource, target: ClaimTarget, limit: number, claimToken: string, claimedBy: string): Promise<Record<string, any>[]>;
}

/**
 * The ids of up to `limit` claimable rows, oldest first, with `locking` (a locking clause, or '')
 * applied to each claimable status's branch. Each branch is an equality on status, so it walks
 * the claim index `(status, id, next_attempt_at)` in id order and stops after `limit` rows; a
 * single `status IN (...) ORDER BY id` would sort the whole backlog, and lock all of it.
 */
export function claimCandidates(target: ClaimTarget, limit: number, locking: string): { sql: string; params: unknown[] } {
  const filter = target.filter ? ` AND ${target.filter.sql}` : '';
  const branch = (status: string) => `(SELECT c.id FROM ${target.table.quoted} AS c ${target.table.useClaimIndex}
     WHERE c.status = '${status}' AND c.next_attempt_at <= ${NOW}${filter}
       AND ${mysqlOrderingRule(target.table, target.scope)}
     ORDER BY c.id LIMIT ?${locking ? ` ${locking}` : ''})`;
  return {
    sql: `${CLAIMABLE_STATUSES.map(branch).join('\nUNION ALL\n')}\nORDER BY id LIMIT ?`,
    params: [...CLAIMABLE_STATUSES.flatMap(() => [...(target.filter?.params ?? []), limit]), limit],
  };
}

/** The claim's UPDATE of the rows `where` names by id; its parameters: token, claimant, then `where`'s. */
export function markClaimed(target: ClaimTarget, where: string): string {
  return `UPDATE ${target.table.quoted} ${target.table.usePrimaryKey}
    SET status = '${MessageStatus.PROCESSING}', claim_token = ?, claimed_at = ${NOW}, claimed_by = ?
    WHERE ${where}`;
}

/** Reads back the rows a claim token holds among `ids`. */
export function readClaimed(target: ClaimTarget): string {
  return `SELECT ${target.columns} FROM ${target.table.quoted} WHERE id IN (?) AND claim_token = ?`;
}
