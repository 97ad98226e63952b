import type { WebhookRequest } from './webhook-request';

/** Metadata key of the resolved definition, set at start-up on the same method as `@WebhookInbox()`'s options. */
export const WEBHOOK_INBOX_DEFINITION = Symbol('nestjs-outbox:webhook-inbox-definition');

/** A `@WebhookInbox()` route as resolved at start-up. */
export interface WebhookInboxDefinition {
  consumer: string;
  /** The named outbox whose inbox stores the requests; undefined for the default outbox. */
  outbox?: string;
  /** Where the route is declared, for messages. */
  where: string;
  messageId: (request: WebhookRequest) => unknown;
  /** Where the message id comes from, for messages: `header "webhook-id"`. */
  messageIdSource: string;
  type?: (request: WebhookRequest) => unknown;
  bizKey?: (request: WebhookRequest) => unknown;
  orderingKey?: (request: WebhookRequest) => unknown;
  maxAttempts: number;
  maxBodyBytes: number;
  /** Header names (lower case) stored with the row; `content-type` among them. */
  keptHeaders: ReadonlySet<string>;
}
