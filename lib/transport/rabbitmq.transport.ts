import type { AmqpConnection } from '@golevelup/nestjs-rabbitmq';
import { Inject, Injectable, Logger, OnApplicationShutdown, OnModuleInit } from '@nestjs/common';
import { ModuleRef } from '@nestjs/core';
import type { ChannelModel } from 'amqplib';
import {
  BrokerChannelError,
  ExchangeNotFoundError,
  NonRetryableError,
  OutboxError,
  SendTimeoutError,
  TransportUnavailableError,
  UnroutableMessageError,
} from '../errors';
import { OUTBOX_OPTIONS } from '../naming/injection-tokens';
import { OutboxModuleOptions } from '../options/outbox-module-options';
import { golevelup } from './amqp/golevelup';
import { BrokerLink } from './amqp/broker-link';
import { BrokerCloseError, isPermanentRefusal } from './amqp/channel-close';
import { AmqpPublication, ConfirmPublisher, PublishOutcome } from './amqp/confirm-publisher';
import { ExchangeRegistry } from './amqp/exchange-registry';
import { IsolationLane } from './amqp/isolation-lane';
import { AddressProblem, MessageAddress, OutboxTransport, OutgoingMessage, ServerAddress } from '../message/outbox-transport';
import { brokerAddress } from './amqp/broker-address';
import { deliveryHeaders } from './delivery-headers';
import { encodedHeaderTableSize } from '../message/amqp-header-table';
import { AMQP_SHORT_STRING_MAX_BYTES } from '../message/message-limits';
import { refuseLineBreaks } from '../message/message-text';

/** The transport's main confirm channel on one connection: `opened` once it is. */
interface MainChannel {
  connection: ChannelModel;
  publisher: Promise<ConfirmPublisher>;
  opened?: ConfirmPublisher;
}

/** What a delivery's callback is given when the broker confirmed it (any other value is the error). */
const SENT = Symbol('sent');

/** Times a message is sent again after channels closed over other messages, before it is given back. */
const MAX_RESENDS = 5;
/** Message ids that closed a channel before and are sent alone until they go through. */
const MAX_SUSPECTS = 1_000;

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
  private main?: MainChannel;
  private readonly exchanges: ExchangeRegistry;
  private readonly isolation = new IsolationLane((error) => this.logBrokerClose(error, true));
  private readonly suspects = new Set<string>();
  private broker?: ServerAddress;

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
    let link: BrokerLink;
    try {
      link = this.requireLink();
    } catch (error) {
      return Promise.reject(error);
    }
    const epoch = link.epoch;
    const timeoutMs = this.options.sendTimeoutMs;
    // One promise and one timer per send, and no other promise on the usual path: thousands of
    // sends are in flight, and every promise is garbage to collect.
    return new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => {
        // Not the message's fault when the broker went away or blocked publishers meanwhile.
        reject(
          link.interruptedSince(epoch)
            ? new TransportUnavailableError(`The broker connection was interrupted while message ${message.messageId} waited for its confirm`)
            : new SendTimeoutError(message.messageId, timeoutMs),
        );
      }, timeoutMs);
      this.deliver(link, message, (error) => {
        clearTimeout(timer);
        if (error === SENT) resolve();
        else reject(error);
      });
    });
  }

  /** Nest lifecycle hook: closes the transport's confirm channels. */
  async onApplicationShutdown(): Promise<void> {
    this.link?.close();
    const main = this.main;
    this.main = undefined;
    await Promise.all([main?.publisher.then((p) => p.close()).catch(() => undefined), this.isolation.close()]);
  }

  /** Sends `message` and calls `done` once: with `SENT` when the broker confirmed it, with the error otherwise. */
  private deliver(link: BrokerLink, message: OutgoingMessage, done: (outcome: unknown) => void): void {
    let publication: AmqpPublication;
    try {
      publication = this.toPublication(message);
      this.assertEncodable(message, publication.options.headers);
    } catch (error) {
      return done(error);
    }
    // The usual case, without an async function's frame held per message until its confirm:
    // connected, the exchange known to exist, the main channel open, the message no suspect.
    const connection = link.connection;
    const publisher =
      connection && this.exchanges.isKnown(connection, message.exchange) && !this.suspects.has(message.messageId)
        ? this.openPublisherOn(connection)
        : undefined;
    if (!connection || !publisher) {
      this.deliverInRounds(link, message, publication).then(() => done(SENT), done);
      return;
    }
    publisher.publishThen(publication, (outcome) => {
      let delivered: boolean;
      try {
        delivered = this.delivered(outcome, connection, message);
      } catch (error) {
        return done(error);
      }
      if (delivered) done(SENT);
      else this.deliverInRounds(link, message, publication, 1).then(() => done(SENT), done);
    });
  }

  /** Publishes until the broker confirms, from round `first` on; each round after a channel closed over other messages. */
  private async deliverInRounds(link: BrokerLink, message: OutgoingMessage, publication: AmqpPublication, first = 0): Promise<void> {
    for (let round = first; round <= MAX_RESENDS; round++) {
      const connection = link.connection;
      if (!connection) throw new TransportUnavailableError('The broker is disconnected or blocks publishers');
      // Known exchanges and an open channel are answered without a promise.
      const exists = this.exchangeExists(connection, message);
      if (!(typeof exists === 'boolean' ? exists : await exists)) throw new ExchangeNotFoundError(message.exchange);
      const alone = this.suspects.has(message.messageId);
      const outcome = alone
        ? await this.isolation.publish(connection, publication)
        : await (this.openPublisherOn(connection) ?? (await this.publisherOn(connection))).publish(publication);
      if (this.delivered(outcome, connection, message)) return;
    }
    throw new TransportUnavailableError(`Channels kept closing over other messages while message ${message.messageId} was sent`);
  }

  /**
   * What a publication's outcome means: true once confirmed; false when it is to be sent again
   * (its channel closed over another message, or it is a suspect from now on, sent alone); throws
   * the message's failure otherwise.
   */
  private delivered(outcome: PublishOutcome, connection: ChannelModel, message: OutgoingMessage): boolean {
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
        throw this.unencodable(message, outcome.error);
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

  private exchangeExists(connection: ChannelModel, message: OutgoingMessage): boolean | Promise<boolean> {
    const failed = (error: unknown): never => {
      if (error instanceof TypeError || error instanceof RangeError) throw this.unencodable(message, error);
      throw error;
    };
    try {
      const exists = this.exchanges.exists(connection, message.exchange);
      return typeof exists === 'boolean' ? exists : exists.catch(failed);
    } catch (error) {
      return failed(error);
    }
  }

  /**
   * Checks again what publish() checks about amqplib, for rows written without it (an older
   * version, a hand-written INSERT): amqplib throws on some of these, and on headers over 64 KB it
   * sends a corrupt frame, for which the broker closes the whole connection, consumers included.
   * Also a name with a line break: RabbitMQ strips CR and LF from the names it declares, so a
   * passive check finds an exchange the publication then misses, again and again.
   */
  private assertEncodable(message: OutgoingMessage, headers: object): void {
    try {
      refuseLongShortString('exchange', message.exchange);
      refuseLongShortString('routingKey', message.routingKey);
      refuseLongShortString('type', message.type);
      if (message.exchange === '') refuseLineBreaks('routingKey', message.routingKey, 'queue');
      else refuseLineBreaks('exchange', message.exchange, 'exchange');
      // The delivery headers alone are a few dozen bytes: only a message's own need measuring.
      if (hasHeaders(message.headers)) encodedHeaderTableSize(headers);
    } catch (error) {
      throw this.unencodable(message, error);
    }
  }

  /** A message amqplib cannot encode (a row written without publish()'s checks): no retry can send it. */
  private unencodable(message: OutgoingMessage, error: unknown): NonRetryableError {
    return new NonRetryableError(`Message ${message.messageId} cannot be sent over AMQP as it is: ${(error as Error).message}`, { cause: error });
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

  /** The main channel on `connection` when it is open and usable now; otherwise see `publisherOn`. */
  private openPublisherOn(connection: ChannelModel): ConfirmPublisher | undefined {
    const opened = this.main?.connection === connection ? this.main.opened : undefined;
    return opened?.usable ? opened : undefined;
  }

  /** The main channel on `connection`, opened on first use and again after it closed. */
  private publisherOn(connection: ChannelModel): Promise<ConfirmPublisher> {
    const main = this.main;
    if (main && main.connection === connection) {
      return main.publisher.then((publisher) => (publisher.usable ? publisher : this.openMain(connection, main)));
    }
    return this.openMain(connection, main);
  }

  private openMain(connection: ChannelModel, replacing: MainChannel | undefined): Promise<ConfirmPublisher> {
    // Every send that finds the old channel closed opens the same new one.
    if (this.main !== replacing) return this.publisherOn(connection);
    let main: MainChannel;
    const publisher = ConfirmPublisher.open(connection, (error) => this.logBrokerClose(error, false)).then(
      (opened) => (main.opened = opened),
      (error: unknown) => {
        if (this.main === main) this.main = undefined;
        throw new TransportUnavailableError('Could not open the outbox channel', { cause: error });
      },
    );
    this.main = main = { connection, publisher };
    return publisher;
  }

  private toPublication(message: OutgoingMessage): AmqpPublication {
    return {
      messageId: message.messageId,
      exchange: message.exchange,
      routingKey: message.routingKey,
      content: Buffer.from(message.payload),
      options: {
        messageId: message.messageId,
        type: message.type,
        headers: sentHeaders(message),
        contentType: 'application/json',
        persistent: true,
        mandatory: this.options.mandatory,
        timestamp: Math.floor(message.createdAt.getTime() / 1000),
      },
    };
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

function refuseLongShortString(field: string, value: string): void {
  const bytes = Buffer.byteLength(value);
  if (bytes > AMQP_SHORT_STRING_MAX_BYTES) throw new Error(`its ${field} is ${bytes} bytes, more than AMQP's ${AMQP_SHORT_STRING_MAX_BYTES}-byte short string`);
}

/** The message's own headers with the delivery headers (attempt number, publish time) over them. */
function sentHeaders(message: OutgoingMessage): Record<string, unknown> {
  const delivery = deliveryHeaders(message);
  // Most messages have no headers of their own: one object per send instead of two.
  return hasHeaders(message.headers) ? { ...message.headers, ...delivery } : delivery;
}

/** Whether `headers` has a field amqplib would encode: for…in, as amqplib iterates. */
function hasHeaders(headers: object | null | undefined): boolean {
  for (const _name in headers) return true;
  return false;
}
