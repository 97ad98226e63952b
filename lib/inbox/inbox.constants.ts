/** Metadata key of `@InboxHandler()` options on a method. */
export const INBOX_HANDLER_METADATA = Symbol('nestjs-outbox:inbox-handler');
/** Metadata key of the resolved definition, set at start-up on the same method. */
export const INBOX_HANDLER_DEFINITION = Symbol('nestjs-outbox:inbox-handler-definition');
/** Metadata key of a handler's `@RabbitSubscribe()` settings as declared, before the inbox rewrote them. */
export const DECLARED_RABBIT_HANDLER = Symbol('nestjs-outbox:declared-rabbit-handler');
