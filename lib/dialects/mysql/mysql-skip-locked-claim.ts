import { DataSource } from 'typeorm';
import { CLAIMABLE_STATUSES } from '../../message/message-status';
import { OutboxError } from '../../errors';
import { compareIds } from '../compare-ids';
import { execute } from '../sql-executor';
import { claimableOfStatus, ClaimTarget, markClaimed, MysqlClaimStrategy } from './mysql-claim';
import { sqlId } from './mysql-sql';

/**
 * MySQL 8.0.1+ and MariaDB 10.6+: one short transaction on a connection of its own locks the
 * oldest free claimable rows with SKIP LOCKED (rows another session holds are passed over, never
 * waited on), reading their columns as it locks them, then marks them PROCESSING under the claim
 * token. One locking SELECT per claimable status, each walking the claim index in id order and
 * stopping at `limit`; the oldest `limit` of their rows are claimed, and the others, locked until
 * the commit, are left as they were.
 *
 * A locking read gives each row's latest committed version, which no one else can change until
 * the commit: the rows read are the rows the UPDATE marks, so nothing is read back. (One SELECT
 * with both statuses as UNION ALL branches would need a temporary table for the rows' LONGTEXT
 * columns, which MariaDB keeps on disk.)
 *
 * READ COMMITTED, because under REPEATABLE READ the locking scan also takes gap locks: they would
 * stall publishers inserting new rows, and deadlock two claimers whose scans both reach the end
 * of the backlog. (Where binary logging is on, this needs the ROW or MIXED format, the default
 * of both servers.)
 */
export class SkipLockedClaim implements MysqlClaimStrategy {
  readonly name = 'SKIP LOCKED';
  private readonly locking: string;

  /** @param lockingOf the server has `FOR UPDATE OF` (MySQL): lock only the candidate rows `c` */
  constructor(lockingOf: boolean) {
    this.locking = `FOR UPDATE${lockingOf ? ' OF c' : ''} SKIP LOCKED`;
  }

  claim(dataSource: DataSource, target: ClaimTarget, limit: number, claimToken: string, claimedBy: string): Promise<Record<string, any>[]> {
    return dataSource.transaction('READ COMMITTED', async (tx) => {
      // The ordering rule's subqueries read committed rows without locking them: a head row
      // another session holds still counts as unfinished, so the rows behind it stay put.
      let rows: Record<string, any>[] = [];
      for (const status of CLAIMABLE_STATUSES) {
        const locked = claimableOfStatus(target, status, target.columns, limit, this.locking);
        const found = (await execute(tx, locked.sql, locked.params)).records;
        rows = rows.length === 0 ? found : rows.concat(found);
      }
      if (rows.length > limit) rows = rows.sort((a, b) => compareIds(a.id, b.id)).slice(0, limit);
      if (rows.length === 0) return [];
      const marked = await execute(tx, markClaimed(target, 'id IN (?)'), [claimToken, claimedBy, rows.map((row) => sqlId(row.id))]);
      // Each row is locked by this transaction, so each is marked; a row that were not would be
      // sent without its claim, so the claim is undone instead.
      if (marked.affected !== rows.length) {
        throw new OutboxError(`A SKIP LOCKED claim marked ${marked.affected} of the ${rows.length} rows it locked; it is rolled back`);
      }
      return rows;
    });
  }
}
