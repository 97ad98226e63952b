import type { InjectionToken } from '@nestjs/common';
import type { Observable } from 'rxjs';

/**
 * What the transport uses of a `@nestjs/microservices` `ClientProxy`. Described here rather than
 * imported, so that the library neither loads that package nor needs its types: every Nest client
 * (NATS, Redis, Kafka, RabbitMQ, MQTT, TCP) and any custom `ClientProxy` subclass fits.
 */
export interface EventClient {
  /** Connects, or returns the connection under way; Nest clients reject while reconnecting. */
  connect(): Promise<unknown>;
  /** Sends an event; the observable completes once the client takes it as sent (see docs/client-proxy-transport.md). */
  emit(pattern: string, data: unknown): Observable<unknown>;
  /** Nest 11's connection status: `connected`, `disconnected`, `reconnecting`, `blocked`… Absent on older clients. */
  readonly status?: Observable<string>;
}

/** Whether `value` has what the transport calls on a client. */
export function isEventClient(value: unknown): value is EventClient {
  const candidate = value as Partial<EventClient> | null | undefined;
  return typeof candidate?.connect === 'function' && typeof candidate.emit === 'function';
}

/** Whether `value` is Nest's gRPC client (`ClientGrpcProxy`), whose `emit()` always fails: gRPC has no events. */
export function isGrpcClient(value: unknown): boolean {
  return typeof (value as { getService?: unknown } | null | undefined)?.getService === 'function';
}

/** The client's `connect()` as a promise, also where a custom client throws instead of rejecting. */
export function connectClient(client: EventClient): Promise<unknown> {
  return new Promise((resolve) => resolve(client.connect()));
}

/** An injection token as a log line or an error names it. */
export function tokenName(token: InjectionToken): string {
  if (typeof token === 'string') return JSON.stringify(token);
  if (typeof token === 'symbol') return token.toString();
  return token.name || 'an anonymous class';
}
