import { Inject, Injectable, Optional } from '@nestjs/common';
import { HealthIndicatorResult, HealthIndicatorService } from '@nestjs/terminus';
import { OutboxAdmin } from '../admin/outbox-admin.service';
import { OutboxStats } from '../admin/outbox-stats';
import { OUTBOX_TRANSPORT } from '../outbox.constants';
import type { OutboxTransport } from '../transport/outbox-transport';
import { healthFigures, OutboxHealthThresholds, thresholdProblems } from './health-problems';

/** How long `isHealthy` waits for the database by default. */
const DEFAULT_TIMEOUT_MS = 1_000;

/** Thresholds, and how long to wait for the database's answer. */
export interface OutboxHealthOptions extends OutboxHealthThresholds {
  /** The stats statements must answer within this many milliseconds (default 1000), else the check is down. */
  timeoutMs?: number;
}

/**
 * A health indicator for `@nestjs/terminus` 11. Down when the database does not answer the
 * stats statements in time, when the transport says it is unavailable, or when the lag or the
 * MANUAL_REQUIRED count passes a threshold the caller sets; the details carry the figures.
 *
 * Provide it in a module that imports `TerminusModule`, next to `OutboxModule`:
 * `health.check([() => outboxHealth.isHealthy('outbox', { maxLagMs: 60_000 })])`.
 */
@Injectable()
export class OutboxHealthIndicator {
  constructor(
    private readonly health: HealthIndicatorService,
    private readonly admin: OutboxAdmin,
    @Optional() @Inject(OUTBOX_TRANSPORT) private readonly transport?: OutboxTransport,
  ) {}

  async isHealthy(key = 'outbox', options: OutboxHealthOptions = {}): Promise<HealthIndicatorResult> {
    const indicator = this.health.check(key);
    // A transport without `isAvailable` is taken to be available, as the dispatcher takes it.
    const transport = this.transport?.isAvailable?.() === false ? 'unavailable' : 'available';
    let stats: OutboxStats;
    try {
      stats = await withTimeout(this.admin.stats(), options.timeoutMs ?? DEFAULT_TIMEOUT_MS);
    } catch (error) {
      return indicator.down({ database: 'unreachable', error: error instanceof Error ? error.message : String(error), transport });
    }
    const figures = healthFigures(stats);
    const problems = thresholdProblems(figures, options);
    if (transport === 'unavailable') problems.unshift('the transport is unavailable');
    const details = { database: 'reachable', transport, ...figures };
    return problems.length > 0 ? indicator.down({ ...details, problems }) : indicator.up(details);
  }
}

/** `work`, or a rejection once `timeoutMs` pass first (the statement itself runs on, unobserved). */
function withTimeout<T>(work: Promise<T>, timeoutMs: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`the database did not answer within ${timeoutMs} ms`)), timeoutMs);
  });
  // A late failure of the abandoned statement must not become an unhandled rejection.
  work.catch(() => undefined);
  return Promise.race([work, timeout]).finally(() => clearTimeout(timer));
}
