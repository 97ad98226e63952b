import { setTimeout as sleep } from 'node:timers/promises';

/**
 * Pauses between the tries of a bookkeeping write: about 4 s in all, long enough for a pool to
 * replace a killed connection or a failover to finish, short enough to give up while the claim
 * is still far from its reclaim time.
 */
const RETRY_DELAYS_MS = [50, 250, 1_000, 3_000];

/**
 * Runs a state-machine write (a settle, a release) again when it fails, a bounded number of
 * times. Safe because every such write is fenced by its claim token: a try that committed before
 * its reply was lost makes the next one change nothing. Without it, one killed connection leaves
 * a whole batch PROCESSING until the stuck detector reclaims it (and charges an attempt).
 */
export async function persistently<T>(write: () => Promise<T>, delaysMs: readonly number[] = RETRY_DELAYS_MS): Promise<T> {
  for (let attempt = 0; ; attempt++) {
    try {
      return await write();
    } catch (error) {
      if (attempt >= delaysMs.length) throw error;
      await sleep(delaysMs[attempt]);
    }
  }
}
