import { channel } from 'node:diagnostics_channel';

/**
 * The library's events, on `node:diagnostics_channel`: subscribe with
 * `diagnostics_channel.subscribe(OUTBOX_EVENTS.sent, (event) => …)`. Publishing costs a property
 * check when nobody subscribes: events are built only for a channel with subscribers.
 */
export const OUTBOX_EVENTS = {
  /** An outbox message was stored, in the caller's transaction (which may still roll back). */
  published: 'nestjs-outbox:published',
  /** A transport took responsibility for an outbox message (a confirm, a 2xx). */
  sent: 'nestjs-outbox:sent',
  /** A failed attempt (outbox send or inbox handler) was scheduled for a retry. */
  retryScheduled: 'nestjs-outbox:retry-scheduled',
  /** A message or delivery was given up on: MANUAL_REQUIRED, for an operator. */
  manualRequired: 'nestjs-outbox:manual-required',
  /** Messages were abandoned (`cancel()`, `OutboxAdmin.abandon`): never sent or processed. */
  abandoned: 'nestjs-outbox:abandoned',
  /** Settles found their claims taken over (the stuck detector reclaimed them): another try sends or processes them. */
  claimLost: 'nestjs-outbox:claim-lost',
  /** A delivery or webhook reached an inbox consumer. */
  received: 'nestjs-outbox:received',
  /** A delivery the inbox had already stored or processed was skipped. */
  duplicate: 'nestjs-outbox:duplicate',
  /** An inbox handler's effects committed with its inbox row. */
  handled: 'nestjs-outbox:handled',
} as const;

/** Which table an event is about. */
export type OutboxTable = 'outbox' | 'inbox';

export interface PublishedEvent {
  messageId: string;
  type: string;
  transport: string;
}

export interface SentEvent {
  messageId: string;
  type: string;
  transport: string;
  /** 1 for the first attempt. */
  attempt: number;
  /** How long the transport's send took. */
  sendMs: number;
  /** From the message's `created_at` (the database's clock, at publish) to the acknowledgement (this process's clock); 0 if the clocks disagree. */
  publishToSentMs: number;
}

export interface RetryScheduledEvent {
  table: OutboxTable;
  messageId: string;
  type: string;
  /** The outbox message's transport, or the inbox delivery's consumer. */
  transport?: string;
  consumer?: string;
  /** The attempt that failed. */
  attempt: number;
  /** The wait before the next attempt, where known (the inbox's transactional mode hands the delivery back to the broker). */
  delayMs?: number;
  error: string;
  /** The error's class name, e.g. `SendTimeoutError`. */
  errorType: string;
  /** Outbox: how long the failed send took. */
  sendMs?: number;
}

export interface ManualRequiredEvent {
  table: OutboxTable;
  messageId: string;
  type: string;
  transport?: string;
  consumer?: string;
  attempts: number;
  error: string;
  /** The error's class name, e.g. `NonRetryableError`. */
  errorType: string;
  /** Outbox: how long the failed send took. */
  sendMs?: number;
}

export interface AbandonedEvent {
  table: OutboxTable;
  count: number;
}

export interface ClaimLostEvent {
  table: OutboxTable;
  /** The outbox lane, where the claim was an outbox dispatch. */
  transport?: string;
  count: number;
}

export interface ReceivedEvent {
  consumer: string;
  messageId: string;
  type: string;
}

export type DuplicateEvent = ReceivedEvent;

export interface HandledEvent {
  consumer: string;
  messageId: string;
  type: string;
  /** How long the handler and its transaction took. */
  handlerMs: number;
}

/** The payload of each event, by channel name. */
export interface OutboxEventMap {
  [OUTBOX_EVENTS.published]: PublishedEvent;
  [OUTBOX_EVENTS.sent]: SentEvent;
  [OUTBOX_EVENTS.retryScheduled]: RetryScheduledEvent;
  [OUTBOX_EVENTS.manualRequired]: ManualRequiredEvent;
  [OUTBOX_EVENTS.abandoned]: AbandonedEvent;
  [OUTBOX_EVENTS.claimLost]: ClaimLostEvent;
  [OUTBOX_EVENTS.received]: ReceivedEvent;
  [OUTBOX_EVENTS.duplicate]: DuplicateEvent;
  [OUTBOX_EVENTS.handled]: HandledEvent;
}

export type OutboxEventName = keyof OutboxEventMap;

/**
 * Publishes the event `build` makes, if anyone listens. A subscriber that throws is its own
 * business: diagnostics_channel reports it on `process.nextTick` as an uncaught exception, so
 * subscribers must catch their own errors; the library's dispatch never sees it.
 */
export function emit<N extends OutboxEventName>(name: N, build: () => OutboxEventMap[N]): void {
  const target = channel(name);
  if (target.hasSubscribers) target.publish(build());
}

/** Whether anyone listens on any of `names`: for events whose measuring has a cost of its own. */
export function listening(...names: OutboxEventName[]): boolean {
  return names.some((name) => channel(name).hasSubscribers);
}

/** An error's class name for events and metrics (`error.type`): `Error` when it has none. */
export function errorType(error: unknown): string {
  const name = (error as { constructor?: { name?: unknown } } | null | undefined)?.constructor?.name;
  return typeof name === 'string' && name !== '' && name !== 'Object' ? name : 'Error';
}
