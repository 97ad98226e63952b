import { BeforeApplicationShutdown, Inject, Injectable, OnApplicationBootstrap, OnModuleInit, Optional } from '@nestjs/common';
import { SchedulerRegistry } from '@nestjs/schedule';
import { DataSource } from 'typeorm';
import { OutboxDialect } from '../dialects/outbox-dialect';
import { failurePolicyFrom } from '../engine/settlement';
import { StandbyGate } from '../engine/standby-gate';
import { OutboxError } from '../errors';
import {
  OUTBOX_WORKER_DATA_SOURCE,
  OUTBOX_DIALECT,
  OUTBOX_INSTANCE_ID,
  OUTBOX_OPTIONS,
  OUTBOX_STANDBY_GATE,
  OUTBOX_TRANSPORTS,
} from '../naming/injection-tokens';
import { OutboxModuleOptions } from '../options/outbox-module-options';
import { leaseTimings } from '../options/claim-lease';
import { OutboxTransports } from '../transport/outbox-transports';
import { DispatcherStats, DispatchLane } from './dispatch-lane';
import { OutboxWakeup } from './outbox-wakeup';
import { CommitHandoff } from './commit-handoff';
import { OutboxIdentity } from '../naming/outbox-identity';

export type { DispatcherStats } from './dispatch-lane';

const POLL_INTERVAL_PREFIX = 'nestjs-outbox:dispatch';

/**
 * Sends committed outbox messages: one dispatch lane per configured transport (see
 * `DispatchLane`), each with its own claim loops, batch size, concurrency and polling interval.
 * Every lane is woken after publishing commits, by other instances, and by polling; a lane also
 * when its transport comes back.
 */
@Injectable()
export class OutboxDispatcher implements OnModuleInit, OnApplicationBootstrap, BeforeApplicationShutdown {
  private readonly lanes: DispatchLane[];
  private readonly pollIntervals = new Map<string, number>();
  private readonly unsubscribe: (() => void)[] = [];

  /**
   * Nest creates it: inject it rather than constructing it.
   * @internal
   */
  constructor(
    @Inject(OUTBOX_WORKER_DATA_SOURCE) dataSource: DataSource,
    @Inject(OUTBOX_DIALECT) dialect: OutboxDialect,
    @Inject(OUTBOX_TRANSPORTS) private readonly transports: OutboxTransports,
    @Inject(OUTBOX_OPTIONS) private readonly options: OutboxModuleOptions,
    @Inject(OUTBOX_INSTANCE_ID) instanceId: string,
    private readonly wakeup: OutboxWakeup,
    private readonly handoff: CommitHandoff,
    private readonly identity: OutboxIdentity,
    @Inject(OUTBOX_STANDBY_GATE) standbyGate: StandbyGate | null,
    @Optional() private readonly scheduler?: SchedulerRegistry,
  ) {
    const failurePolicy = failurePolicyFrom(options);
    this.lanes = transports.lanes().map(({ name, transport, spec }) => {
      this.pollIntervals.set(name, spec.pollIntervalMs ?? options.pollIntervalMs);
      return new DispatchLane({
        name,
        transport,
        batchSize: spec.batchSize ?? options.batchSize,
        concurrency: spec.dispatchConcurrency ?? options.dispatchConcurrency,
        sendTimeoutMs: options.sendTimeoutMs,
        ...leaseTimings(options),
        dataSource,
        dialect,
        instanceId,
        failurePolicy,
        identity,
        standbyGate: standbyGate ?? undefined,
      });
    });
  }

  /** Counters since start-up, summed over every lane. */
  get stats(): DispatcherStats {
    const total: DispatcherStats = { claimed: 0, sent: 0, failed: 0, released: 0, fenced: 0 };
    for (const lane of this.lanes) {
      for (const key of Object.keys(total) as (keyof DispatcherStats)[]) total[key] += lane.stats[key];
    }
    return total;
  }

  /** Counters since start-up per transport, by name. */
  laneStats(): Record<string, DispatcherStats> {
    return Object.fromEntries(this.lanes.map((lane) => [lane.name, { ...lane.stats }]));
  }

  /** Nest lifecycle hook: fails the start-up when the dispatcher is enabled without `ScheduleModule`. */
  onModuleInit(): void {
    if (this.options.dispatcherEnabled && !this.scheduler) {
      throw new OutboxError(
        'OutboxModule dispatches on @nestjs/schedule: add ScheduleModule.forRoot() to your application imports (or set dispatcherEnabled: false)',
      );
    }
  }

  /** Nest lifecycle hook: starts every lane's polling and wake-ups where `dispatcherEnabled`. */
  async onApplicationBootstrap(): Promise<void> {
    if (!this.options.dispatcherEnabled || !this.scheduler) return;
    for (const lane of this.lanes) {
      this.scheduler.addInterval(
        this.intervalName(lane.name),
        setInterval(() => lane.resume(), this.pollIntervals.get(lane.name)),
      );
      // A backlog that waited for its transport is sent as soon as it is back, not at the next poll.
      const transport = this.transports.get(lane.name)!;
      if (transport.onAvailable) this.unsubscribe.push(transport.onAvailable(() => lane.resume()));
      lane.startHandoffs();
      this.unsubscribe.push(this.handoff.register(lane.name, lane));
    }
    // A commit in this process wakes only the lanes it wrote rows for: an idle lane would answer
    // every commit with a claim that finds nothing.
    this.unsubscribe.push(this.wakeup.subscribe((transports) => this.trigger(transports)));
    await this.wakeup.startListening();
    this.trigger();
  }

  /**
   * Starts a dispatch run now, or makes a running one go round once more, in the lanes of
   * `transports` (default: every lane). Never throws.
   */
  trigger(transports?: ReadonlySet<string>): void {
    for (const lane of this.lanes) if (!transports || transports.has(lane.name)) lane.trigger();
  }

  /** Dispatches until no due message is left in any lane; resolves with how many were claimed. For tests and manual draining. */
  async drain(): Promise<number> {
    const claimed = await Promise.all(this.lanes.map((lane) => lane.drain()));
    return claimed.reduce((sum, n) => sum + n, 0);
  }

  /** Nest lifecycle hook: stops claiming, lets the sends in flight settle, then releases what is still claimed. */
  async beforeApplicationShutdown(): Promise<void> {
    for (const unsubscribe of this.unsubscribe.splice(0)) unsubscribe();
    for (const lane of this.lanes) {
      const interval = this.intervalName(lane.name);
      if (this.scheduler?.doesExist('interval', interval)) this.scheduler.deleteInterval(interval);
    }
    await Promise.all(this.lanes.map((lane) => lane.stop()));
  }

  /** The scheduler's name of a lane's polling interval, of this outbox. */
  private intervalName(lane: string): string {
    return this.identity.scheduleName(`${POLL_INTERVAL_PREFIX}:${lane}`);
  }
}
