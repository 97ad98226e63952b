import type { EntityManager } from 'typeorm';

/** A message to publish through the outbox. */
export interface OutboxMessage<TPayload = unknown> {
  /** Event type, e.g. `order.paid`; sent as the AMQP `type` property. */
  type: string;
  /** JSON-serialisable body. */
  payload: TPayload;
  /** Target exchange ('' for the default exchange). */
  exchange: string;
  /** Routing key. */
  routingKey: string;
  /**
   * The business fact plus event kind (`order-42:paid`), never a bare entity id. Publishing the
   * same `(type, bizKey)` again is a no-op, and `cancel(bizKey)` targets it.
   */
  bizKey?: string;
  /** Messages sharing this key are meant to be delivered in order (stored for ordered dispatch). */
  orderingKey?: string;
  /** AMQP headers (string keys, JSON values). */
  headers?: Record<string, unknown>;
  /** UUID sent as the AMQP `messageId`; generated when absent. Consumers dedupe on it. */
  messageId?: string;
  /** Overrides the module's `maxAttempts` for this message. */
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
