import { Inject, Injectable, Optional } from '@nestjs/common';
import { HealthIndicatorResult, HealthIndicatorService } from '@nestjs/terminus';
import { OutboxAdmin } from '../admin/outbox-admin.service';
import { OutboxStats } from '../admin/outbox-stats';
import { OUTBOX_TRANSPORTS } from '../outbox.constants';
import type { OutboxTransports } from '../transport/outbox-transports';
import { healthFigures, OutboxHealthThresholds, thresholdProblems } from './health-problems';

/** How long `isHealthy` waits for the database by default. */
const DEFAULT_TIMEOUT_MS = 1_000;

/** Thresholds, and how long to wait for the database's answer. */
export interface OutboxHealthOptions extends OutboxHealthThresholds {
  /** The stats statements must answer within this many milliseconds (default 1000), else the check is down. */
  timeoutMs?: number;
  /**
   * The transports whose unavailability makes the check down (default: every configured one).
   * E.g. `['default']` to keep a partner's HTTP outage, which its lane waits out, from failing
   * the service's readiness; every transport's state is in the details either way.
   */
  transports?: string[];
}

/**
 * A health indicator for `@nestjs/terminus` 11. Down when the database does not answer the
 * stats statements in time, when a transport says it is unavailable (every transport, or those
 * `transports` names), or when the lag or the MANUAL_REQUIRED count passes a threshold the caller
 * sets; the details carry the figures.
 *
 * Provide it in a module that imports `TerminusModule`, next to `OutboxModule`:
 * `health.check([() => outboxHealth.isHealthy('outbox', { maxLagMs: 60_000 })])`.
 */
@Injectable()
export class OutboxHealthIndicator {
  constructor(
    private readonly health: HealthIndicatorService,
    private readonly admin: OutboxAdmin,
    @Optional() @Inject(OUTBOX_TRANSPORTS) private readonly transports?: OutboxTransports,
  ) {}

  async isHealthy(key = 'outbox', options: OutboxHealthOptions = {}): Promise<HealthIndicatorResult> {
    const indicator = this.health.check(key);
    const states = this.transportStates();
    const counted = Object.keys(states).filter((name) => !options.transports || options.transports.includes(name));
    const down = counted.filter((name) => states[name] === 'unavailable');
    const transport = down.length > 0 ? 'unavailable' : 'available';
    // With one transport the details stay as they were; with several, each is named.
    const transportDetails: { transport: string; transports?: Record<string, string> } = Object.keys(states).length > 1 ? { transport, transports: states } : { transport };
    let stats: OutboxStats;
    try {
      stats = await withTimeout(this.admin.stats(), options.timeoutMs ?? DEFAULT_TIMEOUT_MS);
    } catch (error) {
      return indicator.down({ database: 'unreachable', error: error instanceof Error ? error.message : String(error), ...transportDetails });
    }
    const figures = healthFigures(stats);
    const problems = thresholdProblems(figures, options);
    if (Object.keys(states).length > 1) problems.unshift(...down.map((name) => `the transport ${JSON.stringify(name)} is unavailable`));
    else if (down.length > 0) problems.unshift('the transport is unavailable');
    const details = { database: 'reachable', ...transportDetails, ...figures };
    return problems.length > 0 ? indicator.down({ ...details, problems }) : indicator.up(details);
  }

  /** Each configured transport, available or not; one without `isAvailable` is taken to be available, as its lane takes it. */
  private transportStates(): Record<string, 'available' | 'unavailable'> {
    const lanes = this.transports?.lanes() ?? [];
    return Object.fromEntries(lanes.map(({ name, transport }) => [name, transport.isAvailable?.() === false ? 'unavailable' : 'available']));
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
