import fc from 'fast-check';
import { validateOutboxOptions } from '../../lib/options/validate-options';
import { optionProblems } from '../support/option-problems';

describe('claimLeaseMs', () => {
  it('leaves the five options at their defaults when unset: a 30 s lease renewed every 10 s', () => {
    expect(validateOutboxOptions({})).toMatchObject({
      claimLeaseMs: undefined,
      stuckReclaimAfterMs: 30_000,
      stuckWarnAfterMs: 15_000,
      leaseRenewIntervalMs: 10_000,
      stuckCheckIntervalMs: 3_000,
      sendTimeoutMs: 10_000,
    });
  });

  it("sets the five in the defaults' proportions: a 30 s lease is the defaults", () => {
    const { stuckReclaimAfterMs, stuckWarnAfterMs, leaseRenewIntervalMs, stuckCheckIntervalMs, sendTimeoutMs } = validateOutboxOptions({});
    expect(validateOutboxOptions({ claimLeaseMs: 30_000 })).toMatchObject({
      stuckReclaimAfterMs,
      stuckWarnAfterMs,
      leaseRenewIntervalMs,
      stuckCheckIntervalMs,
      sendTimeoutMs,
    });
    expect(validateOutboxOptions({ claimLeaseMs: 300_000 })).toMatchObject({
      stuckReclaimAfterMs: 300_000,
      stuckWarnAfterMs: 150_000,
      leaseRenewIntervalMs: 100_000,
      stuckCheckIntervalMs: 30_000,
      sendTimeoutMs: 100_000,
    });
  });

  it('keeps what is set explicitly', () => {
    expect(validateOutboxOptions({ claimLeaseMs: 60_000, sendTimeoutMs: 5_000, stuckCheckIntervalMs: 1_000 })).toMatchObject({
      stuckReclaimAfterMs: 60_000,
      stuckWarnAfterMs: 30_000,
      leaseRenewIntervalMs: 20_000,
      stuckCheckIntervalMs: 1_000,
      sendTimeoutMs: 5_000,
    });
  });

  it('renews a lease set without claimLeaseMs every third of it, and warns after half of it, unless told otherwise', () => {
    expect(validateOutboxOptions({ stuckReclaimAfterMs: 6_000, stuckWarnAfterMs: 1_000, sendTimeoutMs: 5_000 })).toMatchObject({
      leaseRenewIntervalMs: 2_000,
      stuckWarnAfterMs: 1_000,
    });
    expect(validateOutboxOptions({ stuckReclaimAfterMs: 300_000 })).toMatchObject({ leaseRenewIntervalMs: 100_000, stuckWarnAfterMs: 150_000 });
    expect(validateOutboxOptions({ leaseRenewIntervalMs: 1_000 }).leaseRenewIntervalMs).toBe(1_000);
  });

  it('refuses a renewal interval longer than half the lease, naming both', () => {
    expect(optionProblems({ leaseRenewIntervalMs: 15_001 })).toEqual([
      'leaseRenewIntervalMs must be at most half of stuckReclaimAfterMs, or one late renewal would let a live claim be taken over',
    ]);
    expect(optionProblems({ claimLeaseMs: 10_000, leaseRenewIntervalMs: 6_000 })).toEqual([
      'leaseRenewIntervalMs must be at most half of stuckReclaimAfterMs (10000, derived from claimLeaseMs 10000), or one late renewal would let a live claim be taken over',
    ]);
  });

  it('any valid lease alone is a valid configuration, whose reclaim waits out the send timeout', () => {
    fc.assert(
      fc.property(fc.integer({ min: 3_000, max: 2 ** 31 }), (claimLeaseMs) => {
        const options = validateOutboxOptions({ claimLeaseMs });
        expect(options.stuckReclaimAfterMs).toBe(claimLeaseMs);
        expect(options.sendTimeoutMs).toBeGreaterThanOrEqual(100);
        expect(options.sendTimeoutMs).toBeLessThan(options.stuckReclaimAfterMs);
        expect(options.stuckWarnAfterMs).toBeLessThanOrEqual(options.stuckReclaimAfterMs);
        expect(options.stuckCheckIntervalMs).toBeGreaterThanOrEqual(100);
        expect(options.leaseRenewIntervalMs).toBeLessThanOrEqual(options.stuckReclaimAfterMs / 2);
      }),
    );
  });

  it('refuses a lease too short, or not an integer, by its name', () => {
    expect(optionProblems({ claimLeaseMs: 2_999 })).toEqual([expect.stringMatching(/^claimLeaseMs/)]);
    expect(optionProblems({ claimLeaseMs: 10_000.5 })).toEqual([expect.stringMatching(/^claimLeaseMs/)]);
    expect(optionProblems({ claimLeaseMs: '60000' })).toEqual(expect.arrayContaining([expect.stringMatching(/^claimLeaseMs/)]));
  });

  it('names the lease when an explicit option contradicts what it derives', () => {
    expect(optionProblems({ claimLeaseMs: 15_000, sendTimeoutMs: 20_000 })).toEqual([
      'stuckReclaimAfterMs (15000, derived from claimLeaseMs 15000) must exceed sendTimeoutMs, or live sends would be reclaimed',
    ]);
  });
});
