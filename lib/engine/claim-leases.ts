import { Logger } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { describeError } from '../retry/error-classifier';
import { ClaimRef, StateTable } from './state-table';

/** What a worker's leases need: where its claims live, and how long a lease is. */
export interface ClaimLeasesSpec {
  dataSource: DataSource;
  table: StateTable;
  /** The lease (`stuckReclaimAfterMs`): a claim not renewed for this long may be taken over. */
  leaseMs: number;
  /** How often held claims are renewed; well within the lease, so one late renewal is not a reclaim. */
  renewIntervalMs: number;
  logger: Logger;
}

/**
 * The heartbeat of one claim worker: while it holds claims (rows claimed or handed off and not
 * yet settled), it renews their `claimed_at` by the database's clock every `renewIntervalMs`,
 * one fenced statement per claim token, so the stuck detector takes over only the claims of a
 * process that stopped renewing (a dead one), after one lease, and never those of a live one,
 * however long a row waits in its batch or its send or handler takes.
 *
 * It also knows, for each row, when its claim was last confirmed (claimed, or renewed as a
 * whole token's rows), by this process's monotonic clock, read before the statement was sent:
 * the database set `claimed_at` no earlier, so the row cannot have expired before that time plus
 * the lease. `stillHeld` answers from that without a statement while half a lease has not passed.
 */
export class ClaimLeases<T extends ClaimRef> {
  /** Rows held, with the monotonic time their claim was last confirmed (-Infinity: never confirmed by this process). */
  private readonly held = new Map<T, number>();
  private timer?: NodeJS.Timeout;
  private renewing?: Promise<void>;

  constructor(private readonly spec: ClaimLeasesSpec) {}

  /** Starts holding rows claimed by a statement sent at `confirmedAt` (monotonic ms), or -Infinity when unknown. */
  hold(rows: readonly T[], confirmedAt: number): void {
    for (const row of rows) this.held.set(row, confirmedAt);
    if (this.held.size > 0 && !this.timer) {
      this.timer = setInterval(() => void this.renew(), this.spec.renewIntervalMs);
      // The heartbeat alone must not keep the host process alive.
      this.timer.unref();
    }
  }

  /** Stops renewing rows: settled, given back, or found taken over. */
  drop(rows: readonly T[]): void {
    for (const row of rows) this.held.delete(row);
    if (this.held.size === 0) this.stopTimer();
  }

  /** How many rows are held. */
  get size(): number {
    return this.held.size;
  }

  /**
   * Whether `row` is still claimed by this process: from its last confirmation while it is
   * recent, else by renewing its claim alone (fenced by its token). A row found taken over is
   * dropped. A failing database counts as not held: the row is left to its new claimant, or to
   * the stuck detector.
   */
  async stillHeld(row: T): Promise<boolean> {
    const confirmedAt = this.held.get(row);
    if (confirmedAt === undefined) return false;
    if (performance.now() - confirmedAt < this.spec.leaseMs / 2) return true;
    const asked = performance.now();
    let renewed: number;
    try {
      renewed = await this.spec.table.renew(this.spec.dataSource, [row]);
    } catch (error) {
      this.spec.logger.warn(`Could not renew the claim on a ${this.spec.table.label} row before running it: ${describeError(error, 300)}`);
      return false;
    }
    if (renewed === 0) {
      this.drop([row]);
      return false;
    }
    if (this.held.has(row)) this.held.set(row, asked);
    return true;
  }

  /** Renews every held claim now (the heartbeat's tick); one renewal at a time. Never throws. */
  renew(): Promise<void> {
    this.renewing ??= this.renewAll().finally(() => (this.renewing = undefined));
    return this.renewing;
  }

  /** Stops the heartbeat; rows still held are the owner's to give back. */
  stop(): void {
    this.stopTimer();
  }

  private async renewAll(): Promise<void> {
    const byToken = new Map<string, T[]>();
    for (const row of this.held.keys()) {
      const rows = byToken.get(row.claimToken);
      if (rows) rows.push(row);
      else byToken.set(row.claimToken, [row]);
    }
    for (const rows of byToken.values()) {
      const asked = performance.now();
      try {
        const renewed = await this.spec.table.renew(this.spec.dataSource, rows);
        // Every row renewed: confirmed. Fewer: some were settled meanwhile or taken over; which
        // ones is left to `stillHeld`, so none is confirmed on the strength of another's renewal.
        if (renewed === rows.length) for (const row of rows) if (this.held.has(row)) this.held.set(row, asked);
      } catch (error) {
        // The next tick tries again; the lease has room for a missed renewal.
        this.spec.logger.warn(`Could not renew ${rows.length} claimed ${this.spec.table.label} row(s): ${describeError(error, 300)}`);
      }
    }
  }

  private stopTimer(): void {
    clearInterval(this.timer);
    this.timer = undefined;
  }
}
