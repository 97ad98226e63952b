import type { INestApplicationContext, InjectionToken } from '@nestjs/common';
import { setTimeout as sleep } from 'node:timers/promises';
import { OutboxError } from '../errors';
import { InboxWorker } from '../inbox/inbox.worker';
import { describeOutbox, namedOutbox } from '../naming/outbox-name';
import { outboxPart } from './outbox-parts';
import { getInboxWorkerToken, getOutboxDispatcherToken, getOutboxTransportToken } from '../module/outbox-tokens';
import { OUTBOX_OPTIONS, OUTBOX_TRANSPORTS } from '../naming/injection-tokens';
import type { OutboxTransports } from '../transport/outbox-transports';
import type { OutboxModuleOptions } from '../options/outbox-module-options';
import { OutboxDispatcher } from '../outbox/outbox.dispatcher';
import { describeError } from '../retry/error-classifier';
import { bindingMatches, LoopbackExchangeType } from './amqp-routing';
import { CapturedMessage, CapturingOutboxTransport } from './capturing-outbox.transport';
import { InboxSubscription, inboxSubscriptions } from './inbox-subscriptions';
import { deliverOnce, LoopbackDelivery } from './loopback-delivery';

/** Settings of `flush()`; given to `OutboxTestKit.from()` they are the defaults of every flush. */
export interface FlushOptions {
  /**
   * Hand every message the flush finds captured to the application's `@InboxHandler()` methods
   * whose `@RabbitSubscribe()` bindings match it, as a broker would. Default false: messages are
   * only captured. Needs `CapturingOutboxTransport`.
   */
  deliverToInboxHandlers?: boolean;
  /** How exchanges route, by name: `topic` (the default for every exchange), `direct` or `fanout`. */
  exchangeTypes?: Record<string, LoopbackExchangeType>;
  /** Deliveries of one message to one queue (the first and its redeliveries) before the flush fails. Default 50. */
  maxDeliveries?: number;
  /** Rounds before the flush fails because the application keeps finding work. Default 100. */
  maxRounds?: number;
  /**
   * When a round saw failed attempts and the next found nothing due, the flush waits out the
   * module's longest retry delay (`backoffMaxMs` plus jitter) and looks once more, if that delay
   * is at most this long. Default 50: with `OUTBOX_TEST_OPTIONS` (1 ms) retries run to their end
   * in one flush; with production backoffs the flush returns and the retries stay scheduled.
   */
  waitForRetriesUpToMs?: number;
}

/** Settings of `OutboxTestKit.from()`: the outbox the kit runs, and the defaults of every flush. */
export interface OutboxTestKitOptions extends FlushOptions {
  /**
   * The outbox the kit runs, by its name (`OutboxModule.forRoot({ name })`): its dispatcher,
   * transports and deferred inbox worker, and (when delivering) the `@InboxHandler()` methods of
   * that outbox. Default: the default outbox.
   */
  outbox?: string;
}

/** What one `flush()` did. */
export interface FlushResult {
  /** Rounds run, the last of which did nothing. */
  rounds: number;
  /**
   * Messages the dispatcher sent since the previous flush (since start-up for the first), those it
   * sent on its own included: a message sent as its transaction committed (`sendOnCommit`, where
   * the database allows it) or by a poll counts in the next flush, so the count is the same on
   * every database. Sends that failed or were given back are not counted.
   */
  sent: number;
  /** Loopback deliveries made, redeliveries included. */
  delivered: number;
  /** Stored deliveries the deferred inbox worker ran (each attempt counts). */
  inboxRuns: number;
}

/** The test kit met something a test should hear about: a delivery that never settles, a handler chain that threw, a flush that never ends. */
export class OutboxTestKitError extends OutboxError {}

const DEFAULTS: Required<FlushOptions> = { deliverToInboxHandlers: false, exchangeTypes: {}, maxDeliveries: 50, maxRounds: 100, waitForRetriesUpToMs: 50 };

/** What the kits of one application share: what was already delivered, and the counters. */
class KitState {
  /** Messages already delivered (or passed over by a flush that did not deliver). */
  readonly handled = new WeakSet<CapturedMessage>();
  readonly deliveries: LoopbackDelivery[] = [];
  /** Turns of handlers that consume one queue. */
  readonly turns = new Map<string, number>();
  subscriptions?: InboxSubscription[];
  /** Each dispatcher's failed sends as the last flush left them. */
  readonly failuresSeen = new Map<OutboxDispatcher, number>();
  /** Each dispatcher's sends as the last flush left them. */
  readonly sendsSeen = new Map<OutboxDispatcher, number>();
}

const states = new WeakMap<INestApplicationContext, KitState>();

/**
 * Runs an application's outbox and inbox to a standstill, deterministically and without a broker:
 * `flush()` dispatches every due message, hands captured messages to the application's
 * `@InboxHandler()` methods if asked (loopback delivery), runs the deferred inbox worker, and
 * goes round again until a whole round finds nothing to do.
 *
 * ```ts
 * const kit = OutboxTestKit.from(app, { deliverToInboxHandlers: true });
 * await orders.pay(orderId);
 * await kit.flush();
 * expect(kit.transport.ofType('order.paid')).toHaveLength(1);
 * ```
 */
export class OutboxTestKit {
  private constructor(
    private readonly app: INestApplicationContext,
    private readonly state: KitState,
    private readonly defaults: Required<FlushOptions>,
    /** The named outbox the kit runs; undefined for the default outbox. */
    private readonly outbox: string | undefined,
  ) {}

  /** A kit on an initialised application (`await app.init()` or `module.init()` first). */
  static from(app: INestApplicationContext, options: OutboxTestKitOptions = {}): OutboxTestKit {
    let state = states.get(app);
    if (!state) states.set(app, (state = new KitState()));
    const { outbox, ...flushDefaults } = options;
    return new OutboxTestKit(app, state, { ...DEFAULTS, ...flushDefaults }, namedOutbox(outbox));
  }

  /** The application's transport; fails unless it is `CapturingOutboxTransport`. */
  get transport(): CapturingOutboxTransport {
    const transport = this.part<unknown>(getOutboxTransportToken(this.outbox));
    if (!(transport instanceof CapturingOutboxTransport)) {
      const whose = this.outbox === undefined ? "The application's outbox transport" : `The transport of ${describeOutbox(this.outbox)}`;
      const name = this.outbox === undefined ? '' : `name: ${JSON.stringify(this.outbox)}, `;
      const token = this.outbox === undefined ? 'OUTBOX_TRANSPORT' : `getOutboxTransportToken(${JSON.stringify(this.outbox)})`;
      throw new OutboxTestKitError(
        `${whose} is ${(transport as object)?.constructor?.name ?? String(transport)}, not CapturingOutboxTransport: override it in the test (Test.createTestingModule(...).overrideProvider(${token}).useClass(CapturingOutboxTransport)) or import OutboxModule.forRoot({ ${name}transport: CapturingOutboxTransport })`,
      );
    }
    return transport;
  }

  /**
   * The transport named `name` (one of `transports`); fails unless it is `CapturingOutboxTransport`.
   * `transport` is the default one.
   */
  transportOf(name: string): CapturingOutboxTransport {
    const transports = this.part<OutboxTransports>(OUTBOX_TRANSPORTS);
    const transport = transports.get(name) as unknown;
    if (!(transport instanceof CapturingOutboxTransport)) {
      const found =
        transport === undefined
          ? `not configured (transports: ${transports.names().join(', ')})`
          : `${(transport as object).constructor?.name}, not CapturingOutboxTransport`;
      throw new OutboxTestKitError(`The outbox transport ${JSON.stringify(name)} is ${found}: configure it as CapturingOutboxTransport in the test`);
    }
    return transport;
  }

  /** Every loopback delivery so far, in order. */
  get deliveries(): readonly LoopbackDelivery[] {
    return this.state.deliveries;
  }

  /** The loopback deliveries the inbox rejected with Nack(false): a broker would have dead-lettered them. */
  get deadLettered(): readonly LoopbackDelivery[] {
    return this.state.deliveries.filter((delivery) => delivery.outcome === 'dead-letter');
  }

  /**
   * Rounds of: dispatch every due outbox message; deliver what was captured since (if
   * `deliverToInboxHandlers`); run every due deferred inbox delivery; until a round does nothing.
   * Rows waiting out a retry backoff are not due: with `OUTBOX_TEST_OPTIONS` (backoffs of a
   * millisecond) the flush waits them out (`waitForRetriesUpToMs`), with longer ones it returns
   * and leaves them scheduled. Rejects when a delivery keeps being requeued (`maxDeliveries`), when a
   * handler's chain throws before the inbox answers, or after `maxRounds`.
   */
  async flush(options: FlushOptions = {}): Promise<FlushResult> {
    const settings = { ...this.defaults, ...options };
    const dispatcher = this.part<OutboxDispatcher>(getOutboxDispatcherToken(this.outbox));
    const inboxWorker = this.part<InboxWorker>(getInboxWorkerToken(this.outbox));
    const result: FlushResult = { rounds: 0, sent: 0, delivered: 0, inboxRuns: 0 };
    const sentBefore = this.state.sendsSeen.get(dispatcher) ?? 0;
    const retryWaitMs = this.longestRetryDelayMs();
    // The dispatcher also sends on its own, e.g. what a commit hands it at once: sends of it that
    // failed since the last flush have retries scheduled too.
    /** Set by a round that saw attempts fail (or deferred runs, which may have): their retries may be due soon. */
    let retriesScheduled = dispatcher.stats.failed > (this.state.failuresSeen.get(dispatcher) ?? 0);
    while (true) {
      if (result.rounds >= settings.maxRounds) {
        throw new OutboxTestKitError(
          `flush() still found work after ${settings.maxRounds} rounds: a handler that publishes what it consumes, or retries that never end? Raise maxRounds if this is expected`,
        );
      }
      result.rounds += 1;
      const before = { ...dispatcher.stats };
      const claimed = await dispatcher.drain();
      const delivered = await this.deliverCaptured(settings);
      const inboxRuns = await inboxWorker.drain();
      result.delivered += delivered;
      result.inboxRuns += inboxRuns;
      this.state.failuresSeen.set(dispatcher, dispatcher.stats.failed);
      // Batches the dispatcher began before the round and finished during it count as its work.
      if (claimed > 0 || dispatcher.stats.claimed > before.claimed || delivered > 0 || inboxRuns > 0) {
        retriesScheduled = dispatcher.stats.failed > before.failed || inboxRuns > 0;
        continue;
      }
      if (!retriesScheduled || retryWaitMs > settings.waitForRetriesUpToMs) {
        result.sent = dispatcher.stats.sent - sentBefore;
        this.state.sendsSeen.set(dispatcher, dispatcher.stats.sent);
        return result;
      }
      retriesScheduled = false;
      // The database clock may count in milliseconds: a retry due 1 ms later can still be in the future.
      await sleep(retryWaitMs + 2);
    }
  }

  /**
   * Delivers `message` now to every queue whose handlers' bindings match it, as a duplicate from
   * the producer would arrive (`redelivered: true`: as the broker's redelivery of an unacknowledged
   * delivery). Requeued deliveries are delivered again at once. Returns this call's deliveries.
   */
  async deliver(
    message: CapturedMessage,
    options: Pick<FlushOptions, 'exchangeTypes' | 'maxDeliveries'> & { redelivered?: boolean } = {},
  ): Promise<LoopbackDelivery[]> {
    const settings = { ...this.defaults, ...options };
    const made: LoopbackDelivery[] = [];
    for (const queue of this.queuesFor(message, settings.exchangeTypes)) {
      for (let delivery = options.redelivered ? 2 : 1; ; delivery++) {
        if (made.filter((d) => d.queue === queue[0].queue).length >= settings.maxDeliveries) {
          throw new OutboxTestKitError(
            `${message.type} ${message.messageId} was requeued ${settings.maxDeliveries} times by ${queue[0].handler}; a handler that fails forever would go to MANUAL_REQUIRED after its maxAttempts`,
          );
        }
        const outcome = await deliverOnce(this.nextTurn(queue), message, delivery);
        this.state.deliveries.push(outcome);
        made.push(outcome);
        if (outcome.outcome === 'error') {
          throw new OutboxTestKitError(
            `${outcome.handler} threw on ${message.type} ${message.messageId} before the inbox answered (a guard, pipe or interceptor): ${describeError(outcome.error, 500)}`,
            {
              cause: outcome.error,
            },
          );
        }
        if (outcome.outcome !== 'requeue') break;
      }
    }
    return made;
  }

  /** The longest delay before a failed attempt is due again (backoffMaxMs plus its jitter). */
  private longestRetryDelayMs(): number {
    const options = this.part<OutboxModuleOptions>(OUTBOX_OPTIONS);
    return Math.ceil(options.backoffMaxMs * (1 + options.backoffJitter));
  }

  /** Hands what every capturing transport captured since the last look to the inbox handlers, if asked. */
  private async deliverCaptured(settings: Required<FlushOptions>): Promise<number> {
    const transport = this.part<unknown>(getOutboxTransportToken(this.outbox));
    if (!(transport instanceof CapturingOutboxTransport)) {
      if (settings.deliverToInboxHandlers) void this.transport; // throws, naming what to import
      return 0;
    }
    const capturing = this.part<OutboxTransports>(OUTBOX_TRANSPORTS)
      .lanes()
      .map((lane) => lane.transport)
      .filter((lane): lane is CapturingOutboxTransport => lane instanceof CapturingOutboxTransport);
    let delivered = 0;
    for (const lane of capturing) {
      // Indexed: handlers may publish while this runs, and what they publish is captured behind.
      for (let i = 0; i < lane.messages.length; i++) {
        const message = lane.messages[i];
        if (this.state.handled.has(message)) continue;
        this.state.handled.add(message);
        if (settings.deliverToInboxHandlers) delivered += (await this.deliver(message, settings)).length;
      }
    }
    return delivered;
  }

  /** The matching queues, each as the handlers consuming it. */
  private queuesFor(message: CapturedMessage, exchangeTypes: Record<string, LoopbackExchangeType>): InboxSubscription[][] {
    this.state.subscriptions ??= inboxSubscriptions(this.app);
    const queues = new Map<string, InboxSubscription[]>();
    for (const subscription of this.state.subscriptions) {
      // Another outbox's handlers receive what that outbox's kit delivers.
      if (subscription.definition.outbox !== this.outbox) continue;
      const matches = subscription.bindings.some(
        (binding) =>
          binding.exchange === message.exchange &&
          bindingMatches(binding.exchange === '' ? 'direct' : (exchangeTypes[binding.exchange] ?? 'topic'), binding.routingKey, message.routingKey),
      );
      if (!matches) continue;
      const queue = queues.get(subscription.queueKey) ?? [];
      queue.push(subscription);
      queues.set(subscription.queueKey, queue);
    }
    return [...queues.values()];
  }

  /** A provider of the kit's outbox, by the token it has inside its module. */
  private part<T>(token: InjectionToken): T {
    try {
      return outboxPart<T>(this.app, this.outbox, token);
    } catch (error) {
      throw new OutboxTestKitError((error as Error).message);
    }
  }

  /** Handlers of one queue take turns, as a broker's consumers of one queue do. */
  private nextTurn(queue: InboxSubscription[]): InboxSubscription {
    const key = queue[0].queueKey;
    const turn = this.state.turns.get(key) ?? 0;
    this.state.turns.set(key, turn + 1);
    return queue[turn % queue.length];
  }
}

/** `OutboxTestKit.from(app, options).flush()`: runs the outbox and inbox until nothing is left to do. */
export function flushOutbox(app: INestApplicationContext, options: OutboxTestKitOptions = {}): Promise<FlushResult> {
  return OutboxTestKit.from(app, options).flush();
}
