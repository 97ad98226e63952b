import { Logger } from '@nestjs/common';
import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { DataSource } from 'typeorm';
import { describeError } from '../retry/error-classifier';
import { AttemptedClaim, StateTable } from './state-table';

const SHUTDOWN_GRACE_MS = 5_000;

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
  logger: Logger;
}

/**
 * The claim → process → settle loop shared by the outbox dispatcher and the deferred inbox.
 * Runs never overlap: a trigger during a run makes the run go round once more instead of
 * starting another. `concurrency` loops share a run, so work is always in flight.
 */
export class ClaimWorker<T extends AttemptedClaim> {
  private readonly inFlight = new Map<string, T[]>();
  private run?: Promise<void>;
  private runAgain = false;
  private stopping = false;

  constructor(private readonly spec: ClaimWorkerSpec<T>) {}

  /** Starts a run now, or makes the current run go round once more. Never throws. */
  trigger(): void {
    if (this.stopping) return;
    if (this.run) {
      this.runAgain = true;
      return;
    }
    this.run = this.runUntilIdle().finally(() => {
      this.run = undefined;
      // A trigger that came after the run's last look, but before it was cleared, must not be lost.
      if (this.runAgain) this.trigger();
    });
  }

  /** Runs until no due row is left; resolves when done. */
  async drain(): Promise<void> {
    this.trigger();
    while (this.run) await this.run;
  }

  /**
   * Stops claiming, lets in-flight batches finish (bounded by `processTimeoutMs` + grace), then
   * gives back whatever is still claimed so another instance can take it at once.
   */
  async stop(): Promise<void> {
    this.stopping = true;
    if (this.run) {
      // The grace timer is cancelled once the run ends, or it would hold the process open.
      const graceOver = new AbortController();
      const grace = this.spec.processTimeoutMs + SHUTDOWN_GRACE_MS;
      await Promise.race([this.run, sleep(grace, undefined, { signal: graceOver.signal }).catch(() => undefined)]);
      graceOver.abort();
    }
    const leftovers = [...this.inFlight.values()].flat();
    if (leftovers.length > 0) {
      const released = await this.spec.table.release(this.spec.dataSource, leftovers).catch(() => 0);
      this.spec.logger.warn(`Released ${released} claimed ${this.spec.table.label} row(s) at shutdown`);
    }
  }

  private async runUntilIdle(): Promise<void> {
    do {
      this.runAgain = false;
      await Promise.all(Array.from({ length: this.spec.concurrency }, () => this.loop()));
    } while (this.runAgain && !this.stopping);
  }

  private async loop(): Promise<void> {
    try {
      while (!this.stopping && (await this.claimAndProcess()) === this.spec.batchSize);
    } catch (error) {
      // The database is unreachable or failing: polling tries again; claimed rows are reclaimed.
      this.spec.logger.error(`Processing ${this.spec.table.label} rows failed: ${describeError(error, 500)}`);
    }
  }

  /** One claim → process cycle; returns how many rows it claimed. */
  private async claimAndProcess(): Promise<number> {
    const claimToken = randomUUID();
    const batch = await this.spec.claim(this.spec.batchSize, claimToken);
    if (batch.length === 0) return 0;
    this.inFlight.set(claimToken, batch);
    try {
      await this.spec.process(batch);
      // Settling an ordered row may have made the next row of its key claimable: look again.
      if (batch.some((row) => row.orderingKey !== null)) this.runAgain = true;
      return batch.length;
    } finally {
      this.inFlight.delete(claimToken);
    }
  }
}
