import { Logger } from '@nestjs/common';
import { ClaimWorker } from '../../lib/engine/claim-worker';
import { AttemptedClaim, StateTable } from '../../lib/engine/state-table';

type Row = AttemptedClaim;

/** A table of due rows in memory, and control over when each batch's processing finishes. */
class FakeQueue {
  due: number[] = [];
  claims = 0;
  processing = 0;
  maxProcessing = 0;
  processed: number[] = [];
  private release: (() => void)[] = [];

  ready = true;
  /** While set, each claim statement waits for `answerClaims()` before it takes its rows. */
  holdClaims = false;
  claimsInFlight = 0;
  maxClaimsInFlight = 0;
  private claimAnswers: (() => void)[] = [];
  /** Claims whose statement fails after taking its rows, as when the reply of a committed claim is lost. */
  failNextClaims = 0;
  /** Rows given back by `release` (shutdown). */
  released: number[] = [];
  /** While set, `release` fails with it. */
  releaseError?: Error;
  /** What the worker warned of. */
  warnings: string[] = [];
  /** Tokens given back by `releaseClaim`. */
  releasedTokens: string[] = [];
  /** Rows taken by claims that failed, by their token. */
  private readonly lost = new Map<string, number[]>();

  worker(batchSize: number, concurrency: number, holdProcessing = false, besideBusyLoopsAfterMs?: number): ClaimWorker<Row> {
    return new ClaimWorker<Row>({
      besideBusyLoopsAfterMs,
      dataSource: undefined as never,
      leaseMs: 60_000,
      renewIntervalMs: 20_000,
      table: {
        label: 'fake',
        renew: async (_: unknown, rows: Row[]) => rows.length,
        release: async (_: unknown, rows: Row[]) => {
          if (this.releaseError) throw this.releaseError;
          this.released.push(...rows.map((row) => Number(row.id)));
          return rows.length;
        },
        releaseClaim: async (_: unknown, token: string) => {
          this.releasedTokens.push(token);
          const rows = this.lost.get(token) ?? [];
          this.lost.delete(token);
          this.due.push(...rows);
          return rows.length;
        },
      } as unknown as StateTable,
      isReady: () => this.ready,
      batchSize,
      concurrency,
      processTimeoutMs: 1_000,
      // Failed claims are logged; the tests look at what the worker did instead.
      logger: { error: () => undefined, warn: (message: string) => this.warnings.push(message), log: () => undefined } as unknown as Logger,
      claim: async (limit, claimToken) => {
        this.claims++;
        this.claimsInFlight++;
        this.maxClaimsInFlight = Math.max(this.maxClaimsInFlight, this.claimsInFlight);
        if (this.holdClaims) await new Promise<void>((resolve) => this.claimAnswers.push(resolve));
        this.claimsInFlight--;
        const rows = this.due.splice(0, limit);
        if (this.failNextClaims > 0) {
          this.failNextClaims--;
          this.lost.set(claimToken, rows);
          throw new Error('connection terminated after the commit');
        }
        return rows.map((n) => ({ id: String(n), claimToken, attempts: 0, maxAttempts: 1, orderingKey: null }));
      },
      process: async (batch) => {
        this.processing++;
        this.maxProcessing = Math.max(this.maxProcessing, this.processing);
        if (holdProcessing) await new Promise<void>((resolve) => this.release.push(resolve));
        this.processed.push(...batch.map((row) => Number(row.id)));
        this.processing--;
      },
    });
  }

  answerClaims(): void {
    for (const answer of this.claimAnswers.splice(0)) answer();
  }

  finishAll(): void {
    for (const release of this.release.splice(0)) release();
  }
}

const tick = () => new Promise((resolve) => setImmediate(resolve));
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
/** A repeatable sequence of numbers in [0, 1) (a linear congruential generator). */
function seeded(seed: number): () => number {
  let state = seed >>> 0;
  return () => (state = (Math.imul(state, 1664525) + 1013904223) >>> 0) / 2 ** 32;
}
/** Longer than any test lasts: a trigger beside busy loops then waits for one of them. */
const NEVER_BESIDE_MS = 60_000;

/** A worker of 4 loops whose first loop is busy with row 1, its batch held until `finishAll()`. */
async function busyWithRowOne(besideBusyLoopsAfterMs: number): Promise<{ queue: FakeQueue; worker: ClaimWorker<Row> }> {
  const queue = new FakeQueue();
  const worker = queue.worker(10, 4, true, besideBusyLoopsAfterMs);
  queue.due = [1];
  worker.trigger();
  await tick();
  return { queue, worker };
}

describe('ClaimWorker', () => {
  it('claims a row committed while another batch is still being processed beside it, once that batch has taken long enough', async () => {
    const { queue, worker } = await busyWithRowOne(20);
    expect(queue.processing).toBe(1);

    queue.due = [2];
    worker.trigger();
    await tick();
    // Not at once: the busy loop may finish first and take it with whatever comes meanwhile.
    expect(queue.claims).toBe(1);
    // The first batch still waits (a slow send): the second row goes out beside it.
    while (queue.processing < 2) await sleep(5);
    expect(queue.claims).toBe(2);
    queue.finishAll();
    await worker.drain();
    expect(queue.processed.sort()).toEqual([1, 2]);
  });

  it('takes the rows committed while its batch was processed in one claim when the batch finishes first', async () => {
    const { queue, worker } = await busyWithRowOne(NEVER_BESIDE_MS);
    for (const row of [2, 3, 4]) {
      queue.due.push(row);
      worker.trigger();
      await tick();
    }
    expect(queue.claims).toBe(1);

    queue.finishAll();
    await tick();
    await tick();
    // The loop that finished claimed again, once, for all three.
    expect(queue.claims).toBe(2);
    queue.finishAll();
    await worker.drain();
    expect(queue.processed).toEqual([1, 2, 3, 4]);
    expect(queue.maxProcessing).toBe(1);
    await worker.stop();
  });

  it('claims nothing beside a loop that took the rows before the wait was over', async () => {
    const { queue, worker } = await busyWithRowOne(20);
    queue.due.push(2);
    worker.trigger();
    queue.finishAll();
    while (queue.processing < 1 || queue.claims < 2) await tick();
    // Past the wait: the busy loop already took row 2, so no loop of its own claims (for nothing).
    await sleep(60);
    expect(queue.claims).toBe(2);
    queue.finishAll();
    await worker.drain();
    expect(queue.processed).toEqual([1, 2]);
    await worker.stop();
  });

  it('never runs more loops than its concurrency, and loses no trigger when all are busy', async () => {
    const queue = new FakeQueue();
    const worker = queue.worker(1, 2, true);
    queue.due = [1, 2];
    worker.trigger();
    worker.trigger();
    await tick();
    expect(queue.processing).toBe(2);

    queue.due.push(3);
    worker.trigger(); // every loop is busy
    await tick();
    expect(queue.processing).toBe(2);
    while (queue.processed.length < 3) {
      queue.finishAll();
      await tick();
    }
    await worker.drain();
    expect(queue.processed.sort()).toEqual([1, 2, 3]);
    expect(queue.maxProcessing).toBe(2);
  });

  it('sends no second claim beside one in flight, and claims what came meanwhile once that batch is done', async () => {
    const queue = new FakeQueue();
    const worker = queue.worker(10, 4, true, NEVER_BESIDE_MS);
    queue.holdClaims = true;
    queue.due = [1];
    worker.trigger();
    // Commits while the first claim is in flight: each would have started a claim of its own.
    for (const row of [2, 3, 4]) {
      queue.due.push(row);
      worker.trigger();
    }
    await tick();
    expect(queue.claims).toBe(1);

    queue.answerClaims();
    await tick();
    // The first claim took all four. The triggers that came while it was in flight start no claim
    // beside its batch: its loop looks once more when the batch is done.
    expect(queue.claims).toBe(1);
    queue.holdClaims = false;
    queue.finishAll();
    await tick();
    await tick();
    expect(queue.claims).toBe(2);
    queue.finishAll();
    await worker.drain();
    queue.finishAll();
    expect(queue.processed.sort()).toEqual([1, 2, 3, 4]);
    expect(queue.maxClaimsInFlight).toBe(1);
    await worker.stop();
  });

  it('works a backlog with all its loops', async () => {
    const queue = new FakeQueue();
    const worker = queue.worker(5, 3);
    queue.due = Array.from({ length: 100 }, (_, i) => i);
    await worker.drain();
    expect(queue.processed.sort((a, b) => a - b)).toEqual(queue.processed.map((_, i) => i));
    expect(queue.processed).toHaveLength(100);
  });

  it('stops claiming once stopped', async () => {
    const queue = new FakeQueue();
    const worker = queue.worker(5, 2);
    await worker.stop();
    queue.due = [1];
    worker.trigger();
    await tick();
    expect(queue.claims).toBe(0);
  });

  it('claims nothing while not ready, and claims again once triggered when ready', async () => {
    const queue = new FakeQueue();
    const worker = queue.worker(5, 2);
    queue.due = [1, 2];
    queue.ready = false;
    worker.trigger();
    await worker.drain();
    expect(queue.claims).toBe(0);

    queue.ready = true;
    await worker.drain();
    expect(queue.processed.sort()).toEqual([1, 2]);
  });

  it('gives back at once the rows of a claim whose statement failed, so none waits for the stuck detector', async () => {
    const queue = new FakeQueue();
    const worker = queue.worker(5, 1);
    queue.due = [1, 2, 3];
    queue.failNextClaims = 1;
    await worker.drain();
    expect(queue.releasedTokens).toHaveLength(1);
    expect(queue.due.sort()).toEqual([1, 2, 3]);
    await worker.drain();
    expect(queue.processed.sort()).toEqual([1, 2, 3]);
  });

  it('resolves drain() only once every batch is processed, with every row due before it, whatever the interleaving', async () => {
    // Claims and batches take a random few milliseconds, and commits and polls trigger at random
    // moments, as on a loaded machine: a drain must never resolve while a batch is still being
    // processed, or before a row committed ahead of it is processed (what OutboxTestKit.flush()
    // builds on).
    for (let seed = 1; seed <= 8; seed++) {
      const random = seeded(seed);
      const pause = (maxMs: number) => sleep(Math.floor(random() * maxMs));
      const due: number[] = [];
      const processed = new Set<number>();
      let processing = 0;
      const errors: string[] = [];
      const worker = new ClaimWorker<Row>({
        besideBusyLoopsAfterMs: Math.floor(random() * 5),
        dataSource: undefined as never,
        leaseMs: 60_000,
        renewIntervalMs: 20_000,
        table: { label: 'fake', renew: async (_: unknown, rows: Row[]) => rows.length } as unknown as StateTable,
        batchSize: 1 + Math.floor(random() * 3),
        concurrency: 1 + Math.floor(random() * 3),
        processTimeoutMs: 1_000,
        logger: { error: (message: string) => errors.push(message), warn: () => undefined, log: () => undefined } as unknown as Logger,
        claim: async (limit, claimToken) => {
          await pause(3);
          // Taken (locked) here; the claim's commit comes later.
          const rows = due.splice(0, limit);
          await pause(3);
          return rows.map((n) => ({ id: String(n), claimToken, attempts: 0, maxAttempts: 1, orderingKey: null }));
        },
        process: async (batch) => {
          processing++;
          await pause(4);
          for (const row of batch) processed.add(Number(row.id));
          processing--;
        },
      });
      let polling = true;
      const polls = (async () => {
        while (polling) {
          await sleep(5 + Math.floor(random() * 20));
          worker.trigger();
        }
      })();
      let next = 1;
      for (let round = 0; round < 20; round++) {
        const committed = Array.from({ length: Math.floor(random() * 4) }, () => next++);
        due.push(...committed);
        if (random() < 0.7) worker.trigger(); // the commit's wake-up; without it, only drain() and polls claim
        if (random() < 0.5) await pause(3);
        await worker.drain();
        expect({ seed, round, processing }).toEqual({ seed, round, processing: 0 });
        expect(committed.filter((n) => !processed.has(n))).toEqual([]);
      }
      polling = false;
      await polls;
      await worker.stop();
      expect(errors).toEqual([]);
    }
  });

  describe('rows handed off, claimed already', () => {
    const handed = (...ids: number[]): Row[] => ids.map((id) => ({ id: String(id), claimToken: 'lane', attempts: 0, maxAttempts: 1, orderingKey: null }));

    it('processes them without a claim statement', async () => {
      const queue = new FakeQueue();
      const worker = queue.worker(10, 4);
      worker.handOff(handed(1, 2));
      await worker.drain();
      expect(queue.processed).toEqual([1, 2]);
      // drain() triggers one claim of its own; the hand-off needed none.
      expect(queue.claims).toBe(1);
      await worker.stop();
    });

    it('takes them a batch at a time, with more loops when more than a batch waits', async () => {
      const queue = new FakeQueue();
      const worker = queue.worker(3, 2, true);
      worker.handOff(handed(1, 2, 3, 4, 5, 6, 7));
      await tick();
      expect(queue.processing).toBe(2);
      expect(queue.claims).toBe(0);
      while (queue.processed.length < 7) {
        queue.finishAll();
        await tick();
      }
      expect(queue.processed).toEqual([1, 2, 3, 4, 5, 6, 7]);
      expect(queue.maxProcessing).toBe(2);
      expect(queue.claims).toBe(0);
      expect(worker.handedOffCount).toBe(0);
      await worker.stop();
    });

    it('lets a busy loop take what is handed off meanwhile, before claiming', async () => {
      const { queue, worker } = await busyWithRowOne(NEVER_BESIDE_MS);
      worker.handOff(handed(2));
      worker.handOff(handed(3));
      await tick();
      expect(queue.processing).toBe(1);
      expect(worker.handedOffCount).toBe(2);
      queue.finishAll();
      await tick();
      await tick();
      // Both in one batch of the loop that finished, and no claim for them.
      expect(queue.processing).toBe(1);
      queue.finishAll();
      await worker.drain();
      expect(queue.processed).toEqual([1, 2, 3]);
      expect(queue.maxProcessing).toBe(1);
      await worker.stop();
    });

    it('still claims what a trigger asked for after the handed-off rows', async () => {
      const queue = new FakeQueue();
      const worker = queue.worker(10, 1, true);
      worker.handOff(handed(1));
      await tick();
      queue.due = [2];
      worker.trigger();
      while (queue.processed.length < 2) {
        queue.finishAll();
        await tick();
      }
      expect(queue.processed).toEqual([1, 2]);
      expect(queue.claims).toBe(1);
      await worker.stop();
    });

    it('gives back at shutdown what no loop took, and at once what comes after', async () => {
      const queue = new FakeQueue();
      const worker = queue.worker(1, 1, true);
      worker.handOff(handed(1, 2, 3));
      await tick();
      expect(queue.processing).toBe(1);
      const stopped = worker.stop();
      queue.finishAll();
      await stopped;
      expect(queue.processed).toEqual([1]);
      expect(queue.released.sort()).toEqual([2, 3]);

      worker.handOff(handed(4));
      await tick();
      expect(queue.released.sort()).toEqual([2, 3, 4]);
      expect(queue.processed).toEqual([1]);
    });

    it('says so when it cannot give rows back at shutdown, with the error', async () => {
      const queue = new FakeQueue();
      const worker = queue.worker(1, 1, true);
      worker.handOff(handed(1, 2));
      await tick();
      queue.releaseError = new Error('connection refused');
      const stopped = worker.stop();
      queue.finishAll();
      await stopped;
      expect(queue.warnings).toEqual([expect.stringMatching(/^Could not give back 1 claimed fake row\(s\) at shutdown; .*connection refused/)]);
    });
  });
});
