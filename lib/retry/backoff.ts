/** Parameters of the retry delay. */
export interface BackoffPolicy {
  /** The delay after the first failed attempt; doubles with each further one. */
  baseMs: number;
  /** Upper bound of the delay before jitter. */
  maxMs: number;
  /** Fraction of the delay added at random, in [0, 1]. */
  jitter: number;
}

/**
 * Delay before the next attempt after `failedAttempts` failures (1 for the first failure):
 * `min(base × 2^(failedAttempts-1), max) × (1 + jitter × random)`. Jitter spreads retries of a
 * batch that failed together so they do not hit a recovering broker at the same instant.
 */
export function backoffDelayMs(failedAttempts: number, policy: BackoffPolicy, random: () => number = Math.random): number {
  const exponent = Math.max(0, failedAttempts - 1);
  // 2^exponent overflows to Infinity for huge exponents; Math.min keeps the cap.
  const capped = Math.min(policy.baseMs * 2 ** exponent, policy.maxMs);
  return Math.round(capped * (1 + policy.jitter * random()));
}
