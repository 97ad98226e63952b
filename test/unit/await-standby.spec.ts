import { Logger } from '@nestjs/common';
import type { DataSource } from 'typeorm';
import { StandbyLagError } from '../../lib';
import { parseLsn } from '../../lib/dialects/postgres/postgres-standby-gate';
import { passStandbyGate, StandbyGate } from '../../lib/engine/standby-gate';
import type { ClaimRef, StateTable } from '../../lib/engine/state-table';
import { resolveAwaitStandby } from '../../lib/options/await-standby';
import { validateOutboxOptions } from '../../lib/options/validate-options';
import { optionProblems } from '../support/option-problems';

describe('awaitStandby option', () => {
  it('is off by default', () => {
    expect(validateOutboxOptions(undefined).awaitStandby).toBeUndefined();
  });

  it('waits for every named standby, 5 s at most, unless told otherwise', () => {
    const options = validateOutboxOptions({ awaitStandby: { standbys: ['a', 'b'] } });
    expect(resolveAwaitStandby(options.awaitStandby!)).toEqual({ standbys: ['a', 'b'], confirmations: 2, timeoutMs: 5_000, pollIntervalMs: 2 });
    expect(resolveAwaitStandby({ standbys: ['a', 'b'], confirmations: 1, timeoutMs: 800, pollIntervalMs: 5 })).toMatchObject({
      confirmations: 1,
      timeoutMs: 800,
    });
  });

  it('names what is wrong with a bad value', () => {
    expect(optionProblems({ awaitStandby: true })).toEqual([expect.stringMatching(/^awaitStandby must be an object/)]);
    expect(optionProblems({ awaitStandby: {} })).toEqual([expect.stringMatching(/^awaitStandby.standbys must list/)]);
    expect(optionProblems({ awaitStandby: { standbys: [''] } })).toEqual([expect.stringMatching(/^awaitStandby.standbys must list/)]);
    expect(optionProblems({ awaitStandby: { standbys: ['a', 'a'] } })).toEqual(['awaitStandby.standbys names a standby twice']);
    expect(optionProblems({ awaitStandby: { standbys: ['a'], confirmations: 2 } })).toEqual([expect.stringMatching(/^awaitStandby.confirmations .* \(1\)$/)]);
    expect(optionProblems({ awaitStandby: { standbys: ['a'], timeoutMs: 5 } })).toEqual([expect.stringMatching(/^awaitStandby.timeoutMs/)]);
    expect(optionProblems({ awaitStandby: { standbys: ['a'], pollIntervalMs: 0 } })).toEqual([expect.stringMatching(/^awaitStandby.pollIntervalMs/)]);
    expect(optionProblems({ awaitStandby: { standbys: ['a'], timeout: 100 } })).toEqual([expect.stringMatching(/^awaitStandby.timeout is not an option/)]);
  });

  it('refuses a wait that could outlast the claim', () => {
    expect(optionProblems({ awaitStandby: { standbys: ['a'], timeoutMs: 25_000 }, sendTimeoutMs: 10_000 })).toEqual([
      expect.stringMatching(/^awaitStandby.timeoutMs \(25000\) \+ sendTimeoutMs \(10000\) must stay below stuckReclaimAfterMs \(30000\)/),
    ]);
  });
});

describe('parseLsn', () => {
  it('orders positions as the WAL does', () => {
    expect(parseLsn('0/3000028')).toBe(0x3000028n);
    expect(parseLsn('16/B374D848')).toBe((0x16n << 32n) + 0xb374d848n);
    expect(parseLsn('1/0') > parseLsn('0/FFFFFFFF')).toBe(true);
  });
});

describe('passStandbyGate', () => {
  const batch: ClaimRef[] = [
    { id: '1', claimToken: 't' },
    { id: '2', claimToken: 't' },
  ];
  const target = (gate: StandbyGate, release = jest.fn(async (_: DataSource, claims: ClaimRef[]) => claims.length)) => ({
    gate,
    table: { label: 'outbox', release } as unknown as StateTable,
    dataSource: {} as DataSource,
    logger: { warn: jest.fn() } as unknown as Logger,
  });

  it('lets a batch the standbys hold through, giving nothing back', async () => {
    const t = target({ replicated: async () => undefined });
    await expect(passStandbyGate(t, batch)).resolves.toBe(true);
    expect(t.table.release).not.toHaveBeenCalled();
  });

  it('gives a batch back unattempted when no standby confirms it, and says why', async () => {
    const t = target({ replicated: async () => Promise.reject(new StandbyLagError('no 1 of the standbys standby1 confirmed the batch')) });
    await expect(passStandbyGate(t, batch)).resolves.toBe(false);
    expect(t.table.release).toHaveBeenCalledWith(t.dataSource, batch);
    expect(t.logger.warn).toHaveBeenCalledWith(
      expect.stringMatching(/^Gave back 2 claimed outbox row\(s\) unattempted: StandbyLagError: no 1 of the standbys standby1/),
    );
  });
});
