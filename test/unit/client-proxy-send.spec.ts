import { Logger } from '@nestjs/common';
import type { ModuleRef } from '@nestjs/core';
import type { ClientProxy } from '@nestjs/microservices';
import { NEVER, Observable, ReplaySubject, Subject, throwError } from 'rxjs';
import { NonRetryableError, OutboxOptionsError, SendTimeoutError, TransportUnavailableError } from '../../lib/errors';
import { validateOutboxOptions } from '../../lib/options/validate-options';
import { ClientProxyOutboxTransport } from '../../lib/transport/client-proxy/client-proxy-outbox.transport';
import { EventClient } from '../../lib/transport/client-proxy/event-client';
import { OutgoingMessage } from '../../lib/message/outbox-transport';

// Every Nest client fits what the transport asks of one (checked by the compiler).
const fits: (client: ClientProxy) => EventClient = (client) => client;
void fits;

const TIMEOUT_MS = 200;

// The transport logs each change of availability; these tests provoke many.
Logger.overrideLogger(false);

/** A client whose connect(), emit() and status the test scripts. */
class FakeClient implements EventClient {
  readonly emitted: { pattern: string; data: unknown }[] = [];
  readonly statuses = new ReplaySubject<string>(1);
  connectCalls = 0;
  connectResult: () => Promise<unknown> = () => Promise.resolve();
  emitResult: () => Observable<unknown> = () => new Observable((subscriber) => void setImmediate(() => (subscriber.next(undefined), subscriber.complete())));

  get status(): Observable<string> {
    return this.statuses.asObservable();
  }

  connect(): Promise<unknown> {
    this.connectCalls++;
    return this.connectResult();
  }

  emit(pattern: string, data: unknown): Observable<unknown> {
    this.emitted.push({ pattern, data });
    return this.emitResult();
  }
}

const message = (overrides: Partial<OutgoingMessage> = {}): OutgoingMessage => ({
  messageId: '0b7e7c1a-5b0e-4f0e-9a57-1f3c7e0f2d11',
  type: 'order.placed',
  transport: 'events',
  exchange: '',
  routingKey: '',
  destination: 'orders.placed',
  payload: '{"orderId":7}',
  headers: {},
  attempts: 0,
  createdAt: new Date('2026-01-02T03:04:05.006Z'),
  ...overrides,
});

function transportFor(client: unknown, options: { dispatcherEnabled?: boolean } = {}): ClientProxyOutboxTransport {
  const Transport = ClientProxyOutboxTransport.for({ client: 'EVENTS', timeoutMs: TIMEOUT_MS });
  const moduleRef = {
    get: (token: unknown) => {
      if (client === undefined) throw new Error(`Nest could not find ${String(token)} element`);
      return client;
    },
  } as unknown as ModuleRef;
  const transport = new Transport(validateOutboxOptions({ dispatcherEnabled: options.dispatcherEnabled ?? false }), moduleRef);
  transport.onModuleInit();
  return transport;
}

describe('ClientProxyOutboxTransport.send', () => {
  let client: FakeClient;
  let transport: ClientProxyOutboxTransport;
  beforeEach(() => {
    client = new FakeClient();
    transport = transportFor(client);
  });
  afterEach(() => transport.onApplicationShutdown());

  it('emits the envelope on the destination, and resolves when the emit completes', async () => {
    await transport.send(message());
    expect(client.emitted).toEqual([
      {
        pattern: 'orders.placed',
        data: {
          id: message().messageId,
          type: 'order.placed',
          payload: { orderId: 7 },
          headers: { 'outbox-attempt': 1, 'outbox-published-at': '2026-01-02T03:04:05.006Z' },
          attempt: 1,
          publishedAt: '2026-01-02T03:04:05.006Z',
        },
      },
    ]);
  });

  it('emits on the type when the message has no destination', async () => {
    await transport.send(message({ destination: '' }));
    expect(client.emitted[0].pattern).toBe('order.placed');
  });

  it('gives the message back unattempted when connecting fails, and is unavailable from then on', async () => {
    client.connectResult = () => Promise.reject(new Error('ECONNREFUSED'));
    const error = await transport.send(message()).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(TransportUnavailableError);
    expect((error as Error).cause).toEqual(new Error('ECONNREFUSED'));
    expect(client.emitted).toEqual([]);
    expect(transport.isAvailable()).toBe(false);
    await expect(transport.send(message())).rejects.toThrow(/not connected/);
  });

  it('gives the message back unattempted when connecting does not settle in time', async () => {
    client.connectResult = () => new Promise(() => undefined);
    const started = Date.now();
    await expect(transport.send(message())).rejects.toBeInstanceOf(TransportUnavailableError);
    expect(Date.now() - started).toBeLessThan(TIMEOUT_MS + 1_000);
  });

  it('fails the attempt when the emit does not complete in time', async () => {
    client.emitResult = () => NEVER;
    const started = Date.now();
    await expect(transport.send(message())).rejects.toBeInstanceOf(SendTimeoutError);
    expect(Date.now() - started).toBeGreaterThanOrEqual(TIMEOUT_MS - 5);
    expect(transport.isAvailable()).toBe(true);
  });

  it('fails the attempt with the client error as its cause when the emit fails', async () => {
    const cause = new Error('PUBLISH refused');
    client.emitResult = () => throwError(() => cause);
    const error = await transport.send(message()).catch((e: unknown) => e);
    expect(error).not.toBeInstanceOf(TransportUnavailableError);
    expect(error).toMatchObject({ message: expect.stringContaining('"orders.placed"'), cause });
  });

  it('sends a message larger than the NATS server takes to MANUAL_REQUIRED', async () => {
    client.emitResult = () => throwError(() => Object.assign(new Error('MAX_PAYLOAD_EXCEEDED'), { code: 'MAX_PAYLOAD_EXCEEDED' }));
    await expect(transport.send(message())).rejects.toBeInstanceOf(NonRetryableError);
  });

  it('leaves no unhandled rejection when an emit fails after its send timed out', async () => {
    const unhandled: unknown[] = [];
    const record = (reason: unknown) => unhandled.push(reason);
    process.on('unhandledRejection', record);
    try {
      const late = new Subject<unknown>();
      client.emitResult = () => late;
      await expect(transport.send(message())).rejects.toBeInstanceOf(SendTimeoutError);
      late.error(new Error('too late'));
      client.connectResult = () => Promise.reject(new Error('refused'));
      await expect(transport.send(message())).rejects.toBeInstanceOf(TransportUnavailableError);
      await new Promise((resolve) => setTimeout(resolve, 50));
      expect(unhandled).toEqual([]);
    } finally {
      process.off('unhandledRejection', record);
    }
  });
});

describe('ClientProxyOutboxTransport availability', () => {
  let client: FakeClient;
  let transport: ClientProxyOutboxTransport;
  beforeEach(() => {
    client = new FakeClient();
    transport = transportFor(client);
  });
  afterEach(() => transport.onApplicationShutdown());

  it('is available before the client reports anything', () => {
    expect(transport.isAvailable()).toBe(true);
  });

  it('follows the status the client reports, and wakes its listeners when it is connected again', () => {
    const woken = jest.fn();
    transport.onAvailable(woken);
    client.statuses.next('connected');
    for (const status of ['disconnected', 'reconnecting', 'closed', 'blocked']) {
      client.statuses.next(status);
      expect(transport.isAvailable()).toBe(false);
      client.statuses.next('connected');
      expect(transport.isAvailable()).toBe(true);
    }
    expect(woken).toHaveBeenCalledTimes(4);
    client.statuses.next('blocked');
    client.statuses.next('unblocked');
    expect(transport.isAvailable()).toBe(true);
  });

  it('ignores the statuses of a Kafka reply consumer', () => {
    for (const status of ['rebalancing', 'crashed', 'stopped', 'something-new']) {
      client.statuses.next(status);
      expect(transport.isAvailable()).toBe(true);
    }
  });

  it('refuses sends while unavailable, without emitting or connecting', async () => {
    client.statuses.next('reconnecting');
    await expect(transport.send(message())).rejects.toBeInstanceOf(TransportUnavailableError);
    expect(client.emitted).toEqual([]);
    expect(client.connectCalls).toBe(0);
  });

  it('stops calling a listener once it unsubscribes, and survives one that throws', () => {
    const thrower = jest.fn(() => {
      throw new Error('listener bug');
    });
    const unsubscribe = transport.onAvailable(thrower);
    const after = jest.fn();
    transport.onAvailable(after);
    client.statuses.next('disconnected');
    client.statuses.next('connected');
    expect(thrower).toHaveBeenCalledTimes(1);
    expect(after).toHaveBeenCalledTimes(1);
    unsubscribe();
    client.statuses.next('disconnected');
    client.statuses.next('connected');
    expect(thrower).toHaveBeenCalledTimes(1);
  });

  it('connects at start-up in a dispatching process, and learns an unreachable broker from it', async () => {
    transport.onApplicationShutdown();
    client = new FakeClient();
    client.connectResult = () => Promise.reject(new Error('ECONNREFUSED'));
    transport = transportFor(client, { dispatcherEnabled: true });
    transport.onApplicationBootstrap();
    await new Promise((resolve) => setImmediate(resolve));
    expect(client.connectCalls).toBe(1);
    expect(transport.isAvailable()).toBe(false);
  });

  it('does not connect at start-up in a process that only publishes', () => {
    transport.onApplicationBootstrap();
    expect(client.connectCalls).toBe(0);
  });
});

describe('ClientProxyOutboxTransport probes', () => {
  beforeEach(() => jest.useFakeTimers());
  afterEach(() => jest.useRealTimers());

  it('asks a lost client to connect, backing off, until it does', async () => {
    const client = new FakeClient();
    const transport = transportFor(client);
    const woken = jest.fn();
    transport.onAvailable(woken);
    client.connectResult = () => Promise.reject(new Error('ECONNREFUSED'));
    client.statuses.next('disconnected');
    await jest.advanceTimersByTimeAsync(1_000);
    expect(client.connectCalls).toBe(1);
    await jest.advanceTimersByTimeAsync(1_999);
    expect(client.connectCalls).toBe(1);
    await jest.advanceTimersByTimeAsync(1);
    expect(client.connectCalls).toBe(2);
    client.connectResult = () => Promise.resolve();
    await jest.advanceTimersByTimeAsync(4_000);
    expect(client.connectCalls).toBe(3);
    expect(transport.isAvailable()).toBe(true);
    expect(woken).toHaveBeenCalledTimes(1);
    await jest.advanceTimersByTimeAsync(60_000);
    expect(client.connectCalls).toBe(3);
    transport.onApplicationShutdown();
  });

  it('does not take a blocked client for available because connect() succeeds', async () => {
    const client = new FakeClient();
    const transport = transportFor(client);
    client.statuses.next('blocked');
    await jest.advanceTimersByTimeAsync(120_000);
    expect(client.connectCalls).toBe(0);
    expect(transport.isAvailable()).toBe(false);
    transport.onApplicationShutdown();
  });

  it('does not let a probe answered after a newer loss end it', async () => {
    const client = new FakeClient();
    const transport = transportFor(client);
    let answer!: () => void;
    client.connectResult = () => new Promise<void>((resolve) => (answer = resolve));
    client.statuses.next('disconnected');
    await jest.advanceTimersByTimeAsync(1_000);
    expect(client.connectCalls).toBe(1);
    client.statuses.next('connected');
    client.statuses.next('reconnecting');
    answer();
    await jest.advanceTimersByTimeAsync(0);
    expect(transport.isAvailable()).toBe(false);
    transport.onApplicationShutdown();
  });

  it('stops probing at shutdown', async () => {
    const client = new FakeClient();
    const transport = transportFor(client);
    client.statuses.next('disconnected');
    transport.onApplicationShutdown();
    await jest.advanceTimersByTimeAsync(60_000);
    expect(client.connectCalls).toBe(0);
  });
});

describe('ClientProxyOutboxTransport start-up', () => {
  it('names the token when no such client is registered', () => {
    expect(() => transportFor(undefined)).toThrow(OutboxOptionsError);
    expect(() => transportFor(undefined)).toThrow(/no provider "EVENTS" is registered/);
  });

  it('refuses a provider that is not a client', () => {
    expect(() => transportFor({ emit: () => NEVER })).toThrow(/"EVENTS" is not a ClientProxy/);
  });

  it('refuses a gRPC client, which has no events', () => {
    expect(() => transportFor(Object.assign(new FakeClient(), { getService: () => ({}) }))).toThrow(/gRPC has no events/);
  });

  it('refuses the bare class', () => {
    const transport = new ClientProxyOutboxTransport(validateOutboxOptions({}), {} as ModuleRef);
    expect(() => transport.onModuleInit()).toThrow(/ClientProxyOutboxTransport.for/);
  });
});
