import { MIN_CLAIM_LEASE_MS, type OutboxModuleOptions, type OutboxModuleOptionsInput } from './outbox-module-options';

/** The options `claimLeaseMs` sets, each as a fraction of the lease (the defaults' proportions: 300 s, 60 s, 30 s, 10 s). */
const LEASE_SHARES = {
  stuckReclaimAfterMs: 1,
  stuckWarnAfterMs: 1 / 5,
  stuckCheckIntervalMs: 1 / 10,
  sendTimeoutMs: 1 / 30,
} as const;

/** Options derived from `claimLeaseMs`, for messages that must name what the user actually set. */
export type LeaseDerivedOption = keyof typeof LEASE_SHARES;

/**
 * Sets the options that move with the claim lease from `claimLeaseMs`, each one the user did not
 * set, so that shortening how long a dead instance's claims wait is one option, not four kept in
 * step. Returns the names it set. Leaves everything alone without a valid lease (validation
 * reports the lease itself).
 */
export function applyClaimLease(options: OutboxModuleOptions, input: OutboxModuleOptionsInput): LeaseDerivedOption[] {
  const lease = options.claimLeaseMs;
  if (typeof lease !== 'number' || !Number.isInteger(lease) || lease < MIN_CLAIM_LEASE_MS) return [];
  const derived: LeaseDerivedOption[] = [];
  for (const [name, share] of Object.entries(LEASE_SHARES) as [LeaseDerivedOption, number][]) {
    if (input[name] !== undefined) continue;
    options[name] = Math.floor(lease * share);
    derived.push(name);
  }
  return derived;
}
