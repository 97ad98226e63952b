import type { EntityManager } from 'typeorm';

/** A message to publish through the outbox. */
export interface OutboxMessage<TPayload = unknown> {
  /** Event type, e.g. `order.paid`; sent as the AMQP `type` property. At most 255 bytes of UTF-8. */
  type: string;
  /** JSON-serialisable body, sent as its JSON text; at most the module's `maxPayloadBytes` of UTF-8. */
  payload: TPayload;
  /** Target exchange ('' for the default exchange). At most 255 bytes of UTF-8, no CR or LF. */
  exchange: string;
  /** Routing key. At most 255 bytes of UTF-8. */
  routingKey: string;
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
