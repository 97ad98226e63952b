import { BeforeApplicationShutdown, Inject, Injectable, Logger, OnApplicationBootstrap, Optional } from '@nestjs/common';
import { SchedulerRegistry } from '@nestjs/schedule';
import { DataSource } from 'typeorm';
import { InboxDialect } from '../dialects/inbox-dialect';
import { OutboxTransports } from '../transport/outbox-transports';
import { OutboxDialect } from '../dialects/outbox-dialect';
import { StateTable } from '../engine/state-table';
import { expiredClaimError } from './expired-claim-error';
import { InboxWakeup } from '../inbox/inbox-wakeup';
import { INBOX_DIALECT, OUTBOX_WORKER_DATA_SOURCE, OUTBOX_DIALECT, OUTBOX_OPTIONS, OUTBOX_TRANSPORTS } from '../naming/injection-tokens';
import { OutboxModuleOptions } from '../options/outbox-module-options';
import { OutboxWakeup } from '../outbox/outbox-wakeup';
import { failedSettlement, failurePolicyFrom, FailurePolicy } from '../engine/settlement';
import { describeError } from '../retry/error-classifier';
import { OutboxIdentity } from '../naming/outbox-identity';

const CHECK_INTERVAL_NAME = 'nestjs-outbox:stuck-detector';
const RECLAIM_PAGE = 500;
/**
 * How often the scheduled check also counts and logs the backlog and stale claims. Reclaiming
 * runs at every check (every few seconds, so a dead instance's work comes back soon); counting a
 * large backlog and logging it that often would cost a scan and a log line every few seconds.
 */
const REPORT_INTERVAL_MS = 30_000;

/** What one check found and did, summed over the outbox and inbox tables. */
export interface StuckCheckReport {
  /** Messages due and waiting to be claimed (delayed ones and retries in backoff are not). */
  backlog: number;
  /** PROCESSING rows not renewed for `stuckWarnAfterMs`, reclaimed or not. */
  staleProcessing: number;
  /** PROCESSING rows whose lease ran out (not renewed for `stuckReclaimAfterMs`), reclaimed as a failed attempt. */
  reclaimed: number;
  /**
   * Outbox messages waiting for a transport this process does not configure, by its name: sent
   * once a process that has it dispatches (a rolling deploy), never by this one.
   */
  unconfiguredTransports: Record<string, number>;
}

/**
 * Finds claims whose claimant died: live claimants renew their claims (`ClaimLeases`), so a
 * PROCESSING row not renewed for `stuckWarnAfterMs` is warned about, and one not renewed for
 * `stuckReclaimAfterMs` (the lease) is reclaimed as a failed attempt (attempts + 1, new
 * backoff, token cleared; MANUAL_REQUIRED at the limit), fenced by the old token so a claimant
 * that was only slow and settles meanwhile wins. Also reports the backlog, and warns about outbox
 * messages published for a transport this process does not configure.
 */
@Injectable()
export class StuckDetector implements OnApplicationBootstrap, BeforeApplicationShutdown {
  private readonly logger = new Logger(this.identity.logContext(StuckDetector.name));
  private readonly failurePolicy: FailurePolicy;
  private readonly tables: { table: StateTable; wake: () => void }[];
  private checking?: Promise<StuckCheckReport>;
  private lastReportAt = -Infinity;

  /**
   * Nest creates it: inject it rather than constructing it.
   * @internal
   */
  constructor(
    @Inject(OUTBOX_WORKER_DATA_SOURCE) private readonly dataSource: DataSource,
    @Inject(OUTBOX_DIALECT) private readonly outbox: OutboxDialect,
    @Inject(OUTBOX_TRANSPORTS) private readonly transports: OutboxTransports,
    @Inject(INBOX_DIALECT) inbox: InboxDialect,
    @Inject(OUTBOX_OPTIONS) private readonly options: OutboxModuleOptions,
    outboxWakeup: OutboxWakeup,
    inboxWakeup: InboxWakeup,
    private readonly identity: OutboxIdentity,
    @Optional() private readonly scheduler?: SchedulerRegistry,
  ) {
    this.failurePolicy = failurePolicyFrom(options);
    this.tables = [
      { table: outbox, wake: () => outboxWakeup.wake() },
      { table: inbox, wake: () => inboxWakeup.wake() },
    ];
  }

  /** Nest lifecycle hook: schedules the check every `stuckCheckIntervalMs` where `dispatcherEnabled`. */
  onApplicationBootstrap(): void {
    // The dispatcher reports a missing ScheduleModule; without it there is nothing to reclaim for.
    if (!this.options.dispatcherEnabled || !this.scheduler) return;
    const timer = setInterval(
      () => void this.scheduledCheck().catch((error) => this.logger.error(`Stuck check failed: ${describeError(error, 500)}`)),
      this.options.stuckCheckIntervalMs,
    );
    this.scheduler.addInterval(this.identity.scheduleName(CHECK_INTERVAL_NAME), timer);
  }

  /** Nest lifecycle hook: stops the scheduled check, and waits for one in progress. */
  async beforeApplicationShutdown(): Promise<void> {
    const interval = this.identity.scheduleName(CHECK_INTERVAL_NAME);
    if (this.scheduler?.doesExist('interval', interval)) this.scheduler.deleteInterval(interval);
    // Its statements must be answered before the pools close, or it fails with "Connection is
    // not established" in the log of a clean shutdown (its own error is logged where it runs).
    await this.checking?.catch(() => undefined);
  }

  /** Runs one check (never two at once), counting and reporting as well as reclaiming, and returns what it found. */
  check(): Promise<StuckCheckReport> {
    return this.runOnce(true);
  }

  /** The timer's check: reclaims every time, counts and reports every `REPORT_INTERVAL_MS`. */
  private scheduledCheck(): Promise<StuckCheckReport> {
    return this.runOnce(performance.now() - this.lastReportAt >= REPORT_INTERVAL_MS);
  }

  private runOnce(withReport: boolean): Promise<StuckCheckReport> {
    this.checking ??= this.runCheck(withReport).finally(() => (this.checking = undefined));
    return this.checking;
  }

  private async runCheck(withReport: boolean): Promise<StuckCheckReport> {
    if (withReport) this.lastReportAt = performance.now();
    const report: StuckCheckReport = {
      backlog: 0,
      staleProcessing: 0,
      reclaimed: 0,
      unconfiguredTransports: withReport ? await this.unconfiguredTransports() : {},
    };
    for (const { table, wake } of this.tables) {
      const counts = withReport ? await table.healthCounts(this.dataSource, this.options.stuckWarnAfterMs) : { backlog: 0, staleProcessing: 0 };
      if (counts.staleProcessing > 0) {
        this.logger.warn(
          `${counts.staleProcessing} ${table.label} message(s) PROCESSING without a lease renewal for more than ${this.options.stuckWarnAfterMs} ms`,
        );
      }
      if (counts.backlog > 0) this.logger.log(`${table.label} backlog: ${counts.backlog} message(s) due and waiting`);
      const reclaimed = await this.reclaimExpired(table);
      if (reclaimed > 0) {
        this.logger.warn(`Reclaimed ${reclaimed} ${table.label} message(s) whose claim expired after ${this.options.stuckReclaimAfterMs} ms`);
        wake();
      }
      report.backlog += counts.backlog;
      report.staleProcessing += counts.staleProcessing;
      report.reclaimed += reclaimed;
    }
    return report;
  }

  /** Claimable outbox rows per transport that no lane of this process claims, with a warning for each. */
  private async unconfiguredTransports(): Promise<Record<string, number>> {
    const configured = new Set(this.transports.names());
    const waiting = Object.entries(await this.outbox.claimableByTransport(this.dataSource)).filter(([name]) => !configured.has(name));
    for (const [name, count] of waiting) {
      this.logger.warn(
        `${count} outbox message(s) wait for transport ${JSON.stringify(name)}, which this process does not configure (transports: ${[...configured].join(', ')}); a process that has it sends them`,
      );
    }
    return Object.fromEntries(waiting);
  }

  private async reclaimExpired(table: StateTable): Promise<number> {
    let reclaimed = 0;
    for (;;) {
      const expired = await table.findExpiredClaims(this.dataSource, this.options.stuckReclaimAfterMs, RECLAIM_PAGE);
      if (expired.length === 0) return reclaimed;
      const settlements = expired.map((claim) => failedSettlement(claim, expiredClaimError(claim, this.options.stuckReclaimAfterMs), this.failurePolicy));
      const changed = await table.settleFailed(this.dataSource, settlements);
      reclaimed += changed;
      if (expired.length < RECLAIM_PAGE) return reclaimed;
    }
  }
}
