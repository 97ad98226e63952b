import type { AmqpConnection } from '@golevelup/nestjs-rabbitmq';
import { Inject, Injectable, Logger, OnApplicationShutdown, OnModuleInit } from '@nestjs/common';
import { ModuleRef } from '@nestjs/core';
import type { ChannelModel } from 'amqplib';
import { ExchangeNotFoundError, OutboxError, SendTimeoutError, TransportUnavailableError } from '../errors';
import { AddressProblem, MessageAddress, OutboxTransport, OutgoingMessage, ServerAddress } from '../message/outbox-transport';
import { failedSend, SEND_THEN, SendResult, SENT_RESULT } from '../message/send-then';
import { OUTBOX_OPTIONS } from '../naming/injection-tokens';
import { OutboxModuleOptions } from '../options/outbox-module-options';
import { amqpPublicationOf, unencodable } from './amqp/amqp-publication-of';
import { brokerAddress } from './amqp/broker-address';
import { BrokerLink } from './amqp/broker-link';
import { BrokerCloseError } from './amqp/channel-close';
import { AmqpPublication } from './amqp/confirm-publisher';
import { ExchangeRegistry } from './amqp/exchange-registry';
import { golevelup } from './amqp/golevelup';
import { IsolationLane } from './amqp/isolation-lane';
import { MainChannel } from './amqp/main-channel';
import { PublishOutcomes } from './amqp/publish-outcomes';
import { SendDeadlines } from './send-deadlines';

/** What a delivery's callback is given when the broker confirmed it (any other value is the error). */
const SENT = Symbol('sent');

/** Times a message is sent again after channels closed over other messages, before it is given back. */
const MAX_RESENDS = 5;

/**
 * Publishes through golevelup's connection on confirm channels of its own: persistent,
 * `messageId` set, `mandatory` so that an unroutable message is reported as not sent. Many sends
 * are in flight at once, each bounded by `sendTimeoutMs`.
 *
 * A message is charged an attempt only for what it caused: a nack, a return, a missing exchange
 * (checked before publishing, so the broker never closes the shared channel over it), a channel
 * error the broker blames on it, or a timeout while the connection stayed up. While the broker is
 * disconnected or blocked the transport says it is unavailable and fails sends with
 * `TransportUnavailableError`, which costs no attempt.
 */
@Injectable()
export class RabbitMqOutboxTransport implements OutboxTransport, OnModuleInit, OnApplicationShutdown {
  private readonly logger = new Logger(RabbitMqOutboxTransport.name);
  private link?: BrokerLink;
  private readonly main = new MainChannel((error) => this.logBrokerClose(error, false));
  private readonly exchanges: ExchangeRegistry;
  private readonly outcomes: PublishOutcomes;
  private readonly isolation = new IsolationLane((error) => this.logBrokerClose(error, true));
  private broker?: ServerAddress;
  private readonly deadlines: SendDeadlines;

  /** `messaging.system` of the send spans. */
  readonly messagingSystem = 'rabbitmq';

  /**
   * Nest creates it: inject it rather than constructing it.
   * @internal
   */
  constructor(
    private readonly moduleRef: ModuleRef,
    @Inject(OUTBOX_OPTIONS) private readonly options: OutboxModuleOptions,
  ) {
    // Within the send's own timeout, so that a check that hangs gives the message back unattempted.
    this.exchanges = new ExchangeRegistry(Math.floor(options.sendTimeoutMs / 2));
    this.outcomes = new PublishOutcomes(this.exchanges);
    this.deadlines = new SendDeadlines(options.sendTimeoutMs);
  }

  /**
   * Finds golevelup's connection wherever the application registered RabbitMQModule; at module
   * init, so a missing module fails the boot before any dispatcher starts.
   */
  onModuleInit(): void {
    let amqp: AmqpConnection;
    try {
      amqp = this.moduleRef.get(golevelup().AmqpConnection, { strict: false });
    } catch (error) {
      throw new OutboxError(
        'The RabbitMQ outbox transport (the default) needs @golevelup/nestjs-rabbitmq installed and RabbitMQModule.forRoot() in the application; or pass another transport to OutboxModule.forRoot (e.g. HttpOutboxTransport.for(...))',
        { cause: error },
      );
    }
    this.link = new BrokerLink(amqp.managedConnection);
    this.broker = brokerAddress(amqp.configuration?.uri);
  }

  /** The broker golevelup is configured with, when it names one. */
  serverAddress(): ServerAddress | undefined {
    return this.broker;
  }

  isAvailable(): boolean {
    return this.link?.isAvailable ?? false;
  }

  onAvailable(listener: () => void): () => void {
    return this.requireLink().onAvailable(listener);
  }

  send(message: OutgoingMessage): Promise<void> {
    return new Promise<void>((resolve, reject) => this[SEND_THEN](message, (result) => (result.status === 'fulfilled' ? resolve() : reject(result.reason))));
  }

  /**
   * `send` without a promise of its own, for the dispatcher's batches (see `SEND_THEN`): one
   * deadline entry per send and no timer or promise on the usual path, since thousands of sends
   * are in flight and every object they keep is garbage to collect. The class does not declare
   * `SendsThen`: an internal contract stays out of its public type (`sendsThen()` finds it).
   * @internal
   */
  [SEND_THEN](message: OutgoingMessage, settled: (result: SendResult) => void): void {
    let link: BrokerLink;
    try {
      link = this.requireLink();
    } catch (error) {
      return settled(failedSend(error));
    }
    const epoch = link.epoch;
    const deadline = this.deadlines.start(() => {
      // Not the message's fault when the broker went away or blocked publishers meanwhile.
      const error = link.interruptedSince(epoch)
        ? new TransportUnavailableError(`The broker connection was interrupted while message ${message.messageId} waited for its confirm`)
        : new SendTimeoutError(message.messageId, this.options.sendTimeoutMs);
      settled(failedSend(error));
    });
    this.deliver(link, message, (outcome) => {
      // Only the sweep clears a deadline still running: the send has timed out and was answered.
      if (deadline.expire === undefined) return;
      this.deadlines.end(deadline);
      settled(outcome === SENT ? SENT_RESULT : failedSend(outcome));
    });
  }

  /** Nest lifecycle hook: closes the transport's confirm channels. */
  async onApplicationShutdown(): Promise<void> {
    this.link?.close();
    await Promise.all([this.main.close(), this.isolation.close()]);
  }

  /** Sends `message` and calls `done` once: with `SENT` when the broker confirmed it, with the error otherwise. */
  private deliver(link: BrokerLink, message: OutgoingMessage, done: (outcome: unknown) => void): void {
    let publication: AmqpPublication;
    try {
      publication = amqpPublicationOf(message, this.options);
    } catch (error) {
      return done(error);
    }
    // The usual case, without an async function's frame held per message until its confirm:
    // connected, the exchange known to exist, the main channel open, the message no suspect.
    const connection = link.connection;
    const publisher =
      connection && this.exchanges.isKnown(connection, message.exchange) && !this.outcomes.isSuspect(message.messageId)
        ? this.main.openOn(connection)
        : undefined;
    if (!connection || !publisher) {
      this.deliverInRounds(link, message, publication).then(() => done(SENT), done);
      return;
    }
    publisher.publishThen(publication, (outcome) => {
      let delivered: boolean;
      try {
        delivered = this.outcomes.delivered(outcome, connection, message);
      } catch (error) {
        return done(error);
      }
      if (delivered) done(SENT);
      // Built again rather than kept from the first round: what waits for a confirm is kept small.
      else this.deliverInRounds(link, message, undefined, 1).then(() => done(SENT), done);
    });
  }

  /**
   * Publishes until the broker confirms, from round `first` on; each round after a channel closed
   * over other messages. Without `publication`, builds it again.
   */
  private async deliverInRounds(link: BrokerLink, message: OutgoingMessage, publication: AmqpPublication | undefined, first = 0): Promise<void> {
    publication ??= amqpPublicationOf(message, this.options);
    for (let round = first; round <= MAX_RESENDS; round++) {
      const connection = link.connection;
      if (!connection) throw new TransportUnavailableError('The broker is disconnected or blocks publishers');
      // Known exchanges and an open channel are answered without a promise.
      const exists = this.exchangeExists(connection, message);
      if (!(typeof exists === 'boolean' ? exists : await exists)) throw new ExchangeNotFoundError(message.exchange);
      const alone = this.outcomes.isSuspect(message.messageId);
      const outcome = alone
        ? await this.isolation.publish(connection, publication)
        : await (this.main.openOn(connection) ?? (await this.main.on(connection))).publish(publication);
      if (this.outcomes.delivered(outcome, connection, message)) return;
    }
    throw new TransportUnavailableError(`Channels kept closing over other messages while message ${message.messageId} was sent`);
  }

  private exchangeExists(connection: ChannelModel, message: OutgoingMessage): boolean | Promise<boolean> {
    const failed = (error: unknown): never => {
      if (error instanceof TypeError || error instanceof RangeError) throw unencodable(message, error);
      throw error;
    };
    try {
      const exists = this.exchanges.exists(connection, message.exchange);
      return typeof exists === 'boolean' ? exists : exists.catch(failed);
    } catch (error) {
      return failed(error);
    }
  }

  private logBrokerClose(error: BrokerCloseError, isolating: boolean): void {
    const consequence = isolating ? 'the message sent alone on it caused it and fails' : 'the message(s) it names fail; the others on it are sent again';
    this.logger.warn(`The broker closed an outbox channel (${error.message}): ${consequence}`);
  }

  /** An exchange and a routing key, both given: a message without them would go nowhere. */
  addressProblem(address: MessageAddress): AddressProblem | undefined {
    if (address.exchange === undefined) return { field: 'exchange', message: `the RabbitMQ transport needs exchange (use '' for the default exchange)` };
    if (address.routingKey === undefined) return { field: 'routingKey', message: 'the RabbitMQ transport needs routingKey' };
    return undefined;
  }

  private requireLink(): BrokerLink {
    if (!this.link) throw new OutboxError('The RabbitMQ outbox transport is not started yet');
    return this.link;
  }
}
