import fc from 'fast-check';
import { describeError } from '../../lib/retry/error-classifier';
import { expiredClaimError } from '../../lib/maintenance/expired-claim-error';

/** What the stuck detector stores: the reclaim's error as `describeError` writes it. */
const stored = (claimedBy: string, lastError: string | null) => describeError(expiredClaimError({ claimedBy, lastError }, 1000), 2000);

describe('expiredClaimError', () => {
  it('names the dead claimant, and nothing else without an earlier failure', () => {
    expect(expiredClaimError({ claimedBy: 'a', lastError: null }, 1000).message).toBe('claim by a expired after 1000 ms without a settle');
    expect(expiredClaimError({ claimedBy: null, lastError: null }, 1000).message).toBe('claim by unknown expired after 1000 ms without a settle');
  });

  it('keeps the earlier failure', () => {
    expect(expiredClaimError({ claimedBy: 'a', lastError: 'Error: exchange missing' }, 1000).message).toBe(
      'claim by a expired after 1000 ms without a settle; the attempt before failed: Error: exchange missing',
    );
  });

  it('keeps the first cause across repeated reclaims instead of a chain of expiries', () => {
    const once = stored('a', 'Error: exchange missing');
    const twice = stored('b', once);
    expect(twice).toBe('Error: claim by b expired after 1000 ms without a settle; the attempt before failed: Error: exchange missing');
    expect(stored('c', twice)).toBe(twice.replace('claim by b', 'claim by c'));
    // A reclaim with no cause, reclaimed again: still no cause.
    expect(stored('b', stored('a', null))).toBe('Error: claim by b expired after 1000 ms without a settle');
  });

  it('unnests a chain written before reclaims stopped nesting', () => {
    const chained =
      'Error: claim by b expired after 1000 ms without a settle; the attempt before failed: Error: claim by a expired after 1000 ms without a settle; the attempt before failed: Error: boom';
    expect(expiredClaimError({ claimedBy: 'c', lastError: chained }, 1000).message).toBe(
      'claim by c expired after 1000 ms without a settle; the attempt before failed: Error: boom',
    );
  });

  it('keeps any other earlier error whole, and never grows past one expiry', () => {
    fc.assert(
      fc.property(fc.string({ minLength: 1 }), fc.integer({ min: 1, max: 5 }), (cause, reclaims) => {
        fc.pre(!/claim by .* expired after \d+ ms without a settle/.test(cause));
        let lastError = cause;
        for (let i = 0; i < reclaims; i++) lastError = expiredClaimError({ claimedBy: `i${i}`, lastError }, 1000).message;
        expect(lastError).toBe(`claim by i${reclaims - 1} expired after 1000 ms without a settle; the attempt before failed: ${cause}`);
      }),
    );
  });
});
