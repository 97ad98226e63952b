import fc from 'fast-check';
import { validateOutboxOptions } from '../../lib/options/validate-options';
import { optionProblems } from '../support/option-problems';

describe('claimLeaseMs', () => {
  it('leaves the four options at their defaults when unset', () => {
    expect(validateOutboxOptions({})).toMatchObject({
      claimLeaseMs: undefined,
      stuckReclaimAfterMs: 300_000,
      stuckWarnAfterMs: 60_000,
      stuckCheckIntervalMs: 30_000,
      sendTimeoutMs: 10_000,
    });
  });

  it("sets the four in the defaults' proportions: a 300 s lease is the defaults", () => {
    const { stuckReclaimAfterMs, stuckWarnAfterMs, stuckCheckIntervalMs, sendTimeoutMs } = validateOutboxOptions({});
    expect(validateOutboxOptions({ claimLeaseMs: 300_000 })).toMatchObject({ stuckReclaimAfterMs, stuckWarnAfterMs, stuckCheckIntervalMs, sendTimeoutMs });
    expect(validateOutboxOptions({ claimLeaseMs: 30_000 })).toMatchObject({
      stuckReclaimAfterMs: 30_000,
      stuckWarnAfterMs: 6_000,
      stuckCheckIntervalMs: 3_000,
      sendTimeoutMs: 1_000,
    });
  });

  it('keeps what is set explicitly', () => {
    expect(validateOutboxOptions({ claimLeaseMs: 60_000, sendTimeoutMs: 5_000, stuckCheckIntervalMs: 1_000 })).toMatchObject({
      stuckReclaimAfterMs: 60_000,
      stuckWarnAfterMs: 12_000,
      stuckCheckIntervalMs: 1_000,
      sendTimeoutMs: 5_000,
    });
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
