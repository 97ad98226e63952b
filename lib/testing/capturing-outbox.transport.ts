import { Injectable } from '@nestjs/common';
import { TransportUnavailableError } from '../errors/transport.errors';
import type { OutboxTransport, OutgoingMessage } from '../message/outbox-transport';

/** A message the dispatcher sent through `CapturingOutboxTransport`, with its payload parsed. */
export interface CapturedMessage<T = unknown> extends Omit<OutgoingMessage, 'payload' | 'bizKey' | 'orderingKey'> {
  /** The `bizKey` it was published with; null without one. */
  bizKey: string | null;
  /** The `orderingKey` it was published with; null without one. */
  orderingKey: string | null;
  /** The payload as the application published it (the stored JSON text, parsed). */
  payload: T;
  /** The JSON text as stored and sent. */
  payloadText: string;
}

/** A send the transport failed because a test asked it to. */
export interface FailedSend {
  /** The message whose send failed. */
  message: OutgoingMessage;
  /** The error the send failed with. */
  error: Error;
}

/** The error a send fails with, or a function that makes one for the message. */
export type SendFailure = Error | ((message: OutgoingMessage) => Error);

/**
 * An `OutboxTransport` for an application's own tests: it sends nowhere and records what the
 * dispatcher sent, so a test can assert what was published without a broker. Pass the class, as
 * for any transport: `OutboxModule.forRoot({ transport: CapturingOutboxTransport })`, then get the
 * instance with `OutboxTestKit.from(app).transport`.
 *
 * Sends can be made to fail (`failNext`, `failAll`) to test retries, backoff and MANUAL_REQUIRED,
 * and the transport can be made unavailable (`setAvailable(false)`) to test an outage: what a
 * rejection costs a message is as with a real transport (see `OutboxTransport`).
 */
@Injectable()
export class CapturingOutboxTransport implements OutboxTransport {
  private readonly sent: CapturedMessage[] = [];
  private readonly failed: FailedSend[] = [];
  private readonly availabilityListeners = new Set<() => void>();
  private failing: { remaining: number; failure?: SendFailure } | undefined;
  private available = true;

  /** Every message sent so far, in the order the sends resolved. */
  get messages(): readonly CapturedMessage[] {
    return this.sent;
  }

  /** Every send failed on purpose so far (`failNext`, `failAll`). */
  get failures(): readonly FailedSend[] {
    return this.failed;
  }

  /** The messages sent so far with this `type`. */
  ofType<T = unknown>(type: string): CapturedMessage<T>[] {
    return this.sent.filter((message) => message.type === type) as CapturedMessage<T>[];
  }

  /** Forgets the messages and failures recorded so far; failing and availability settings stay. */
  clear(): void {
    this.sent.length = 0;
    this.failed.length = 0;
  }

  /**
   * Fails the next `count` sends with `failure` (default: a plain `Error`, which counts an attempt
   * and retries with backoff; a `NonRetryableError` sends the message to MANUAL_REQUIRED at once).
   */
  failNext(count = 1, failure?: SendFailure): void {
    if (!Number.isInteger(count) || count < 0) throw new RangeError(`failNext(count): count must be a non-negative integer, got ${count}`);
    this.failing = count === 0 ? undefined : { remaining: count, failure };
  }

  /** Fails every send until `stopFailing()`. */
  failAll(failure?: SendFailure): void {
    this.failing = { remaining: Infinity, failure };
  }

  /** Sends succeed again. */
  stopFailing(): void {
    this.failing = undefined;
  }

  /**
   * While unavailable the dispatcher claims nothing (messages stay PENDING and spend no attempts);
   * made available again, it is told so and dispatches at once, as after a broker outage. A send
   * of a claim that was already under way is refused with `TransportUnavailableError`, as a real
   * transport refuses it once its broker is gone: the message is given back, no attempt spent.
   */
  setAvailable(available: boolean): void {
    const returning = available && !this.available;
    this.available = available;
    if (returning) for (const listener of [...this.availabilityListeners]) listener();
  }

  isAvailable(): boolean {
    return this.available;
  }

  onAvailable(listener: () => void): () => void {
    this.availabilityListeners.add(listener);
    return () => this.availabilityListeners.delete(listener);
  }

  async send(message: OutgoingMessage): Promise<void> {
    if (!this.available) throw new TransportUnavailableError(`CapturingOutboxTransport: unavailable, as the test asked; ${message.messageId} was not sent`);
    // Copied: the dispatcher's claimed row carries more than a transport is given.
    const outgoing: OutgoingMessage & { bizKey: string | null; orderingKey: string | null } = {
      messageId: message.messageId,
      type: message.type,
      transport: message.transport,
      exchange: message.exchange,
      routingKey: message.routingKey,
      destination: message.destination,
      payload: message.payload,
      headers: structuredClone(message.headers ?? {}),
      attempts: message.attempts,
      createdAt: message.createdAt,
      bizKey: message.bizKey ?? null,
      orderingKey: message.orderingKey ?? null,
    };
    if (this.failing && this.failing.remaining > 0) {
      this.failing.remaining -= 1;
      const { failure } = this.failing;
      if (this.failing.remaining === 0) this.failing = undefined;
      const error =
        typeof failure === 'function'
          ? failure(outgoing)
          : (failure ?? new Error(`CapturingOutboxTransport: send of ${message.messageId} failed, as the test asked`));
      this.failed.push({ message: outgoing, error });
      throw error;
    }
    const { payload, ...rest } = outgoing;
    this.sent.push({ ...rest, payload: parsed(payload), payloadText: payload });
  }
}

function parsed(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}
