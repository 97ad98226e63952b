import { BeforeApplicationShutdown, Inject, Injectable, Logger, OnApplicationBootstrap, OnModuleInit, Optional } from '@nestjs/common';
import { SchedulerRegistry } from '@nestjs/schedule';
import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { DataSource } from 'typeorm';
import { ClaimedMessage, OutboxDialect } from '../dialects/outbox-dialect';
import { OutboxError } from '../errors';
import { OUTBOX_DATA_SOURCE, OUTBOX_DIALECT, OUTBOX_INSTANCE_ID, OUTBOX_OPTIONS, OUTBOX_TRANSPORT } from '../outbox.constants';
import { OutboxModuleOptions } from '../options/outbox-module-options';
import { describeError } from '../retry/error-classifier';
import { OutboxTransport } from '../transport/outbox-transport';
import { OutboxWakeup } from './outbox-wakeup';
import { failurePolicyFrom, FailurePolicy, settleBatch } from './settlement';

const POLL_INTERVAL_NAME = 'nestjs-outbox:dispatch';
const SHUTDOWN_GRACE_MS = 5_000;

/** Counters since start-up, for monitoring and tests. */
export interface DispatcherStats {
  claimed: number;
  sent: number;
  failed: number;
  /** Settles that found their claim taken over (fenced off by the claim token). */
  fenced: number;
}

/**
 * Claims due rows in short transactions, sends them outside any transaction, and settles each
 * by its claim token. Runs never overlap: a wake-up during a run makes the run go round again
 * instead of starting another. `dispatchConcurrency` claim → send → settle loops share a run,
 * so the broker always has confirms in flight.
 */
@Injectable()
export class OutboxDispatcher implements OnModuleInit, OnApplicationBootstrap, BeforeApplicationShutdown {
  private readonly logger = new Logger(OutboxDispatcher.name);
  private readonly inFlight = new Map<string, ClaimedMessage[]>();
  private readonly failurePolicy: FailurePolicy;
  private run?: Promise<void>;
  private runAgain = false;
  private stopping = false;
  private unsubscribe?: () => void;
  readonly stats: DispatcherStats = { claimed: 0, sent: 0, failed: 0, fenced: 0 };

  constructor(
    @Inject(OUTBOX_DATA_SOURCE) private readonly dataSource: DataSource,
    @Inject(OUTBOX_DIALECT) private readonly dialect: OutboxDialect,
    @Inject(OUTBOX_TRANSPORT) private readonly transport: OutboxTransport,
    @Inject(OUTBOX_OPTIONS) private readonly options: OutboxModuleOptions,
    @Inject(OUTBOX_INSTANCE_ID) private readonly instanceId: string,
    private readonly wakeup: OutboxWakeup,
    @Optional() private readonly scheduler?: SchedulerRegistry,
  ) {
    this.failurePolicy = failurePolicyFrom(options);
  }

  onModuleInit(): void {
    if (this.options.dispatcherEnabled && !this.scheduler) {
      throw new OutboxError('OutboxModule dispatches on @nestjs/schedule: add ScheduleModule.forRoot() to your application imports (or set dispatcherEnabled: false)');
    }
  }

  async onApplicationBootstrap(): Promise<void> {
    if (!this.options.dispatcherEnabled || !this.scheduler) return;
    this.scheduler.addInterval(POLL_INTERVAL_NAME, setInterval(() => this.trigger(), this.options.pollIntervalMs));
    this.unsubscribe = this.wakeup.subscribe(() => this.trigger());
    await this.wakeup.startListening();
    this.trigger();
  }

  /** Starts a run now, or makes the current run go round once more. Never throws. */
  trigger(): void {
    if (this.stopping) return;
    if (this.run) {
      this.runAgain = true;
      return;
    }
    this.run = this.runUntilIdle().finally(() => (this.run = undefined));
  }

  /** Runs until no due row is left; resolves when done. For tests and manual draining. */
  async drain(): Promise<void> {
    this.trigger();
    while (this.run) await this.run;
  }

  async beforeApplicationShutdown(): Promise<void> {
    this.stopping = true;
    this.unsubscribe?.();
    if (this.scheduler?.doesExist('interval', POLL_INTERVAL_NAME)) this.scheduler.deleteInterval(POLL_INTERVAL_NAME);
    // In-flight sends finish (each bounded by sendTimeoutMs) and settle; whatever is still
    // claimed after that is given back so another instance can send it at once.
    const grace = this.options.sendTimeoutMs + SHUTDOWN_GRACE_MS;
    if (this.run) {
      // The grace timer is cancelled once the run ends, or it would hold the process open.
      const graceOver = new AbortController();
      await Promise.race([this.run, sleep(grace, undefined, { signal: graceOver.signal }).catch(() => undefined)]);
      graceOver.abort();
    }
    const leftovers = [...this.inFlight.values()].flat();
    if (leftovers.length > 0) {
      const released = await this.dialect.release(this.dataSource, leftovers).catch(() => 0);
      this.logger.warn(`Released ${released} claimed message(s) at shutdown`);
    }
  }

  private async runUntilIdle(): Promise<void> {
    do {
      this.runAgain = false;
      const loops = Array.from({ length: this.options.dispatchConcurrency }, () => this.dispatchLoop());
      await Promise.all(loops);
    } while (this.runAgain && !this.stopping);
  }

  private async dispatchLoop(): Promise<void> {
    try {
      while (!this.stopping && (await this.dispatchBatch()) === this.options.batchSize);
    } catch (error) {
      // The database is unreachable or failing: polling tries again; claimed rows are reclaimed.
      this.logger.error(`Dispatch failed: ${describeError(error, 500)}`);
    }
  }

  /** One claim → send → settle cycle; returns how many rows it claimed. */
  private async dispatchBatch(): Promise<number> {
    const claimToken = randomUUID();
    const claimed = await this.dialect.claim(this.dataSource, this.options.batchSize, claimToken, this.instanceId);
    if (claimed.length === 0) return 0;
    this.inFlight.set(claimToken, claimed);
    try {
      const results = await Promise.allSettled(claimed.map((message) => this.transport.send(message)));
      const { done, failed } = settleBatch(claimed, results, this.failurePolicy);
      const [settledDone, settledFailed] = await Promise.all([
        this.dialect.settleDone(this.dataSource, done),
        this.dialect.settleFailed(this.dataSource, failed),
      ]);
      this.record(claimed.length, done.length, failed, settledDone + settledFailed);
      return claimed.length;
    } finally {
      this.inFlight.delete(claimToken);
    }
  }

  private record(claimed: number, sent: number, failed: { error: string }[], settled: number): void {
    this.stats.claimed += claimed;
    this.stats.sent += sent;
    this.stats.failed += failed.length;
    this.stats.fenced += claimed - settled;
    if (failed.length > 0) {
      this.logger.warn(`${failed.length} of ${claimed} message(s) not sent; first error: ${failed[0].error}`);
    }
    if (settled < claimed) {
      this.logger.warn(`${claimed - settled} claim(s) had been taken over before settling; their outcome was not recorded`);
    }
  }
}
