import type { EntityManager } from 'typeorm';

/** A message to publish through the outbox. */
export interface OutboxMessage<TPayload = unknown> {
  /** Event type, e.g. `order.paid`; sent as the AMQP `type` property. At most 255 bytes of UTF-8. */
  type: string;
  /** JSON-serialisable body, sent as its JSON text; at most the module's `maxPayloadBytes` of UTF-8. */
  payload: TPayload;
  /**
   * The configured transport that sends it (a name from the module's `transports`). Default: what
   * the module's `route(message)` returns, else its `defaultTransport`. A name this process does
   * not configure is stored as it is: the message waits for a process that has that transport.
   */
  transport?: string;
  /** RabbitMQ: the target exchange ('' for the default exchange). At most 255 bytes of UTF-8, no CR or LF. */
  exchange?: string;
  /** RabbitMQ: the routing key. At most 255 bytes of UTF-8. */
  routingKey?: string;
  /**
   * Other transports' address: the name of an HTTP endpoint, or a `ClientProxy` pattern (default:
   * the message's `type`). At most 255 bytes of UTF-8.
   */
  destination?: string;
  /**
   * Not sent before this instant, as the database's clock tells it (a past instant means now).
   * Messages of the same `orderingKey` published after it wait behind it. Not with `delayMs`.
   */
  availableAt?: Date;
  /** Not sent until this many milliseconds after the commit's insert, by the database's clock (up to a year). Not with `availableAt`. */
  delayMs?: number;
  /**
   * The business fact plus event kind (`order-42:paid`), never a bare entity id. Publishing the
   * same `(type, bizKey)` again is a no-op, and `cancel(bizKey)` targets it. At most 255 characters.
   */
  bizKey?: string;
  /** Messages sharing this key are meant to be delivered in order (stored for ordered dispatch). At most 255 characters. */
  orderingKey?: string;
  /**
   * AMQP headers (string keys, JSON values), sent as their JSON round trip. At most 64 KiB as an
   * encoded AMQP field table; see the README for what else amqplib and RabbitMQ cannot carry.
   */
  headers?: Record<string, unknown>;
  /** UUID sent as the AMQP `messageId`; generated when absent. Consumers dedupe on it. */
  messageId?: string;
  /** Overrides the module's `maxAttempts` for this message (1–1000). */
  maxAttempts?: number;
}

/** Per-call options of `OutboxService.publish()`/`cancel()`. */
export interface OutboxWriteOptions {
  /**
   * The EntityManager of an open transaction to write through. Defaults to the transaction of
   * the current `@Transactional()` context.
   */
  manager?: EntityManager;
}

/** What `publish()` did. */
export interface PublishResult {
  /** The stored message's id: the new one, or the existing one when `duplicate`. */
  messageId: string;
  /** True when a message with the same `(type, bizKey)` or `messageId` already existed: nothing was written. */
  duplicate: boolean;
}
