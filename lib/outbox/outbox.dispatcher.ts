import { BeforeApplicationShutdown, Inject, Injectable, Logger, OnApplicationBootstrap, OnModuleInit, Optional } from '@nestjs/common';
import { SchedulerRegistry } from '@nestjs/schedule';
import { DataSource } from 'typeorm';
import { ClaimedMessage, OutboxDialect } from '../dialects/outbox-dialect';
import { ClaimWorker } from '../engine/claim-worker';
import { persistently } from '../engine/persistently';
import { failurePolicyFrom, FailurePolicy, settleBatch } from '../engine/settlement';
import { OutboxError } from '../errors';
import { OUTBOX_WORKER_DATA_SOURCE, OUTBOX_DIALECT, OUTBOX_INSTANCE_ID, OUTBOX_OPTIONS, OUTBOX_TRANSPORT } from '../outbox.constants';
import { OutboxModuleOptions } from '../options/outbox-module-options';
import { OutboxTransport } from '../transport/outbox-transport';
import { OutboxWakeup } from './outbox-wakeup';

const POLL_INTERVAL_NAME = 'nestjs-outbox:dispatch';

/** Counters since start-up, for monitoring and tests. */
export interface DispatcherStats {
  claimed: number;
  sent: number;
  failed: number;
  /** Given back unattempted: the transport could not send them (disconnected, blocked). */
  released: number;
  /** Settles that found their claim taken over (fenced off by the claim token). */
  fenced: number;
}

/**
 * Claims due outbox rows in short transactions, sends them outside any transaction (all of a
 * batch in flight at once, each awaiting its broker confirm), and settles the batch with one
 * fenced statement per outcome. Woken after publishing commits, by other instances, by the
 * transport's return, and by polling.
 *
 * While the transport is unavailable nothing is claimed: an outage leaves messages PENDING or
 * FAILED, cancellable, with their attempts untouched. Messages the transport could not attempt
 * are given back as they were, and claiming pauses until the next poll or the transport's return.
 */
@Injectable()
export class OutboxDispatcher implements OnModuleInit, OnApplicationBootstrap, BeforeApplicationShutdown {
  private readonly logger = new Logger(OutboxDispatcher.name);
  private readonly failurePolicy: FailurePolicy;
  private readonly worker: ClaimWorker<ClaimedMessage>;
  private readonly unsubscribe: (() => void)[] = [];
  /** Set when the transport failed sends as unavailable: no claims until the next poll or its return. */
  private paused = false;
  readonly stats: DispatcherStats = { claimed: 0, sent: 0, failed: 0, released: 0, fenced: 0 };

  constructor(
    @Inject(OUTBOX_WORKER_DATA_SOURCE) private readonly dataSource: DataSource,
    @Inject(OUTBOX_DIALECT) private readonly dialect: OutboxDialect,
    @Inject(OUTBOX_TRANSPORT) private readonly transport: OutboxTransport,
    @Inject(OUTBOX_OPTIONS) private readonly options: OutboxModuleOptions,
    @Inject(OUTBOX_INSTANCE_ID) instanceId: string,
    private readonly wakeup: OutboxWakeup,
    @Optional() private readonly scheduler?: SchedulerRegistry,
  ) {
    this.failurePolicy = failurePolicyFrom(options);
    this.worker = new ClaimWorker({
      dataSource,
      table: dialect,
      batchSize: options.batchSize,
      concurrency: options.dispatchConcurrency,
      claim: (limit, claimToken) => dialect.claim(dataSource, limit, claimToken, instanceId),
      process: (batch) => this.sendAndSettle(batch),
      processTimeoutMs: options.sendTimeoutMs,
      isReady: () => !this.paused && (transport.isAvailable?.() ?? true),
      logger: this.logger,
    });
  }

  onModuleInit(): void {
    if (this.options.dispatcherEnabled && !this.scheduler) {
      throw new OutboxError('OutboxModule dispatches on @nestjs/schedule: add ScheduleModule.forRoot() to your application imports (or set dispatcherEnabled: false)');
    }
  }

  async onApplicationBootstrap(): Promise<void> {
    if (!this.options.dispatcherEnabled || !this.scheduler) return;
    this.scheduler.addInterval(POLL_INTERVAL_NAME, setInterval(() => this.resume(), this.options.pollIntervalMs));
    this.unsubscribe.push(this.wakeup.subscribe(() => this.trigger()));
    // A backlog that waited for the broker is sent as soon as it is back, not at the next poll.
    if (this.transport.onAvailable) this.unsubscribe.push(this.transport.onAvailable(() => this.resume()));
    await this.wakeup.startListening();
    this.trigger();
  }

  /** Starts a dispatch run now, or makes the current run go round once more. Never throws. */
  trigger(): void {
    this.worker.trigger();
  }

  /** Dispatches until no due message is left; resolves with how many were claimed. For tests and manual draining. */
  drain(): Promise<number> {
    return this.worker.drain();
  }

  async beforeApplicationShutdown(): Promise<void> {
    for (const unsubscribe of this.unsubscribe.splice(0)) unsubscribe();
    if (this.scheduler?.doesExist('interval', POLL_INTERVAL_NAME)) this.scheduler.deleteInterval(POLL_INTERVAL_NAME);
    await this.worker.stop();
  }

  /** Lifts a pause and claims: on every poll, and when the transport is back. */
  private resume(): void {
    this.paused = false;
    this.trigger();
  }

  private async sendAndSettle(claimed: ClaimedMessage[]): Promise<void> {
    const results = await Promise.allSettled(claimed.map((message) => this.transport.send(message)));
    const { done, failed, released } = settleBatch(claimed, results, this.failurePolicy);
    if (released.length > 0) this.paused = true;
    // Retried: a lost settle would leave its rows PROCESSING until the stuck detector reclaims them.
    const [settledDone, settledFailed, settledReleased] = await Promise.all([
      persistently(() => this.dialect.settleDone(this.dataSource, done)),
      persistently(() => this.dialect.settleFailed(this.dataSource, failed)),
      persistently(() => this.dialect.release(this.dataSource, released)),
    ]);
    this.record(claimed.length, done.length, failed, released.length, settledDone + settledFailed + settledReleased);
  }

  private record(claimed: number, sent: number, failed: { error: string }[], released: number, settled: number): void {
    this.stats.claimed += claimed;
    this.stats.sent += sent;
    this.stats.failed += failed.length;
    this.stats.released += released;
    this.stats.fenced += claimed - settled;
    if (failed.length > 0) {
      this.logger.warn(`${failed.length} of ${claimed} message(s) not sent; first error: ${failed[0].error}`);
    }
    if (released > 0) {
      this.logger.warn(`${released} of ${claimed} message(s) given back unattempted: the transport is unavailable; claiming resumes when it is back`);
    }
    if (settled < claimed) {
      // Also when a settle committed but its reply was lost, and its retry found nothing left to change.
      this.logger.warn(`${claimed - settled} claim(s) were no longer held when settled (taken over, or settled by a try whose reply was lost)`);
    }
  }
}
