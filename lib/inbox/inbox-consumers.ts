import { Injectable } from '@nestjs/common';
import { OutboxError } from '../errors';
import { ClaimedInboxMessage } from '../dialects/inbox-dialect';
import { DeferredReplay } from './deferred-replay';

/** An inbox consumer whose stored rows the deferred worker runs. */
export interface DeferredConsumer {
  consumer: string;
  /** What brings its messages, as `messaging.system` names it on the process spans (`rabbitmq`, `webhook`). */
  messagingSystem: string;
  /**
   * Runs the consumer's handler on a stored row. The handler's business part must run through
   * `replay`, which wraps it in the transaction that settles the row; anything thrown outside it
   * counts as a failed attempt.
   */
  runStored(row: ClaimedInboxMessage, replay: DeferredReplay): Promise<void>;
}

/**
 * Every inbox consumer of the application, whatever brings its messages (`@InboxHandler()` on
 * RabbitMQ, `@WebhookInbox()` on HTTP): consumer names are one namespace, since they key the
 * inbox table's rows, and the deferred worker claims the rows of all deferred ones.
 */
@Injectable()
export class InboxConsumers {
  private readonly names = new Map<string, string>();
  private readonly deferredConsumers = new Map<string, DeferredConsumer>();

  /** Takes `consumer` for the handler described by `where`; a name taken twice fails start-up. */
  claimName(consumer: string, where: string): void {
    const holder = this.names.get(consumer);
    if (holder !== undefined) throw new OutboxError(`${where}: consumer name "${consumer}" is already used by ${holder}`);
    this.names.set(consumer, where);
  }

  registerDeferred(consumer: DeferredConsumer): void {
    this.deferredConsumers.set(consumer.consumer, consumer);
  }

  /** The names of every consumer, as claimed at start-up. */
  get all(): string[] {
    return [...this.names.keys()];
  }

  /** The deferred consumers, by name. */
  get deferred(): ReadonlyMap<string, DeferredConsumer> {
    return this.deferredConsumers;
  }
}
