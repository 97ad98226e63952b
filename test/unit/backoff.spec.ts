import { backoffDelayMs } from '../../lib/retry/backoff';

const policy = { baseMs: 1_000, maxMs: 60_000, jitter: 0 };

describe('backoffDelayMs', () => {
  it('doubles the base delay with every failed attempt', () => {
    expect([1, 2, 3, 4, 5].map((n) => backoffDelayMs(n, policy))).toEqual([1_000, 2_000, 4_000, 8_000, 16_000]);
  });

  it('never exceeds the cap before jitter, even for huge attempt counts', () => {
    expect(backoffDelayMs(7, policy)).toBe(60_000);
    expect(backoffDelayMs(5_000, policy)).toBe(60_000);
  });

  it('adds at most the jitter fraction on top of the delay', () => {
    const jittered = { ...policy, jitter: 0.2 };
    expect(backoffDelayMs(1, jittered, () => 0)).toBe(1_000);
    expect(backoffDelayMs(1, jittered, () => 0.5)).toBe(1_100);
    expect(backoffDelayMs(1, jittered, () => 0.999)).toBeLessThanOrEqual(1_200);
    expect(backoffDelayMs(100, jittered, () => 0.999)).toBeLessThanOrEqual(72_000);
  });

  it('spreads the retries of messages that failed together', () => {
    const delays = new Set(Array.from({ length: 50 }, () => backoffDelayMs(3, { ...policy, jitter: 0.5 })));
    expect(delays.size).toBeGreaterThan(10);
  });

  it('treats attempt 0 like the first failure', () => {
    expect(backoffDelayMs(0, policy)).toBe(1_000);
  });
});
