import type { AmqpConnection } from '@golevelup/nestjs-rabbitmq';
import { BeforeApplicationShutdown, Injectable, Logger, OnApplicationBootstrap } from '@nestjs/common';
import { ModuleRef } from '@nestjs/core';
import type { Channel } from 'amqplib';
import { OutboxIdentity } from '../naming/outbox-identity';
import { backoffDelayMs, BackoffPolicy } from '../retry/backoff';
import { describeError } from '../retry/error-classifier';
import { golevelupConsumer, probeQueue } from '../transport/amqp/queue-availability';
import { allConnections } from './subscription-settings';

/** How often a cancelled consumer looks for its queue: from half a second up to every 15 s. */
const RESUBSCRIBE_BACKOFF: BackoffPolicy = { baseMs: 500, maxMs: 15_000, jitter: 0.2 };

/** An inbox consumer the broker cancelled, while it waits for its queue. */
export interface CancelledInboxConsumer {
  /** The consumer's name (`@InboxHandler({ consumer })`). */
  consumer: string;
  /** The queue it consumed. */
  queue: string;
  /** When the broker cancelled it. */
  since: Date;
}

type Deserializer = (content: Buffer, message: never) => unknown;

/**
 * Keeps `@InboxHandler()` consumers subscribed when the broker cancels them (basic.cancel: their
 * queue was deleted, or a quorum queue lost its members). golevelup swallows the cancel, so the
 * consumer would stay gone until the connection is closed. Here the cancel is logged, the consumer
 * counts as down (health), and it re-subscribes through golevelup once its queue is back, probing
 * with a growing pause; a consumer whose channel closes meanwhile is left to golevelup, which
 * subscribes it again on the channel it reopens.
 */
@Injectable()
export class InboxSubscriptions implements OnApplicationBootstrap, BeforeApplicationShutdown {
  private readonly logger = new Logger(this.identity.logContext('InboxHandler'));
  /** The inbox's handlers, by the deserializer the explorer gave each: golevelup keeps it in the consumer's options. */
  private readonly handlers = new Map<Deserializer, string>();
  private readonly down = new Map<string, CancelledInboxConsumer>();
  private readonly watched: {
    wrapper: { removeSetup(setup: (channel: Channel) => Promise<void>): Promise<void> };
    setup: (channel: Channel) => Promise<void>;
  }[] = [];
  private readonly timers = new Set<NodeJS.Timeout>();
  private stopped = false;

  /**
   * Nest creates it: inject it rather than constructing it.
   * @internal
   */
  constructor(
    private readonly moduleRef: ModuleRef,
    private readonly identity: OutboxIdentity,
  ) {}

  /** Takes the `@InboxHandler()` whose golevelup options carry `deserializer` as the consumer `consumer`. */
  watch(deserializer: Deserializer, consumer: string): void {
    this.handlers.set(deserializer, consumer);
  }

  /** The consumers the broker cancelled that have not subscribed again yet. */
  cancelled(): CancelledInboxConsumer[] {
    return [...this.down.values()];
  }

  /** Nest lifecycle hook: listens for the broker's cancels on every channel golevelup consumes on, now and after reconnects. */
  onApplicationBootstrap(): void {
    if (this.handlers.size === 0) return;
    for (const connection of allConnections(this.moduleRef)) {
      for (const wrapper of Object.values(connection.managedChannels)) {
        const setup = async (channel: Channel): Promise<void> => {
          channel.on('cancel', (fields: { consumerTag: string }) => this.cancelledByBroker(connection, channel, fields.consumerTag));
        };
        this.watched.push({ wrapper, setup });
        // Runs on the open channel now, and on each channel the wrapper opens later.
        wrapper
          .addSetup(setup)
          .catch((error: unknown) => this.logger.warn(`cannot watch a RabbitMQ channel for consumer cancels: ${describeError(error, 300)}`));
      }
    }
  }

  /** Nest lifecycle hook: stops looking for queues. */
  async beforeApplicationShutdown(): Promise<void> {
    this.stopped = true;
    for (const timer of this.timers) clearTimeout(timer);
    this.timers.clear();
    await Promise.all(this.watched.map(({ wrapper, setup }) => wrapper.removeSetup(setup).catch(() => undefined)));
  }

  private cancelledByBroker(connection: AmqpConnection, channel: Channel, consumerTag: string): void {
    const subscription = golevelupConsumer(connection, consumerTag);
    const consumer = subscription?.type === 'subscribe' ? this.handlers.get(subscription.msgOptions.deserializer as Deserializer) : undefined;
    if (!subscription || consumer === undefined || this.stopped) return;
    const queue = subscription.msgOptions.queue ?? '';
    this.down.set(consumer, { consumer, queue, since: new Date() });
    this.logger.warn(
      `consumer "${consumer}" was cancelled by the broker (queue "${queue}" was deleted, or a quorum queue lost its members): no deliveries until the queue is back; it subscribes again by itself`,
    );
    let channelClosed = false;
    channel.once('close', () => (channelClosed = true));
    let failures = 0;
    const attempt = async (): Promise<void> => {
      if (this.stopped) return;
      if (channelClosed) {
        // golevelup subscribes every handler again on the channel it reopens.
        this.down.delete(consumer);
        return;
      }
      try {
        await probeQueue(connection, subscription.msgOptions);
        await connection.resumeConsumer(consumerTag);
        this.down.delete(consumer);
        this.logger.log(`consumer "${consumer}" consumes queue "${queue}" again`);
      } catch (error) {
        if (failures === 0) this.logger.warn(`consumer "${consumer}" cannot subscribe to queue "${queue}" yet, retrying: ${describeError(error, 300)}`);
        failures += 1;
        this.later(attempt, backoffDelayMs(failures, RESUBSCRIBE_BACKOFF));
      }
    };
    this.later(attempt, backoffDelayMs(1, RESUBSCRIBE_BACKOFF));
  }

  private later(work: () => Promise<void>, delayMs: number): void {
    if (this.stopped) return;
    const timer = setTimeout(() => {
      this.timers.delete(timer);
      void work();
    }, delayMs);
    timer.unref();
    this.timers.add(timer);
  }
}
