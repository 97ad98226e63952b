import type { AmqpMessage } from './amqp-message';

/** Metadata key of `@InboxHandler()` options on a method. */
export const INBOX_HANDLER_METADATA = Symbol('nestjs-outbox:inbox-handler');
/** Metadata key of the resolved definition, set at start-up on the same method. */
export const INBOX_HANDLER_DEFINITION = Symbol('nestjs-outbox:inbox-handler-definition');
/** Metadata key of a handler's `@RabbitSubscribe()` settings as declared, before the inbox rewrote them. */
export const DECLARED_RABBIT_HANDLER = Symbol('nestjs-outbox:declared-rabbit-handler');

/** A business method as Nest holds it (golevelup hands Nest a copy bound to the provider). */
export type HandlerMethod = (...args: unknown[]) => unknown;

/** How an `@InboxHandler()` processes deliveries. */
export type InboxMode = 'transactional' | 'deferred';

/** Options of `@InboxHandler()`. */
export interface InboxHandlerOptions {
  /**
   * The outbox (`OutboxModule.forRoot({ name })`) whose inbox table and transactions the handler
   * uses. Default: the default outbox (also named by `'default'`). An outbox the application does
   * not configure fails start-up.
   */
  outbox?: string;
  /**
   * Dedupe scope: two consumers of one event both process it once. Default `ClassName.method`.
   * Must be unique in the application, and at most 200 characters (the inbox table's column).
   */
  consumer?: string;
  /**
   * `transactional` (default): the inbox mark, the handler's writes and the messages it
   * publishes commit in one transaction, then the delivery is acknowledged.
   * `deferred`: the delivery is stored PENDING and acknowledged at once; a worker runs the
   * handler later with retries, backoff and stuck-claim recovery.
   */
  mode?: InboxMode;
  /**
   * Extracts the business key (the fact plus event kind, e.g. `order-42:paid`) for a second
   * dedupe layer, `(consumer, type, bizKey)`, that also catches a producer resending the same
   * fact under a new message id.
   */
  bizKey?: (payload: any, message: AmqpMessage) => string | undefined;
  /**
   * Opt-in protection for producers that set no `messageId`: dedupe on a SHA-256 of the body.
   * Without it (and without a `bizKey`) such a message is rejected as unprotectable.
   */
  messageIdFallback?: 'content-hash';
  /** Failed attempts before the delivery goes to MANUAL_REQUIRED. Default: the module's `maxAttempts`. */
  maxAttempts?: number;
  /**
   * Deferred mode: deliveries with the same key are processed one at a time, in the order they
   * were stored; a key whose head reaches MANUAL_REQUIRED is parked until an operator requeues
   * or abandons it. Default: no ordering (full parallelism).
   */
  orderingKey?: (payload: any, message: AmqpMessage) => string | undefined;
}

/** An `@InboxHandler()` as resolved at start-up. */
export interface InboxHandlerDefinition {
  consumer: string;
  /** The named outbox whose inbox the handler uses; undefined for the default outbox. */
  outbox?: string;
  mode: InboxMode;
  bizKey?: InboxHandlerOptions['bizKey'];
  messageIdFallback?: 'content-hash';
  maxAttempts: number;
  orderingKey?: InboxHandlerOptions['orderingKey'];
  /**
   * Deferred mode: calls the handler as golevelup would, through Nest's chain for the method
   * (guards, interceptors, the inbox interceptor, pipes, parameter decorators). Register the
   * replay first (`deferred-replay.ts`): the inbox interceptor hands the rest of the chain to it.
   */
  invoke(payload: unknown, message: AmqpMessage, headers: Record<string, unknown> | undefined): Promise<unknown>;
  /** The deserializer golevelup uses for this handler, made never to throw (`safeDeserializer`). */
  deserialize?: (content: Buffer, message: AmqpMessage) => unknown;
  /** Whether `@RabbitSubscribe()` gave the handler a deserializer of its own (not `JSON.parse`). */
  customDeserializer?: boolean;
  /**
   * Set when Nest would run nothing between the inbox interceptor and the business method
   * (`runsMethodAlone`): calls `method`, as Nest holds it, on the provider with `args`, as Nest's
   * last step would. Absent, the interceptor goes through `next.handle()`.
   */
  callDirectly?: (method: HandlerMethod, args: unknown[]) => Promise<unknown>;
}
