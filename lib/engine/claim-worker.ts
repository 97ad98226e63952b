import { Logger } from '@nestjs/common';
import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { DataSource } from 'typeorm';
import { describeError } from '../retry/error-classifier';
import { persistently } from './persistently';
import { ClaimLeases } from './claim-leases';
import { AttemptedClaim, StateTable } from './state-table';

const SHUTDOWN_GRACE_MS = 5_000;
/**
 * How long rows committed while every loop is busy with a batch wait for one of them to finish
 * before a loop of their own claims beside. Under a steady stream a batch is usually done sooner
 * and its loop takes everything committed meanwhile in one claim; only a slow send makes them
 * wait this long (bench/results/steady-rate.md has the measurements).
 */
const BESIDE_BUSY_LOOPS_AFTER_MS = 20;

/** What a claim worker needs from its owner. */
export interface ClaimWorkerSpec<T extends AttemptedClaim> {
  dataSource: DataSource;
  table: StateTable;
  batchSize: number;
  concurrency: number;
  /** Claims up to `limit` due rows under `claimToken`. */
  claim(limit: number, claimToken: string): Promise<T[]>;
  /** Handles a claimed batch and settles every row of it. */
  process(batch: T[]): Promise<void>;
  /** Longest a batch may take to process once shutdown begins. */
  processTimeoutMs: number;
  /** The claim lease (`stuckReclaimAfterMs`): held claims are renewed well within it (see `ClaimLeases`). */
  leaseMs: number;
  /** How often held claims are renewed. */
  renewIntervalMs: number;
  /** See `BESIDE_BUSY_LOOPS_AFTER_MS` (the default). */
  besideBusyLoopsAfterMs?: number;
  /**
   * Whether claiming makes sense now (the transport can send). While false, no loop claims, so
   * rows stay claimable, cancellable and unattempted; the owner triggers the worker when it turns.
   */
  isReady?(): boolean;
  logger: Logger;
}

/**
 * The claim → process → settle loops shared by the outbox dispatcher and the deferred inbox.
 * Up to `concurrency` loops run at once. A trigger with no loop running claims at once. A trigger
 * while loops are busy with their batches makes the first of them to finish claim again, with
 * everything committed meanwhile; if none has finished within `besideBusyLoopsAfterMs` and fewer
 * than `concurrency` run, a loop of its own claims beside them, so a slow send holds up other
 * messages only that long. Each claim costs the database and the dispatcher the same whatever its
 * size, so under a steady stream this takes a few large claims instead of many small ones. A loop
 * that claimed a full batch starts another at once, so a backlog is worked with all loops.
 *
 * Every row it holds, from its claim (or hand-off) to the end of its batch, has its lease renewed
 * (`ClaimLeases`): a row waiting behind others in its batch, or one whose send or handler takes
 * longer than the lease, is never taken over while this process lives.
 */
export class ClaimWorker<T extends AttemptedClaim> {
  private readonly inFlight = new Set<T[]>();
  /** Rows claimed elsewhere and handed to this worker (see `handOff`), not yet taken by a loop. */
  private handedOff: T[] = [];
  private readonly loops = new Set<Promise<void>>();
  /** A trigger that no loop has looked for since: the next loop to finish a cycle claims again. */
  private lookAgain = false;
  private stopping = false;
  /** Claim statements sent and not yet answered. */
  private claimsInFlight = 0;
  /** Rows claimed since start-up, so that drain() can say whether it found any. */
  private claimedRows = 0;
  /** Set while a trigger waits for a busy loop to finish before a loop of its own claims. */
  private besideTimer?: NodeJS.Timeout;

  private readonly leases: ClaimLeases<T>;

  constructor(private readonly spec: ClaimWorkerSpec<T>) {
    this.leases = new ClaimLeases<T>(spec);
  }

  /**
   * Claims now, or as soon as the claim in flight returns, or makes a busy loop claim again when
   * it is done. Never throws.
   */
  trigger(): void {
    if (this.stopping) return;
    this.lookAgain = true;
    // A second claim beside one in flight finds the rows that one is taking locked or taken: under
    // a stream of commits, most such claims came back empty or with one row. The next claim
    // starts once the one in flight returns (see claimCounted), and takes everything committed meanwhile.
    if (this.claimsInFlight === 0) this.claimSoon();
  }

  /**
   * Takes rows already claimed elsewhere (inserted claimed by a transaction of this process that
   * has committed) to process like a claimed batch, without a claim statement. Loops take them
   * before claiming, up to a batch at a time; a loop of their own starts as a trigger's would.
   * After `stop()` they are given back at once. Never throws.
   */
  handOff(rows: T[]): void {
    if (this.stopping) {
      void this.releaseLeftovers(rows);
      return;
    }
    for (const row of rows) this.handedOff.push(row);
    // Inserted claimed some time ago, by a transaction: unconfirmed until the next renewal.
    this.leases.hold(rows, -Infinity);
    this.startSoon(false);
  }

  /** Handed-off rows no loop has taken yet. */
  get handedOffCount(): number {
    return this.handedOff.length;
  }

  /**
   * Whether `row`, of a batch being processed, is still claimed by this process: for a row about
   * to start an effect that its settle cannot fence (a handler's call out). Asks the database
   * only when the row's claim was not confirmed within half a lease. False once it was taken
   * over (it is then no longer renewed) or when the database cannot say.
   */
  stillHeld(row: T): Promise<boolean> {
    return this.leases.stillHeld(row);
  }

  /** Stops renewing rows settled before their batch ends. */
  settled(rows: readonly T[]): void {
    this.leases.drop(rows);
  }

  /** Runs until no due row is left; resolves, when done, with how many rows were claimed meanwhile. */
  async drain(): Promise<number> {
    const before = this.claimedRows;
    this.trigger();
    while (this.loops.size > 0) await Promise.all([...this.loops]);
    return this.claimedRows - before;
  }

  /**
   * Stops claiming, lets in-flight batches finish (bounded by `processTimeoutMs` + grace), then
   * gives back whatever is still claimed so another instance can take it at once.
   */
  async stop(): Promise<void> {
    this.stopping = true;
    clearTimeout(this.besideTimer);
    if (this.loops.size > 0) {
      // The grace timer is cancelled once the loops end, or it would hold the process open.
      const graceOver = new AbortController();
      const grace = this.spec.processTimeoutMs + SHUTDOWN_GRACE_MS;
      await Promise.race([Promise.all([...this.loops]), sleep(grace, undefined, { signal: graceOver.signal }).catch(() => undefined)]);
      graceOver.abort();
    }
    this.leases.stop();
    await this.releaseLeftovers([...[...this.inFlight].flat(), ...this.handedOff.splice(0)]);
  }

  /** Gives back rows this worker holds and will not process, so another instance can take them at once. */
  private async releaseLeftovers(rows: T[]): Promise<void> {
    if (rows.length === 0) return;
    try {
      const released = await this.spec.table.release(this.spec.dataSource, rows);
      this.spec.logger.warn(`Released ${released} claimed ${this.spec.table.label} row(s) at shutdown`);
    } catch (error) {
      this.spec.logger.warn(
        `Could not give back ${rows.length} claimed ${this.spec.table.label} row(s) at shutdown; the stuck detector will reclaim them: ${describeError(error, 500)}`,
      );
    }
  }

  /** Claims now when no loop runs; otherwise lets a busy loop take the trigger, or claims beside them if none soon does. */
  private claimSoon(): void {
    this.startSoon(true);
  }

  /**
   * Starts a loop now when none runs; otherwise lets a busy loop take the work when it is done, or
   * starts one beside them if none soon is. `claim`: the loop claims (a trigger), rather than
   * only taking handed-off rows.
   */
  private startSoon(claim: boolean): void {
    if (this.stopping) return;
    if (this.loops.size === 0) return this.spawn(claim);
    if (this.besideTimer) return;
    this.besideTimer = setTimeout(() => {
      this.besideTimer = undefined;
      // A loop that finished its batch since has taken the work (or is claiming it).
      const claimDue = this.lookAgain && this.claimsInFlight === 0;
      if (claimDue || this.handedOff.length > 0) this.spawn(claimDue);
    }, this.spec.besideBusyLoopsAfterMs ?? BESIDE_BUSY_LOOPS_AFTER_MS);
    this.besideTimer.unref();
  }

  /** Starts one more loop, unless all are running; `claim`: it claims at least once. */
  private spawn(claim = true): void {
    if (this.stopping || this.loops.size >= this.spec.concurrency) return;
    const loop = this.loop(claim).finally(() => {
      this.loops.delete(loop);
      // A trigger or a hand-off that came as the last loop ended must not be lost.
      if (this.loops.size === 0 && (this.lookAgain || this.handedOff.length > 0)) this.spawn(this.lookAgain);
    });
    this.loops.add(loop);
  }

  private async loop(claimFirst: boolean): Promise<void> {
    let claim = claimFirst;
    try {
      while (!this.stopping) {
        // Handed-off rows first: they are claimed already and cost no statement to take.
        const handedOff = this.takeHandedOff();
        if (handedOff.length > 0) {
          await this.processClaimed(handedOff);
          continue;
        }
        // Nothing asked this loop to claim: no trigger since, and its last claim was short.
        if (!claim && !(this.lookAgain && this.claimsInFlight === 0)) return;
        // Not ready: nothing is claimed, and the trigger is spent (the owner triggers again when ready).
        this.lookAgain = false;
        if (this.spec.isReady && !this.spec.isReady()) return;
        // A full batch: more may be due at once.
        claim = (await this.claimAndProcess()) === this.spec.batchSize;
      }
    } catch (error) {
      // The database is unreachable or failing: polling tries again; claimed rows are reclaimed.
      this.spec.logger.error(`Processing ${this.spec.table.label} rows failed: ${describeError(error, 500)}`);
    }
  }

  /** One claim → process cycle; returns how many rows it claimed. */
  private async claimAndProcess(): Promise<number> {
    // Before the statement is sent: the database sets `claimed_at` no earlier.
    const claimedAt = performance.now();
    const batch = await this.claim(randomUUID());
    if (batch.length === 0) return 0;
    if (batch.length === this.spec.batchSize) this.spawn();
    await this.processClaimed(batch, claimedAt);
    return batch.length;
  }

  /** Up to a batch of the handed-off rows, oldest first. */
  private takeHandedOff(): T[] {
    if (this.handedOff.length <= this.spec.batchSize) return this.handedOff.splice(0);
    const batch = this.handedOff.splice(0, this.spec.batchSize);
    // More than a batch waits: another loop can take it meanwhile. Once this loop is counted (it
    // may be starting, not yet in `loops`), so that no more than `concurrency` run.
    queueMicrotask(() => this.spawn(false));
    return batch;
  }

  private async processClaimed(batch: T[], claimedAt?: number): Promise<void> {
    this.claimedRows += batch.length;
    this.inFlight.add(batch);
    // Handed-off rows are held since their hand-off.
    if (claimedAt !== undefined) this.leases.hold(batch, claimedAt);
    try {
      await this.spec.process(batch);
      // Settling an ordered row may have made the next row of its key claimable: look again.
      if (batch.some((row) => row.orderingKey !== null)) this.lookAgain = true;
    } finally {
      this.inFlight.delete(batch);
      this.leases.drop(batch);
    }
  }

  /**
   * A claim whose statement failed may still have committed (the connection died after the
   * commit, before the reply): whatever it took is given back at once, instead of staying
   * PROCESSING under a token nobody knows until the stuck detector reclaims it.
   */
  private async claim(claimToken: string): Promise<T[]> {
    try {
      return await this.claimCounted(claimToken);
    } catch (error) {
      const released = await persistently(() => this.spec.table.releaseClaim(this.spec.dataSource, claimToken)).catch(() => 0);
      if (released > 0) this.spec.logger.warn(`Gave back ${released} ${this.spec.table.label} row(s) of a claim whose reply was lost`);
      throw error;
    }
  }

  private async claimCounted(claimToken: string): Promise<T[]> {
    this.claimsInFlight++;
    try {
      return await this.spec.claim(this.spec.batchSize, claimToken);
    } finally {
      // A trigger that came while this claim was in flight: claimed once this loop's batch is done, or beside it.
      if (--this.claimsInFlight === 0 && this.lookAgain) this.claimSoon();
    }
  }
}
