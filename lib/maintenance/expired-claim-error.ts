import { ExpiredClaim } from '../engine/state-table';

const EARLIER = '; the attempt before failed: ';
/**
 * A `last_error` an earlier reclaim wrote (as `describeError` stores it), with the cause it kept,
 * if any. Greedy up to the last expiry, so rows written before reclaims stopped nesting yield
 * their innermost cause too.
 */
const RECLAIMED = /^(?:Error: )?claim by .* expired after \d+ ms without a settle(?:; the attempt before failed: ([\s\S]*))?$/;

/**
 * The reason a stuck detector's reclaim records. It keeps the reason the attempt before failed:
 * when the reclaim is the last attempt, the MANUAL_REQUIRED row still says what was wrong with
 * the message, not only that its last claimant died. A row reclaimed again keeps that first
 * cause rather than a chain of expiries, which would push the cause past `lastErrorMaxLength`.
 */
export function expiredClaimError(claim: Pick<ExpiredClaim, 'claimedBy' | 'lastError'>, afterMs: number): Error {
  const expired = `claim by ${claim.claimedBy ?? 'unknown'} expired after ${afterMs} ms without a settle`;
  const cause = claim.lastError ? (RECLAIMED.exec(claim.lastError)?.[1] ?? (RECLAIMED.test(claim.lastError) ? undefined : claim.lastError)) : undefined;
  return new Error(cause ? `${expired}${EARLIER}${cause}` : expired);
}
