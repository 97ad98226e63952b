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
  /**
   * The select list of a claimed row, its columns unqualified (they name the candidate row `c`
   * where the claim reads its rows as it locks them). Not the claim token: the claim knows it.
   */
  columns: string;
}

/**
 * How a batch of due rows becomes PROCESSING under one claim token. MySQL has no
 * `UPDATE ... RETURNING`: the rows are read as they are locked, or read back afterwards.
 */
export interface MysqlClaimStrategy {
  /** For the dialect's description. */
  readonly name: string;
  /** Claims up to `limit` rows; resolves to their `target.columns`, in no particular order. */
  claim(dataSource: DataSource, target: ClaimTarget, limit: number, claimToken: string, claimedBy: string): Promise<Record<string, any>[]>;
}

/**
 * The oldest `limit` claimable rows of one status, with `select` and `locking` (a locking
 * clause, or ''). An equality on status walks the claim index `(status, id, next_attempt_at)` in
 * id order and stops after `limit` rows; a single `status IN (...) ORDER BY id` would sort the
 * whole backlog, and lock all of it.
 */
export function claimableOfStatus(target: ClaimTarget, status: string, select: string, limit: number, locking: string): { sql: string; params: unknown[] } {
  const filter = target.filter ? ` AND ${target.filter.sql}` : '';
  return {
    sql: `SELECT ${select} FROM ${target.table.quoted} AS c ${target.table.useClaimIndex}
     WHERE c.status = '${status}' AND c.next_attempt_at <= ${NOW}${filter}
       AND ${mysqlOrderingRule(target.table, target.scope)}
     ORDER BY c.id LIMIT ?${locking ? ` ${locking}` : ''}`,
    params: [...(target.filter?.params ?? []), limit],
  };
}

/** The ids of up to `limit` claimable rows, oldest first, read without locks: one branch per claimable status. */
export function claimCandidates(target: ClaimTarget, limit: number): { sql: string; params: unknown[] } {
  const branches = CLAIMABLE_STATUSES.map((status) => claimableOfStatus(target, status, 'c.id', limit, ''));
  return {
    sql: `${branches.map((branch) => `(${branch.sql})`).join('\nUNION ALL\n')}\nORDER BY id LIMIT ?`,
    params: [...branches.flatMap((branch) => branch.params), limit],
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
