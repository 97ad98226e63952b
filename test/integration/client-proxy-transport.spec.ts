import { Controller, Logger, Module, Type } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import {
  ClientProviderOptions,
  ClientProxy,
  ClientProxyFactory,
  ClientsModule,
  EventPattern,
  MicroserviceOptions,
  Payload,
  Transport,
} from '@nestjs/microservices';
import { Test, TestingModule } from '@nestjs/testing';
import { randomUUID } from 'node:crypto';
import { createConnection } from 'node:net';
import { OutboxOptionsError, SendTimeoutError, TransportUnavailableError } from '../../lib/errors';
import { OUTBOX_OPTIONS } from '../../lib/naming/injection-tokens';
import { validateOutboxOptions } from '../../lib/options/validate-options';
import { ClientProxyOutboxTransport } from '../../lib/transport/client-proxy/client-proxy-outbox.transport';
import { OutboxEnvelope } from '../../lib/transport/client-proxy/outbox-envelope';
import { OutgoingMessage } from '../../lib/message/outbox-transport';
import { brokerName } from '../support/broker-names';
import { describeOn, testDatabase } from '../support/database';
import { closeFailedStart } from '../support/failed-start';
import { TcpProxy } from '../support/tcp-proxy';
import { createTestApp, OrderPayments } from '../support/test-app';
import { STARTUP_TIMEOUT_MS, timeoutFor, WAIT_TIMEOUT_MS, waitUntil } from '../support/wait';

/** Where the real servers are; CI and developers override through the environment. */
const NATS_URL = process.env.NATS_URL ?? 'nats://127.0.0.1:4222';
const REDIS_URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';

/** Subjects and channels of this file: the consumers below listen on these. */
const NATS_SUBJECT = brokerName('it-client-proxy.nats.orders');
const NATS_TYPE = brokerName('it-client-proxy.nats.order-typed');
const REDIS_CHANNEL = brokerName('it-client-proxy.redis.orders');
const MARKER = brokerName('it-client-proxy.marker');

/** Short enough to keep the black-hole tests quick, long enough that a loaded machine still sends in time. */
const SEND_TIMEOUT_MS = 2_000;

const received = { nats: [] as OutboxEnvelope[], redis: [] as OutboxEnvelope[], markers: new Set<string>() };

/** The envelopes of message `id` a consumer received. */
const receivedWithId = (envelopes: OutboxEnvelope[], id: string) => envelopes.filter((envelope) => envelope.id === id);

/** Waits until a consumer received message `id`, and returns every envelope of it received by then. */
async function arrival(envelopes: OutboxEnvelope[], id: string): Promise<OutboxEnvelope[]> {
  await waitUntil(() => receivedWithId(envelopes, id).length > 0, `message ${id} reached the consumer`);
  return receivedWithId(envelopes, id);
}

// Nest 12 types an event handler's payload from the pattern (`{}` for a plain string pattern);
// taking `unknown` and narrowing here type-checks on Nest 11 and 12 alike.
@Controller()
class NatsConsumer {
  @EventPattern(NATS_SUBJECT)
  onOrder(@Payload() payload: unknown): void {
    const envelope = payload as OutboxEnvelope;
    received.nats.push(envelope);
  }

  @EventPattern(NATS_TYPE)
  onTypedOrder(@Payload() payload: unknown): void {
    const envelope = payload as OutboxEnvelope;
    received.nats.push(envelope);
  }

  @EventPattern(MARKER)
  onMarker(@Payload() payload: unknown): void {
    const envelope = payload as OutboxEnvelope;
    received.markers.add(envelope.id);
  }
}

@Controller()
class RedisConsumer {
  @EventPattern(REDIS_CHANNEL)
  onOrder(@Payload() payload: unknown): void {
    const envelope = payload as OutboxEnvelope;
    received.redis.push(envelope);
  }

  @EventPattern(MARKER)
  onMarker(@Payload() payload: unknown): void {
    const envelope = payload as OutboxEnvelope;
    received.markers.add(envelope.id);
  }
}

@Module({ controllers: [NatsConsumer] })
class NatsConsumerModule {}

@Module({ controllers: [RedisConsumer] })
class RedisConsumerModule {}

const redisAddress = (url: string) => ({ host: new URL(url).hostname, port: Number(new URL(url).port || 6379) });
const natsClient = (url: string): ClientProviderOptions => ({
  name: 'EVENTS',
  transport: Transport.NATS,
  // The client keeps reconnecting, quickly, for as long as the test needs.
  options: { servers: [url], maxReconnectAttempts: -1, reconnectTimeWait: 100 },
});
// No retryAttempts: Nest's Redis client then drops its connections at the first loss, and only
// a connect() (the transport's probe) makes new ones.
const redisClient = (url: string): ClientProviderOptions => ({ name: 'EVENTS', transport: Transport.REDIS, options: redisAddress(url) });

/** An application that registers `client` and the transport, as a user's would. */
async function startPublisher(client: ClientProviderOptions): Promise<{ context: TestingModule; transport: ClientProxyOutboxTransport }> {
  const TransportClass: Type<ClientProxyOutboxTransport> = ClientProxyOutboxTransport.for({ client: 'EVENTS', timeoutMs: SEND_TIMEOUT_MS });
  const context = await Test.createTestingModule({
    imports: [ClientsModule.register([client])],
    providers: [{ provide: OUTBOX_OPTIONS, useValue: validateOutboxOptions({ sendTimeoutMs: 2 * SEND_TIMEOUT_MS }) }, TransportClass],
  }).compile();
  context.useLogger(false);
  await context.init();
  return { context, transport: context.get(TransportClass) };
}

const message = (overrides: Partial<OutgoingMessage> = {}): OutgoingMessage => ({
  messageId: randomUUID(),
  type: 'order.placed',
  transport: 'events',
  exchange: '',
  routingKey: '',
  destination: '',
  payload: JSON.stringify({ orderId: 42, lines: [{ sku: 'A-1', quantity: 2 }], note: null, total: '12.50' }),
  headers: { tenant: 'acme', 'trace-id': 'abc' },
  attempts: 1,
  createdAt: new Date('2026-03-04T05:06:07.089Z'),
  ...overrides,
});

/** The envelope a consumer must receive for `sent`, written out rather than computed by the code under test. */
const envelopeOf = (sent: OutgoingMessage): OutboxEnvelope => ({
  id: sent.messageId,
  type: sent.type,
  payload: { orderId: 42, lines: [{ sku: 'A-1', quantity: 2 }], note: null, total: '12.50' },
  headers: { tenant: 'acme', 'trace-id': 'abc', 'outbox-attempt': sent.attempts + 1, 'outbox-published-at': '2026-03-04T05:06:07.089Z' },
  attempt: sent.attempts + 1,
  publishedAt: '2026-03-04T05:06:07.089Z',
});

/** Sends markers until one arrives: the consumers' subscriptions are in place, and the path works end to end. */
async function markerArrives(transport: ClientProxyOutboxTransport): Promise<void> {
  let id = '';
  await waitUntil(async () => {
    if (received.markers.has(id)) return true;
    id = randomUUID();
    await transport.send(message({ messageId: id, destination: MARKER })).catch(() => undefined);
    await new Promise((resolve) => setTimeout(resolve, 100));
    return received.markers.has(id);
  }, 'a marker reached the consumer');
}

async function checkAnswers(name: string, url: string, variable: string, defaultPort: number): Promise<void> {
  const { hostname, port } = new URL(url);
  await new Promise<void>((resolve, reject) => {
    const socket = createConnection({ host: hostname, port: Number(port || defaultPort) }, () => (socket.destroy(), resolve()));
    socket.setTimeout(5_000, () => socket.destroy(new Error('timed out')));
    socket.on('error', (error) => reject(new Error(`${name} does not answer at ${url} (set ${variable}): ${error.message}`)));
  });
}

/** A proxy to the server at `url` (its port, else `defaultPort`), which the test can black-hole or cut. */
function proxyTo(url: string, defaultPort: number): Promise<TcpProxy> {
  const target = new URL(url);
  return TcpProxy.start(target.hostname, Number(target.port || defaultPort));
}

describeOn(['postgres'], 'ClientProxyOutboxTransport on real NATS and Redis servers (no database: runs in one project)', () => {
  const consumers: { close(): Promise<void> }[] = [];

  beforeAll(
    async () => {
      await Promise.all([checkAnswers('NATS', NATS_URL, 'NATS_URL', 4222), checkAnswers('Redis', REDIS_URL, 'REDIS_URL', 6379)]);
      const nats = await NestFactory.createMicroservice<MicroserviceOptions>(NatsConsumerModule, {
        transport: Transport.NATS,
        options: { servers: [NATS_URL] },
        logger: false,
      });
      const redis = await NestFactory.createMicroservice<MicroserviceOptions>(RedisConsumerModule, {
        transport: Transport.REDIS,
        options: redisAddress(REDIS_URL),
        logger: false,
      });
      for (const consumer of [nats, redis]) {
        await consumer.listen();
        consumers.push(consumer);
      }
      // The consumers' subscriptions are in place once a marker went through each.
      for (const client of [natsClient(NATS_URL), redisClient(REDIS_URL)]) {
        const { context, transport } = await startPublisher(client);
        await markerArrives(transport);
        await context.close();
      }
    },
    timeoutFor(STARTUP_TIMEOUT_MS, WAIT_TIMEOUT_MS, WAIT_TIMEOUT_MS),
  );

  afterAll(async () => {
    for (const consumer of consumers) await consumer.close();
  });

  // Each test's own publisher and proxy, closed after it whatever happened.
  const cleanups: (() => Promise<void>)[] = [];
  afterEach(async () => {
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  });
  const publisher = async (client: ClientProviderOptions) => {
    const started = await startPublisher(client);
    cleanups.push(() => started.context.close());
    return started;
  };

  describe('delivery', () => {
    it(
      'NATS: an @EventPattern handler receives the envelope on the destination, and on the type without one',
      async () => {
        const { transport } = await publisher(natsClient(NATS_URL));
        await markerArrives(transport);
        const onDestination = message({ destination: NATS_SUBJECT });
        const onType = message({ type: NATS_TYPE, attempts: 0 });
        await transport.send(onDestination);
        await transport.send(onType);
        expect(await arrival(received.nats, onDestination.messageId)).toEqual([envelopeOf(onDestination)]);
        expect(await arrival(received.nats, onType.messageId)).toEqual([envelopeOf(onType)]);
      },
      timeoutFor(STARTUP_TIMEOUT_MS, WAIT_TIMEOUT_MS),
    );

    it(
      'Redis: an @EventPattern handler receives the envelope on the destination channel',
      async () => {
        const { transport } = await publisher(redisClient(REDIS_URL));
        await markerArrives(transport);
        const sent = message({ destination: REDIS_CHANNEL, attempts: 4 });
        await transport.send(sent);
        expect(await arrival(received.redis, sent.messageId)).toEqual([envelopeOf(sent)]);
      },
      timeoutFor(STARTUP_TIMEOUT_MS, WAIT_TIMEOUT_MS),
    );

    it(
      'NATS: a message a transaction published reaches the consumer from its OutboxModule lane, and is DONE',
      async () => {
        const database = testDatabase('it_client_proxy');
        await database.reset();
        const client: ClientProxy = ClientProxyFactory.create(natsClient(NATS_URL));
        cleanups.push(async () => client.close());
        const app = await createTestApp({
          database,
          statics: { transports: { events: ClientProxyOutboxTransport.for({ client: 'EVENTS', timeoutMs: SEND_TIMEOUT_MS }) } },
          outbox: { sendTimeoutMs: 2 * SEND_TIMEOUT_MS },
          providers: [{ provide: 'EVENTS', useValue: client }],
          logger: false,
        });
        cleanups.push(() => app.close());
        const { order, messageId } = await app.get(OrderPayments).pay(NATS_SUBJECT);
        const [envelope] = await arrival(received.nats, messageId);
        expect(envelope).toMatchObject({ id: messageId, type: 'order.paid', payload: { orderId: order.id }, attempt: 1 });
        await waitUntil(async () => (await database.statusCounts()).DONE === 1, 'the message is DONE');
      },
      timeoutFor(STARTUP_TIMEOUT_MS, WAIT_TIMEOUT_MS, WAIT_TIMEOUT_MS),
    );
  });

  describe('a black hole', () => {
    it(
      'Redis: a send whose PUBLISH is never answered fails as an attempt within its timeout',
      async () => {
        const proxy = await proxyTo(REDIS_URL, 6379);
        cleanups.push(() => proxy.close());
        const { transport } = await publisher(redisClient(proxy.rewrite(REDIS_URL)));
        await markerArrives(transport);
        proxy.blackHole();
        const started = Date.now();
        const error = await transport.send(message({ destination: REDIS_CHANNEL })).catch((e: unknown) => e);
        const elapsed = Date.now() - started;
        expect(error).toBeInstanceOf(SendTimeoutError);
        expect(elapsed).toBeGreaterThanOrEqual(SEND_TIMEOUT_MS - 50);
        expect(elapsed).toBeLessThan(SEND_TIMEOUT_MS + 5_000);
        // A timeout says nothing of the connection: the next messages are still attempted.
        expect(transport.isAvailable()).toBe(true);
        // Closing the client waits for QUIT's answer: let the loss show first.
        await proxy.close();
        await waitUntil(() => !transport.isAvailable(), 'the client saw its connection close');
      },
      timeoutFor(STARTUP_TIMEOUT_MS, WAIT_TIMEOUT_MS, WAIT_TIMEOUT_MS),
    );

    it(
      'NATS: a send into a black hole completes, as core NATS only proves the client took the message',
      async () => {
        const proxy = await proxyTo(NATS_URL, 4222);
        cleanups.push(() => proxy.close());
        const { transport } = await publisher(natsClient(proxy.rewrite(NATS_URL)));
        await markerArrives(transport);
        proxy.blackHole();
        const lost = message({ destination: NATS_SUBJECT });
        await expect(transport.send(lost)).resolves.toBeUndefined();
        expect(received.nats.map((envelope) => envelope.id)).not.toContain(lost.messageId);
      },
      timeoutFor(STARTUP_TIMEOUT_MS, WAIT_TIMEOUT_MS),
    );
  });

  describe('an outage', () => {
    it(
      'NATS: while the connection is cut the transport is unavailable and gives sends back unattempted; it returns by itself',
      async () => {
        const proxy = await proxyTo(NATS_URL, 4222);
        cleanups.push(() => proxy.close());
        const { transport } = await publisher(natsClient(proxy.rewrite(NATS_URL)));
        await markerArrives(transport);
        const woken = jest.fn();
        transport.onAvailable(woken);
        proxy.cut();
        await waitUntil(() => !transport.isAvailable(), 'the transport took the client for disconnected');
        await expect(transport.send(message({ destination: NATS_SUBJECT }))).rejects.toBeInstanceOf(TransportUnavailableError);
        proxy.restore();
        await waitUntil(() => transport.isAvailable(), 'the client reconnected');
        expect(woken).toHaveBeenCalled();
        await markerArrives(transport);
      },
      timeoutFor(STARTUP_TIMEOUT_MS, WAIT_TIMEOUT_MS, WAIT_TIMEOUT_MS, WAIT_TIMEOUT_MS),
    );

    it(
      'Redis: a client that drops its connections at the loss is brought back by the probes',
      async () => {
        const proxy = await proxyTo(REDIS_URL, 6379);
        cleanups.push(() => proxy.close());
        const { transport } = await publisher(redisClient(proxy.rewrite(REDIS_URL)));
        await markerArrives(transport);
        const woken = jest.fn();
        transport.onAvailable(woken);
        proxy.cut();
        await waitUntil(() => !transport.isAvailable(), 'the transport took the client for disconnected');
        await expect(transport.send(message({ destination: REDIS_CHANNEL }))).rejects.toBeInstanceOf(TransportUnavailableError);
        proxy.restore();
        await waitUntil(() => transport.isAvailable(), 'a probe reconnected the client');
        expect(woken).toHaveBeenCalled();
        await markerArrives(transport);
      },
      timeoutFor(STARTUP_TIMEOUT_MS, WAIT_TIMEOUT_MS, WAIT_TIMEOUT_MS, WAIT_TIMEOUT_MS),
    );

    it(
      'a client that cannot connect gives sends back unattempted, and the transport is unavailable',
      async () => {
        const proxy = await proxyTo(NATS_URL, 4222);
        cleanups.push(() => proxy.close());
        proxy.cut();
        const { transport } = await publisher(natsClient(proxy.rewrite(NATS_URL)));
        await expect(transport.send(message({ destination: NATS_SUBJECT }))).rejects.toBeInstanceOf(TransportUnavailableError);
        expect(transport.isAvailable()).toBe(false);
      },
      timeoutFor(STARTUP_TIMEOUT_MS, WAIT_TIMEOUT_MS),
    );
  });

  it('refuses to start, naming the token, when the application registers no such client', async () => {
    const TransportClass = ClientProxyOutboxTransport.for({ client: 'MISSING_EVENTS' });
    const context = await Test.createTestingModule({
      imports: [ClientsModule.register([natsClient(NATS_URL)])],
      providers: [{ provide: OUTBOX_OPTIONS, useValue: validateOutboxOptions({}) }, TransportClass],
    }).compile();
    context.useLogger(false);
    const error = await context.init().catch((e: unknown) => e);
    await closeFailedStart(context);
    expect(error).toBeInstanceOf(OutboxOptionsError);
    expect((error as Error).message).toContain('"MISSING_EVENTS"');
  });
});

// The consumers' and clients' own loggers are quiet; the transport's warnings are what the tests provoke.
Logger.overrideLogger(false);
