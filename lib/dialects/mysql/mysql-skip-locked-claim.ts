import { DataSource } from 'typeorm';
import { execute } from '../sql-executor';
import { claimCandidates, ClaimTarget, markClaimed, MysqlClaimStrategy, readClaimed } from './mysql-claim';

/**
 * MySQL 8.0.1+ and MariaDB 10.6+: one short transaction on a connection of its own locks the
 * oldest free claimable rows with SKIP LOCKED (rows another session holds are passed over, never
 * waited on), marks them PROCESSING under the claim token, and reads them back. Each claimable
 * status's branch locks its own oldest rows, so up to twice `limit` rows are locked until the
 * commit; those beyond the limit are left as they were.
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
      const candidates = claimCandidates(target, limit, this.locking);
      const ids = (await execute(tx, candidates.sql, candidates.params)).records.map((row) => BigInt(row.id));
      if (ids.length === 0) return [];
      await execute(tx, markClaimed(target, 'id IN (?)'), [claimToken, claimedBy, ids]);
      return (await execute(tx, readClaimed(target), [ids, claimToken])).records;
    });
  }
}
