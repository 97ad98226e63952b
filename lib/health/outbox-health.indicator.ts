import { Inject, Injectable, Optional } from '@nestjs/common';
import { ModuleRef } from '@nestjs/core';
import { HealthIndicatorResult, HealthIndicatorService } from '@nestjs/terminus';
import { OutboxAdmin } from '../admin/outbox-admin.service';
import { OutboxStats } from '../admin/outbox-stats';
import { INBOX_SUBSCRIPTIONS, OUTBOX_TRANSPORTS } from '../naming/injection-tokens';
import type { InboxSubscriptions } from '../inbox/inbox-subscriptions';
import { DatabaseTimeoutError, OutboxError } from '../errors';
import { describeOutbox, namedOutbox } from '../naming/outbox-name';
import { getInboxSubscriptionsToken, getOutboxAdminToken, getOutboxTransportsToken } from '../module/outbox-tokens';
import type { OutboxTransports } from '../transport/outbox-transports';
import { withStatementDeadline } from '../dialects/statement-deadline';
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
  /** The outbox to check, by its name (`OutboxModule.forRoot({ name })`). Default: the default outbox. */
  outbox?: string;
}

/**
 * A health indicator for `@nestjs/terminus` 11. Down when the database does not answer the
 * stats statements in time, when a transport says it is unavailable (every transport, or those
 * `transports` names), while the broker has cancelled an `@InboxHandler()` consumer (its queue
 * was deleted; it re-subscribes when the queue is back), or when the lag or the MANUAL_REQUIRED count passes a threshold the caller
 * sets; the details carry the figures.
 *
 * Provide it in a module that imports `TerminusModule`, next to `OutboxModule`:
 * `health.check([() => outboxHealth.isHealthy('outbox', { maxLagMs: 60_000 })])`. With several
 * outboxes, one check per outbox: `isHealthy('billing-outbox', { outbox: 'billing' })`.
 */
@Injectable()
export class OutboxHealthIndicator {
  /**
   * Nest creates it: inject it rather than constructing it.
   * @internal
   */
  constructor(
    private readonly health: HealthIndicatorService,
    private readonly moduleRef: ModuleRef,
    /** The default outbox's; absent from an application that configures only named outboxes. */
    @Optional() private readonly admin?: OutboxAdmin,
    @Optional() @Inject(OUTBOX_TRANSPORTS) private readonly transports?: OutboxTransports,
    @Optional() @Inject(INBOX_SUBSCRIPTIONS) private readonly subscriptions?: InboxSubscriptions,
  ) {}

  /**
   * The check's result under `key`: up with the figures, or down with them and the problems when
   * the database does not answer in time, a counted transport is unavailable, or a threshold is passed.
   * @throws OutboxError when the outbox to check (`options.outbox`, or the default one) is not configured
   */
  async isHealthy(key = 'outbox', options: OutboxHealthOptions = {}): Promise<HealthIndicatorResult> {
    const indicator = this.health.check(key);
    const { admin, transports, subscriptions } = this.outboxParts(options.outbox);
    const states = transportStates(transports);
    const counted = Object.keys(states).filter((name) => !options.transports || options.transports.includes(name));
    const down = counted.filter((name) => states[name] === 'unavailable');
    const transport = down.length > 0 ? 'unavailable' : 'available';
    // With one transport the details stay as they were; with several, each is named.
    const transportDetails: { transport: string; transports?: Record<string, string> } =
      Object.keys(states).length > 1 ? { transport, transports: states } : { transport };
    // Named only while one is cancelled, so the details of a healthy inbox stay as they were.
    const cancelled = subscriptions?.cancelled() ?? [];
    const consumerDetails: { cancelledConsumers?: { consumer: string; queue: string }[] } =
      cancelled.length > 0 ? { cancelledConsumers: cancelled.map(({ consumer, queue }) => ({ consumer, queue })) } : {};
    let stats: OutboxStats;
    const timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
    try {
      // Each statement is bounded too, so one the database never answers closes its connection.
      stats = await withTimeout(
        withStatementDeadline(timeoutMs, () => admin.stats()),
        timeoutMs,
      );
    } catch (error) {
      return indicator.down({
        database: 'unreachable',
        // Whichever of the two bounds passed first, the check's own is the one to name.
        error: error instanceof DatabaseTimeoutError ? timedOut(timeoutMs).message : error instanceof Error ? error.message : String(error),
        ...transportDetails,
        ...consumerDetails,
      });
    }
    const figures = healthFigures(stats);
    const problems = thresholdProblems(figures, options);
    if (Object.keys(states).length > 1) problems.unshift(...down.map((name) => `the transport ${JSON.stringify(name)} is unavailable`));
    else if (down.length > 0) problems.unshift('the transport is unavailable');
    problems.push(...cancelled.map(({ consumer, queue }) => `the broker cancelled inbox consumer "${consumer}" (queue "${queue}"); it waits for its queue`));
    const details = { database: 'reachable', ...transportDetails, ...consumerDetails, ...figures };
    return problems.length > 0 ? indicator.down({ ...details, problems }) : indicator.up(details);
  }

  /** The admin and transports of the outbox `name`: the default outbox's as injected, a named one's by its tokens. */
  private outboxParts(name: string | undefined): { admin: OutboxAdmin; transports?: OutboxTransports; subscriptions?: InboxSubscriptions } {
    const named = namedOutbox(name);
    if (named === undefined) {
      if (!this.admin)
        throw new OutboxError(
          'OutboxHealthIndicator: the application configures no default outbox; name the outbox to check, isHealthy(key, { outbox: name })',
        );
      return { admin: this.admin, transports: this.transports, subscriptions: this.subscriptions };
    }
    try {
      return {
        admin: this.moduleRef.get<OutboxAdmin>(getOutboxAdminToken(named), { strict: false }),
        transports: this.moduleRef.get<OutboxTransports>(getOutboxTransportsToken(named), { strict: false }),
        subscriptions: this.moduleRef.get<InboxSubscriptions>(getInboxSubscriptionsToken(named), { strict: false }),
      };
    } catch {
      throw new OutboxError(
        `OutboxHealthIndicator: ${describeOutbox(named)} is not configured; import OutboxModule.forRoot({ name: ${JSON.stringify(named)}, ... })`,
      );
    }
  }
}

/** Each configured transport, available or not; one without `isAvailable` is taken to be available, as its lane takes it. */
function transportStates(transports: OutboxTransports | undefined): Record<string, 'available' | 'unavailable'> {
  const lanes = transports?.lanes() ?? [];
  return Object.fromEntries(lanes.map(({ name, transport }) => [name, transport.isAvailable?.() === false ? 'unavailable' : 'available']));
}

function timedOut(timeoutMs: number): Error {
  return new Error(`the database did not answer within ${timeoutMs} ms`);
}

/** `work`, or a rejection once `timeoutMs` pass first (its statement's own bound closes the connection it is stuck on). */
function withTimeout<T>(work: Promise<T>, timeoutMs: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(timedOut(timeoutMs)), timeoutMs);
  });
  // A late failure of the abandoned statement must not become an unhandled rejection.
  work.catch(() => undefined);
  return Promise.race([work, timeout]).finally(() => clearTimeout(timer));
}
