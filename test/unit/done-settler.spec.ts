import { DoneSettler } from '../../lib/engine/done-settler';
import { ClaimRef } from '../../lib/engine/state-table';

const rows = (...ids: number[]): ClaimRef[] => ids.map((id) => ({ id: String(id), claimToken: 't' }));
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** A settler over a fake table: `statements` records each statement's ids; `changes` answers how many each changed. */
function settlerOf(options: { lingerMs?: number; maxRows?: number; fail?: number; changes?: (ids: string[]) => number; throwInSettled?: boolean } = {}) {
  const statements: string[][] = [];
  const reports: { rows: number; changed: number }[] = [];
  const failures: number[] = [];
  let failuresLeft = options.fail ?? 0;
  const settler = new DoneSettler<ClaimRef>({
    lingerMs: options.lingerMs ?? 20,
    maxRows: options.maxRows ?? 100,
    settle: async (batch) => {
      statements.push(batch.map((row) => row.id));
      if (failuresLeft-- > 0) throw new Error('connection terminated');
      return options.changes ? options.changes(batch.map((row) => row.id)) : batch.length;
    },
    settled: (count, changed) => {
      reports.push({ rows: count, changed });
      if (options.throwInSettled) throw new Error('listener bug');
    },
    failed: (count) => failures.push(count),
  });
  return { settler, statements, reports, failures };
}

describe('DoneSettler', () => {
  it('settles the rows of batches that finish within the linger in one statement', async () => {
    const { settler, statements, reports } = settlerOf({ lingerMs: 30 });
    settler.add(rows(1));
    settler.add(rows(2, 3));
    await sleep(5);
    settler.add(rows(4));
    expect(statements).toEqual([]);
    expect(settler.pending).toBe(4);
    await sleep(60);
    expect(statements).toEqual([['1', '2', '3', '4']]);
    expect(reports).toEqual([{ rows: 4, changed: 4 }]);
    expect(settler.pending).toBe(0);
  });

  it('settles at once once a full batch is queued, without waiting out the linger', async () => {
    const { settler, statements } = settlerOf({ lingerMs: 60_000, maxRows: 3 });
    settler.add(rows(1, 2));
    settler.add(rows(3));
    await settler.idle();
    expect(statements).toEqual([['1', '2', '3']]);
  });

  it('idle() settles what waits now and resolves once every statement was answered', async () => {
    const { settler, statements } = settlerOf({ lingerMs: 60_000 });
    settler.add(rows(1));
    await settler.idle();
    expect(statements).toEqual([['1']]);
    expect(settler.pending).toBe(0);
    // Nothing queued: nothing sent.
    await settler.idle();
    settler.add([]);
    await settler.idle();
    expect(statements).toHaveLength(1);
  });

  it('tries a failed statement again, and reports the rows of one that failed on every try without throwing', async () => {
    const retried = settlerOf({ fail: 1 });
    retried.settler.add(rows(1, 2));
    await retried.settler.idle();
    expect(retried.statements).toEqual([
      ['1', '2'],
      ['1', '2'],
    ]);
    expect(retried.reports).toEqual([{ rows: 2, changed: 2 }]);

    const lost = settlerOf({ fail: 99 });
    lost.settler.add(rows(1));
    await lost.settler.idle();
    expect(lost.failures).toEqual([1]);
    expect(lost.settler.pending).toBe(0);
  }, 30_000);

  it('reports rows a statement no longer found claimed', async () => {
    const { settler, reports } = settlerOf({ changes: (ids) => ids.length - 1 });
    settler.add(rows(1, 2, 3));
    await settler.idle();
    expect(reports).toEqual([{ rows: 3, changed: 2 }]);
  });

  it('never turns a throwing listener into an unhandled rejection', async () => {
    const unhandled = jest.fn();
    process.on('unhandledRejection', unhandled);
    try {
      const { settler } = settlerOf({ throwInSettled: true });
      settler.add(rows(1));
      await settler.idle();
      await sleep(10);
      expect(unhandled).not.toHaveBeenCalled();
    } finally {
      process.off('unhandledRejection', unhandled);
    }
  });
});
