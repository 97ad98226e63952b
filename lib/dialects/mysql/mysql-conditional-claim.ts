import { DataSource } from 'typeorm';
import { execute } from '../sql-executor';
import { claimCandidates, ClaimTarget, markClaimed, MysqlClaimStrategy, readClaimed } from './mysql-claim';
import { CLAIMABLE_SQL } from '../status-sql';
import { NOW } from './mysql-sql';

/** Candidate reads per claim when other claimers keep taking the candidates first. */
const MAX_ROUNDS = 3;

/**
 * Servers without SKIP LOCKED (MySQL before 8.0.1, MariaDB before 10.6): candidates are read
 * without locks, then taken by an UPDATE that re-checks that each is still claimable, so that of
 * two claimers reading the same candidates each row goes to exactly one. A claimer that lost
 * candidates to another reads again, a few times, instead of returning a short batch (which its
 * worker would take for an empty table) while rows wait.
 *
 * The ordering rule needs no re-check: a finished row never becomes unfinished again, so a
 * candidate whose earlier rows were all finished stays claimable.
 */
export class ConditionalUpdateClaim implements MysqlClaimStrategy {
  readonly name = 'conditional-update';

  async claim(dataSource: DataSource, target: ClaimTarget, limit: number, claimToken: string, claimedBy: string): Promise<Record<string, any>[]> {
    const tried: bigint[] = [];
    let claimed = 0;
    for (let round = 0; round < MAX_ROUNDS && claimed < limit; round++) {
      const candidates = claimCandidates(target, limit - claimed);
      const ids = (await execute(dataSource, candidates.sql, candidates.params)).records.map((row) => BigInt(row.id));
      if (ids.length === 0) break;
      tried.push(...ids);
      const taken = await execute(dataSource, markClaimed(target, `id IN (?) AND ${CLAIMABLE_SQL} AND next_attempt_at <= ${NOW}`), [
        claimToken,
        claimedBy,
        ids,
      ]);
      claimed += taken.affected ?? 0;
      if (taken.affected === ids.length) break; // took every candidate: the batch is full, or nothing more is due
    }
    if (tried.length === 0) return [];
    return (await execute(dataSource, readClaimed(target), [tried, claimToken])).records;
  }
}
