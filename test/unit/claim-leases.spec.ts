import { Logger } from '@nestjs/common';
import { ClaimLeases } from '../../lib/engine/claim-leases';
import { ClaimRef, StateTable } from '../../lib/engine/state-table';

const LEASE_MS = 3_000;
const RENEW_MS = 1_000;

/** A table that records each renewal statement and holds the rows it is told are still held. */
class FakeTable {
  readonly renewals: ClaimRef[][] = [];
  /** Ids whose claim was taken over: a renewal leaves them alone. */
  readonly lost = new Set<string>();
  failing = false;

  leases(): ClaimLeases<ClaimRef> {
    const table = {
      label: 'fake',
      renew: async (_: unknown, claims: ClaimRef[]) => {
        this.renewals.push(claims);
        if (this.failing) throw new Error('connection lost');
        return claims.filter((claim) => !this.lost.has(claim.id)).length;
      },
    } as unknown as StateTable;
    const logger = { warn: () => undefined } as unknown as Logger;
    return new ClaimLeases({ dataSource: undefined as never, table, leaseMs: LEASE_MS, renewIntervalMs: RENEW_MS, logger });
  }
}

const row = (id: string, claimToken = 'token-a'): ClaimRef => ({ id, claimToken });

describe('ClaimLeases', () => {
  beforeEach(() => jest.useFakeTimers());
  afterEach(() => jest.useRealTimers());

  it('renews held rows every interval, one statement per claim token, and stops once none is held', async () => {
    const table = new FakeTable();
    const leases = table.leases();
    const rows = [row('1'), row('2'), row('3', 'token-b')];
    leases.hold(rows, performance.now());
    await jest.advanceTimersByTimeAsync(RENEW_MS);
    expect(table.renewals.map((claims) => claims.map((c) => c.id))).toEqual([['1', '2'], ['3']]);
    leases.drop(rows);
    await jest.advanceTimersByTimeAsync(5 * RENEW_MS);
    expect(table.renewals).toHaveLength(2);
  });

  it('answers stillHeld without a statement while the claim was confirmed within half a lease', async () => {
    const table = new FakeTable();
    const leases = table.leases();
    const held = row('1');
    leases.hold([held], performance.now());
    jest.advanceTimersByTime(LEASE_MS / 2 - 100);
    table.renewals.length = 0;
    expect(await leases.stillHeld(held)).toBe(true);
    expect(table.renewals).toEqual([]);
  });

  it('renews a row alone before answering once its last confirmation is older, and drops it when taken over', async () => {
    const table = new FakeTable();
    const leases = table.leases();
    const [kept, takenOver] = [row('1'), row('2')];
    // Confirmed long ago; the heartbeat's renewals fail meanwhile, so nothing confirms them since.
    table.failing = true;
    leases.hold([kept, takenOver], performance.now());
    await jest.advanceTimersByTimeAsync(LEASE_MS);
    table.failing = false;
    table.lost.add('2');
    table.renewals.length = 0;
    expect(await leases.stillHeld(kept)).toBe(true);
    expect(await leases.stillHeld(takenOver)).toBe(false);
    expect(table.renewals).toEqual([[kept], [takenOver]]);
    expect(leases.size).toBe(1);
    // The heartbeat renews only the row still held.
    table.renewals.length = 0;
    await jest.advanceTimersByTimeAsync(RENEW_MS);
    expect(table.renewals).toEqual([[kept]]);
    leases.stop();
  });

  it('confirms no row of a token whose renewal found fewer rows than it named', async () => {
    const table = new FakeTable();
    const leases = table.leases();
    const [kept, takenOver] = [row('1'), row('2')];
    leases.hold([kept, takenOver], performance.now());
    table.lost.add('2');
    await jest.advanceTimersByTimeAsync(LEASE_MS);
    table.renewals.length = 0;
    // Which of the two was renewed the heartbeat cannot tell: the row is asked about alone.
    expect(await leases.stillHeld(kept)).toBe(true);
    expect(table.renewals.at(-1)).toEqual([kept]);
    leases.stop();
  });

  it('counts a row as not held when the database cannot say', async () => {
    const table = new FakeTable();
    const leases = table.leases();
    const held = row('1');
    leases.hold([held], -Infinity);
    table.failing = true;
    expect(await leases.stillHeld(held)).toBe(false);
    leases.stop();
  });
});
