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

/**
 * Which table an event is about.
 * @inline
 */
export type OutboxTable = 'outbox' | 'inbox';

/** What every event carries: which outbox it is about, in an application with several. */
export interface OutboxEventScope {
  /** The outbox's name (`OutboxModule.forRoot({ name })`); absent for the default outbox. */
  outbox?: string;
}

/** The payload of {@link OUTBOX_EVENTS}`.published`: an outbox message was stored. */
export interface PublishedEvent extends OutboxEventScope {
  /** The message's id (sent as the AMQP `messageId`). */
  messageId: string;
  /** The message's `type`. */
  type: string;
  /** The name of the transport that will send it. */
  transport: string;
}

/** The payload of {@link OUTBOX_EVENTS}`.sent`: a transport took responsibility for a message. */
export interface SentEvent extends OutboxEventScope {
  /** The message's id. */
  messageId: string;
  /** The message's `type`. */
  type: string;
  /** The name of the transport that sent it. */
  transport: string;
  /** 1 for the first attempt. */
  attempt: number;
  /** How long the transport's send took. */
  sendMs: number;
  /** From the message's `created_at` (the database's clock, at publish) to the acknowledgement (this process's clock); 0 if the clocks disagree. */
  publishToSentMs: number;
}

/** The payload of {@link OUTBOX_EVENTS}`.retryScheduled`: a failed attempt will be retried. */
export interface RetryScheduledEvent extends OutboxEventScope {
  /** Whether an outbox message or an inbox delivery failed. */
  table: OutboxTable;
  /** The message's id. */
  messageId: string;
  /** The message's `type`. */
  type: string;
  /** The outbox message's transport, or the inbox delivery's consumer. */
  transport?: string;
  /** The inbox consumer, for an inbox delivery. */
  consumer?: string;
  /** The attempt that failed. */
  attempt: number;
  /** The wait before the next attempt, where known (the inbox's transactional mode hands the delivery back to the broker). */
  delayMs?: number;
  /** The error's message, as stored in `last_error`. */
  error: string;
  /** The error's class name, e.g. `SendTimeoutError`. */
  errorType: string;
  /** Outbox: how long the failed send took. */
  sendMs?: number;
}

/** The payload of {@link OUTBOX_EVENTS}`.manualRequired`: a message or delivery was given up on. */
export interface ManualRequiredEvent extends OutboxEventScope {
  /** Whether an outbox message or an inbox delivery was given up on. */
  table: OutboxTable;
  /** The message's id. */
  messageId: string;
  /** The message's `type`. */
  type: string;
  /** The outbox message's transport. */
  transport?: string;
  /** The inbox consumer, for an inbox delivery. */
  consumer?: string;
  /** The attempts counted on the row. */
  attempts: number;
  /** The error's message, as stored in `last_error`. */
  error: string;
  /** The error's class name, e.g. `NonRetryableError`. */
  errorType: string;
  /** Outbox: how long the failed send took. */
  sendMs?: number;
}

/** The payload of {@link OUTBOX_EVENTS}`.abandoned`: messages were abandoned. */
export interface AbandonedEvent extends OutboxEventScope {
  /** The table whose rows were abandoned. */
  table: OutboxTable;
  /** How many rows were abandoned. */
  count: number;
}

/** The payload of {@link OUTBOX_EVENTS}`.claimLost`: settles found their claims taken over. */
export interface ClaimLostEvent extends OutboxEventScope {
  /** The table whose claims were lost. */
  table: OutboxTable;
  /** The outbox lane, where the claim was an outbox dispatch. */
  transport?: string;
  /** How many settles changed nothing. */
  count: number;
}

/** The payload of {@link OUTBOX_EVENTS}`.received`: a delivery or webhook reached an inbox consumer. */
export interface ReceivedEvent extends OutboxEventScope {
  /** The inbox consumer. */
  consumer: string;
  /** The delivery's identity (its `messageId`, or the derived id the inbox stores). */
  messageId: string;
  /** The delivery's `type`. */
  type: string;
}

/** The payload of {@link OUTBOX_EVENTS}`.duplicate`: the same fields as a received delivery. */
export type DuplicateEvent = ReceivedEvent;

/** The payload of {@link OUTBOX_EVENTS}`.handled`: an inbox handler's effects committed. */
export interface HandledEvent extends OutboxEventScope {
  /** The inbox consumer. */
  consumer: string;
  /** The delivery's identity. */
  messageId: string;
  /** The delivery's `type`. */
  type: string;
  /** How long the handler and its transaction took. */
  handlerMs: number;
}

/** The payload of each event, by channel name. */
export interface OutboxEventMap {
  /** See {@link PublishedEvent}. */
  [OUTBOX_EVENTS.published]: PublishedEvent;
  /** See {@link SentEvent}. */
  [OUTBOX_EVENTS.sent]: SentEvent;
  /** See {@link RetryScheduledEvent}. */
  [OUTBOX_EVENTS.retryScheduled]: RetryScheduledEvent;
  /** See {@link ManualRequiredEvent}. */
  [OUTBOX_EVENTS.manualRequired]: ManualRequiredEvent;
  /** See {@link AbandonedEvent}. */
  [OUTBOX_EVENTS.abandoned]: AbandonedEvent;
  /** See {@link ClaimLostEvent}. */
  [OUTBOX_EVENTS.claimLost]: ClaimLostEvent;
  /** See {@link ReceivedEvent}. */
  [OUTBOX_EVENTS.received]: ReceivedEvent;
  /** See {@link DuplicateEvent}. */
  [OUTBOX_EVENTS.duplicate]: DuplicateEvent;
  /** See {@link HandledEvent}. */
  [OUTBOX_EVENTS.handled]: HandledEvent;
}

/** The name of an event channel: a value of {@link OUTBOX_EVENTS}. */
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
