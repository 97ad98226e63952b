import type { OutboxTransport, OutgoingMessage } from './outbox-transport';

/** The outcome of one send: `{ status: 'fulfilled' }` once the receiver took the message, the reason otherwise. */
export type SendResult = PromiseSettledResult<void>;

/** The outcome of every send that went through, shared rather than built per message. */
export const SENT_RESULT: SendResult = Object.freeze({ status: 'fulfilled', value: undefined });

/** The outcome of a send that failed with `reason`. */
export function failedSend(reason: unknown): SendResult {
  return { status: 'rejected', reason };
}

/**
 * The key of a transport's send without a promise of its own, for the dispatcher's batches: a
 * symbol, so that it is no part of the `OutboxTransport` contract users implement. Each send's
 * promise, and the one `Promise.allSettled` chains to it, are garbage to collect (and, under an
 * AsyncLocalStorage, two async hook calls) for every message of a batch, while a batch needs
 * only one promise for all of them.
 */
export const SEND_THEN = Symbol('nestjs-outbox.sendThen');

/**
 * A transport that can also send with a callback: `settled` hears the same outcome `send()`
 * would have resolved or rejected with, exactly once, never synchronously throwing out of it.
 */
export interface SendsThen {
  [SEND_THEN](message: OutgoingMessage, settled: (result: SendResult) => void): void;
}

/**
 * Whether `transport`'s callback send stands for its `send()`: it offers one, and `send()` is the
 * one written beside it. A subclass that overrides `send()` (to wrap, count or fail sends), or an
 * instance whose `send` was replaced (a spy), is heard through `send()` instead, as it expects.
 */
export function sendsThen(transport: OutboxTransport): transport is OutboxTransport & SendsThen {
  if (typeof (transport as Partial<SendsThen>)[SEND_THEN] !== 'function') return false;
  let owner: object | null = transport;
  while (owner && !Object.prototype.hasOwnProperty.call(owner, SEND_THEN)) owner = Object.getPrototypeOf(owner);
  return owner !== null && transport.send === (owner as OutboxTransport).send;
}
