import type { ChannelModel } from 'amqplib';
import { BrokerChannelError, ExchangeNotFoundError, NonRetryableError, OutboxError, TransportUnavailableError, UnroutableMessageError } from '../../errors';
import { OutgoingMessage } from '../../message/outbox-transport';
import { unencodable } from './amqp-publication-of';
import { BrokerCloseError, isPermanentRefusal } from './channel-close';
import { PublishOutcome } from './confirm-publisher';
import { ExchangeRegistry } from './exchange-registry';

/** The most suspects kept at once: past it, the oldest is forgotten. */
const MAX_SUSPECTS = 1_000;

/**
 * What the outcome of a publication means for its message: confirmed, to be sent again, or the
 * failure it is charged with. Keeps the suspects: the messages that shared a channel the broker
 * closed without naming the cause, sent alone until they go through.
 */
export class PublishOutcomes {
  private readonly suspects = new Set<string>();

  constructor(private readonly exchanges: ExchangeRegistry) {}

  /** Whether the message is to be sent alone. */
  isSuspect(messageId: string): boolean {
    return this.suspects.has(messageId);
  }

  /**
   * True once confirmed; false when it is to be sent again (its channel closed over another
   * message, or it is a suspect from now on, sent alone); throws the message's failure otherwise.
   */
  delivered(outcome: PublishOutcome, connection: ChannelModel, message: OutgoingMessage): boolean {
    switch (outcome.kind) {
      case 'confirmed':
        if (this.suspects.size > 0) this.suspects.delete(message.messageId);
        return true;
      case 'returned':
        throw new UnroutableMessageError(message.messageId, message.exchange, message.routingKey);
      case 'nacked':
        throw new OutboxError(
          `The broker nacked message ${message.messageId}: it could not take responsibility for it (e.g. a queue with x-overflow reject-publish is full)`,
        );
      case 'unencodable':
        throw unencodable(message, outcome.error);
      case 'closed':
        if (outcome.blame === 'none') throw new TransportUnavailableError(`The broker connection closed before message ${message.messageId} was confirmed`);
        if (outcome.blame === 'culprit') {
          this.suspects.delete(message.messageId);
          throw this.refusal(connection, message, outcome.error!);
        }
        if (outcome.blame === 'suspect') this.suspect(message.messageId);
        return false;
    }
  }

  /** The error of a message the broker closed a channel over. */
  private refusal(connection: ChannelModel, message: OutgoingMessage, error: BrokerCloseError): Error {
    const channelError = new BrokerChannelError(message.messageId, error.code, error.message);
    if (error.code === 404) {
      this.exchanges.forget(connection, message.exchange);
      return new ExchangeNotFoundError(message.exchange, { cause: channelError });
    }
    // The broker refuses the message itself (a header, its size): retrying cannot help.
    if (isPermanentRefusal(error)) return new NonRetryableError(channelError.message, { cause: channelError });
    return channelError;
  }

  private suspect(messageId: string): void {
    if (this.suspects.size >= MAX_SUSPECTS) this.suspects.delete(this.suspects.values().next().value!);
    this.suspects.add(messageId);
  }
}
