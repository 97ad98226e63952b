import { Inject, Injectable, Logger, mixin, OnApplicationBootstrap, OnApplicationShutdown, OnModuleInit, Type } from '@nestjs/common';
import { ModuleRef } from '@nestjs/core';
import { lastValueFrom } from 'rxjs';
import { NonRetryableError, OutboxOptionsError, SendTimeoutError, TransportUnavailableError } from '../../errors';
import { printable } from '../../message/printable';
import { OUTBOX_OPTIONS } from '../../naming/injection-tokens';
import { OutboxModuleOptions } from '../../options/outbox-module-options';
import { AddressProblem, MessageAddress, OutboxTransport, OutgoingMessage } from '../../message/outbox-transport';
import { ClientConnection } from './client-connection';
import { ClientProxyOutboxTransportOptions, clientProxyTransportOptionProblems, resolveClientProxyTimeout } from './client-proxy-options';
import { connectClient, EventClient, isEventClient, isGrpcClient, tokenName } from './event-client';
import { eventPattern, eventPatternProblem } from './event-pattern';
import { outboxEnvelope } from './outbox-envelope';

/**
 * Delivers outbox messages through a `ClientProxy` of `@nestjs/microservices` that the
 * application registers (NATS, Redis, Kafka, RabbitMQ, MQTT, TCP or a custom transport): each
 * message is `emit()`ted on its `destination` (or its type) as an `OutboxEnvelope`, and counts as
 * sent when the observable `emit()` returns completes. What that completion proves depends on the
 * Nest transport: see docs/client-proxy-transport.md.
 *
 * While the client reports itself disconnected, reconnecting or blocked, or after connecting
 * failed, the transport is unavailable: its lane claims nothing, and messages wait unattempted.
 * A send that times out once connected counts as a failed attempt.
 *
 * ```ts
 * ClientsModule.register([{ name: 'EVENTS', transport: Transport.NATS, options: { servers, maxReconnectAttempts: -1 } }]),
 * OutboxModule.forRoot({ transport: ClientProxyOutboxTransport.for({ client: 'EVENTS' }) }),
 * await outbox.publish({ type: 'order.placed', destination: 'orders.placed', payload });
 * ```
 */
@Injectable()
export class ClientProxyOutboxTransport implements OutboxTransport, OnModuleInit, OnApplicationBootstrap, OnApplicationShutdown {
  /** The transport class for this client, its options checked now: a mistake fails where the module is declared. */
  static for(options: ClientProxyOutboxTransportOptions): Type<ClientProxyOutboxTransport> {
    const problems = clientProxyTransportOptionProblems(options);
    if (problems.length > 0) throw new OutboxOptionsError(problems.map((problem) => `ClientProxyOutboxTransport ${problem}`));
    const configured: ClientProxyOutboxTransportOptions = { client: options.client, timeoutMs: options.timeoutMs };
    class ConfiguredClientProxyOutboxTransport extends ClientProxyOutboxTransport {
      protected override readonly configured = configured;

      static optionProblems(moduleOptions: OutboxModuleOptions): string[] {
        return resolveClientProxyTimeout(configured.timeoutMs, moduleOptions.sendTimeoutMs).problems;
      }
    }
    return mixin(ConfiguredClientProxyOutboxTransport);
  }

  /** The options as `for()` was given them. */
  protected readonly configured?: ClientProxyOutboxTransportOptions;
  private readonly logger = new Logger(ClientProxyOutboxTransport.name);
  private client?: EventClient;
  private connection?: ClientConnection;
  private name = '';
  private timeoutMs = 0;
  private system?: string;

  /**
   * Nest creates it: inject it rather than constructing it.
   * @internal
   */
  constructor(
    @Inject(OUTBOX_OPTIONS) private readonly options: OutboxModuleOptions,
    private readonly moduleRef: ModuleRef,
  ) {}

  /** Nest lifecycle hook: checks the settings against the module's options and resolves the client. */
  onModuleInit(): void {
    if (!this.configured) throw new OutboxOptionsError(['transport: use ClientProxyOutboxTransport.for({ client }), not the bare class']);
    const { timeoutMs, problems } = resolveClientProxyTimeout(this.configured.timeoutMs, this.options.sendTimeoutMs);
    if (problems.length > 0) throw new OutboxOptionsError(problems);
    this.timeoutMs = timeoutMs;
    this.name = tokenName(this.configured.client);
    this.client = this.resolveClient(this.configured.client);
    this.system = clientMessagingSystem(this.client);
    this.connection = new ClientConnection(this.client, this.name, this.logger);
    this.connection.watch();
  }

  /** A dispatching process connects at start-up, so that an unreachable broker is known before the first claim. */
  onApplicationBootstrap(): void {
    if (this.options.dispatcherEnabled) this.connection?.connectEarly();
  }

  /** Nest lifecycle hook: stops watching the client's connection. */
  onApplicationShutdown(): void {
    this.connection?.close();
  }

  /** `messaging.system` of the send spans: the broker of the client's Nest transport (`nats`, `redis`, `kafka`, …). */
  get messagingSystem(): string | undefined {
    return this.system;
  }

  isAvailable(): boolean {
    return this.connection?.available ?? false;
  }

  onAvailable(listener: () => void): () => void {
    return this.connection?.onAvailable(listener) ?? (() => undefined);
  }

  addressProblem(address: MessageAddress): AddressProblem | undefined {
    return eventPatternProblem(address);
  }

  async send(message: OutgoingMessage): Promise<void> {
    const { client, connection } = this;
    if (!client || !connection) throw new TransportUnavailableError('ClientProxyOutboxTransport is not initialised yet');
    if (!connection.available) throw new TransportUnavailableError(`ClientProxy ${this.name} is ${connection.description}: the message waits, unattempted`);
    const pattern = eventPattern(message);
    const envelope = outboxEnvelope(message, this.options.deliveryHeaders);
    const deadline = Date.now() + this.timeoutMs;
    try {
      // Connecting first tells an unreachable broker (nothing sent, no attempt spent) from a failed emit.
      await within(connectClient(client), this.timeoutMs, () => new Error(`connect() did not settle within ${this.timeoutMs} ms`));
    } catch (error) {
      connection.connectFailed(error);
      throw new TransportUnavailableError(`ClientProxy ${this.name} could not connect: the message waits, unattempted`, { cause: error });
    }
    try {
      const emitted = lastValueFrom(client.emit(pattern, envelope), { defaultValue: undefined });
      await within(emitted, Math.max(1, deadline - Date.now()), () => new SendTimeoutError(message.messageId, this.timeoutMs));
    } catch (error) {
      throw emitFailure(error, message.messageId, pattern, this.name);
    }
  }

  private resolveClient(token: ClientProxyOutboxTransportOptions['client']): EventClient {
    let client: unknown;
    try {
      client = this.moduleRef.get(token, { strict: false });
    } catch (error) {
      throw new OutboxOptionsError([
        `ClientProxyOutboxTransport client: no provider ${this.name} is registered in the application; register the client, e.g. ClientsModule.register([{ name: ${this.name}, transport, options }]) (${(error as Error)?.message})`,
      ]);
    }
    if (!isEventClient(client)) {
      throw new OutboxOptionsError([`ClientProxyOutboxTransport client: the provider ${this.name} is not a ClientProxy (it has no connect() and emit())`]);
    }
    if (isGrpcClient(client)) {
      throw new OutboxOptionsError([
        `ClientProxyOutboxTransport client: ${this.name} is a gRPC client, and gRPC has no events (its emit() always fails); use an event transport (NATS, Redis, Kafka, RabbitMQ, MQTT, TCP)`,
      ]);
    }
    return client;
  }
}

/**
 * `work`, or the error `timedOut` makes if it has not settled within `ms`. `work` goes on, its
 * outcome handled: an emit cannot be called back.
 */
function within<T>(work: Promise<T>, ms: number, timedOut: () => Error): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(timedOut()), ms);
  });
  return Promise.race([work, deadline]).finally(() => clearTimeout(timer));
}

/** Nest's client classes by the broker they speak to, as `messaging.system` names it. */
const SYSTEM_OF_CLIENT: Record<string, string> = {
  ClientNats: 'nats',
  ClientRedis: 'redis',
  ClientKafka: 'kafka',
  ClientRMQ: 'rabbitmq',
  ClientMqtt: 'mqtt',
  ClientGrpcProxy: 'grpc',
  ClientTCP: 'tcp',
};

/** The messaging system of a Nest client, by its class (a subclass counts as its Nest parent); undefined for a custom one. */
function clientMessagingSystem(client: object): string | undefined {
  for (let proto = Object.getPrototypeOf(client); proto && proto !== Object.prototype; proto = Object.getPrototypeOf(proto)) {
    const system = SYSTEM_OF_CLIENT[(proto.constructor as { name?: string })?.name ?? ''];
    if (system) return system;
  }
  return undefined;
}

/**
 * The error a failed emit is recorded with: the client's error as its cause, under a message
 * that names the client and the pattern. Counted as an attempt and retried, except where retrying
 * cannot help.
 */
function emitFailure(error: unknown, messageId: string, pattern: string, clientName: string): Error {
  if (error instanceof SendTimeoutError) return error;
  const failed = `ClientProxy ${clientName} failed to emit message ${messageId} on "${printable(pattern)}"`;
  // nats.js refuses, before sending, a message larger than the server's max_payload: every retry would be refused too.
  if ((error as { code?: unknown } | null)?.code === 'MAX_PAYLOAD_EXCEEDED') {
    return new NonRetryableError(`${failed}: it is larger than the NATS server's max_payload; raise max_payload or shrink the message, then requeue it`, {
      cause: error,
    });
  }
  return new Error(failed, { cause: error });
}
