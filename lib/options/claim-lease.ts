import { MIN_CLAIM_LEASE_MS, type OutboxModuleOptions, type OutboxModuleOptionsInput } from './outbox-module-options';

/**
 * The options `claimLeaseMs` sets, each as a fraction of the lease (the defaults' proportions:
 * 30 s, 15 s, 10 s, 3 s, 10 s).
 */
const LEASE_SHARES = {
  stuckReclaimAfterMs: 1,
  stuckWarnAfterMs: 1 / 2,
  leaseRenewIntervalMs: 1 / 3,
  stuckCheckIntervalMs: 1 / 10,
  sendTimeoutMs: 1 / 3,
} as const;

/** The renewal interval's default, as a share of the lease: three renewals per lease. */
const RENEWALS_PER_LEASE = 3;

/** Options derived from `claimLeaseMs`, for messages that must name what the user actually set. */
export type LeaseDerivedOption = keyof typeof LEASE_SHARES;

/**
 * Sets the options that move with the claim lease from `claimLeaseMs`, each one the user did not
 * set, so that shortening how long a dead instance's claims wait is one option, not five kept in
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

/**
 * The options that move with a lease set without `claimLeaseMs` (as `stuckReclaimAfterMs`), each
 * one the user did not set: the renewal interval, a third of it, and the warning threshold, half
 * of it, so that a live claim, renewed, is never warned about. Leaves an invalid lease alone
 * (validation reports it).
 */
export function applyLeaseDefaults(options: OutboxModuleOptions, input: OutboxModuleOptionsInput): void {
  const lease = options.stuckReclaimAfterMs;
  if (typeof lease !== 'number' || !Number.isFinite(lease)) return;
  options.leaseRenewIntervalMs ??= Math.max(50, Math.floor(lease / RENEWALS_PER_LEASE));
  if (input.stuckReclaimAfterMs !== undefined && input.stuckWarnAfterMs === undefined && options.claimLeaseMs === undefined) {
    options.stuckWarnAfterMs = Math.max(100, Math.floor(lease * LEASE_SHARES.stuckWarnAfterMs));
  }
}

/** The lease and its renewal interval, as a claim worker takes them (`ClaimWorkerSpec`). */
export function leaseTimings(options: OutboxModuleOptions): { leaseMs: number; renewIntervalMs: number } {
  const leaseMs = options.stuckReclaimAfterMs;
  return { leaseMs, renewIntervalMs: options.leaseRenewIntervalMs ?? Math.max(50, Math.floor(leaseMs / RENEWALS_PER_LEASE)) };
}
