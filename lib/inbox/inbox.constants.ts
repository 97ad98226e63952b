/** Metadata key of `@InboxHandler()` options on a method. */
export const INBOX_HANDLER_METADATA = Symbol('nestjs-outbox:inbox-handler');
/** Metadata key of the resolved definition, set at start-up on the same method. */
export const INBOX_HANDLER_DEFINITION = Symbol('nestjs-outbox:inbox-handler-definition');
