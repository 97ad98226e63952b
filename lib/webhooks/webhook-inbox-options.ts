import type { WebhookRequest } from './webhook-request';

/** Metadata key of `@WebhookInbox()` options on a route method. */
export const WEBHOOK_INBOX_METADATA = Symbol('nestjs-outbox:webhook-inbox');

/** Where a webhook's message id comes from. */
export type WebhookMessageIdSource =
  /** A request header, e.g. `webhook-id` (Standard Webhooks) or `x-github-delivery`. */
  | {
      /** The header's name, matched case-insensitively. */
      header: string;
    }
  /** A field of the parsed body, a dotted path for a nested one: `id`, `data.object.id`. */
  | {
      /** The field's path in the parsed body. */
      bodyField: string;
    }
  /** Anything else: return the id, or undefined when the request has none. */
  | ((request: WebhookRequest) => string | undefined);

/** Options of `@WebhookInbox()`. */
export interface WebhookInboxOptions {
  /**
   * The outbox (`OutboxModule.forRoot({ name })`) whose inbox table and transactions the route
   * uses. Default: the default outbox (also named by `'default'`). An outbox the application does
   * not configure fails start-up.
   */
  outbox?: string;
  /**
   * Dedupe scope, in one namespace with `@InboxHandler()` consumers (a name used by both fails
   * start-up). Default `ClassName.method`. At most 200 characters (the inbox table's column).
   */
  consumer?: string;
  /** Where the message id comes from. Default `{ header: 'webhook-id' }`. */
  messageId?: WebhookMessageIdSource;
  /** The event type stored with the row (and the scope of `bizKey`): a fixed string, or taken from the request. */
  type?: string | ((request: WebhookRequest) => string | undefined);
  /**
   * The business key (the fact plus event kind, e.g. `order-42:paid`) for a second dedupe layer,
   * `(consumer, type, bizKey)`, which also catches a sender resending one fact under a new id.
   */
  bizKey?: (request: WebhookRequest) => string | undefined;
  /** Requests with the same key are processed one at a time, in the order they were stored. */
  orderingKey?: (request: WebhookRequest) => string | undefined;
  /** Failed attempts before the row goes to MANUAL_REQUIRED. Default: the module's `maxAttempts`. */
  maxAttempts?: number;
  /** The answer to a stored (or duplicate) request: 200 (default) or 202. */
  status?: 200 | 202;
  /** Largest body accepted, in bytes; larger ones are answered 413. Default: the module's `inboxMaxBodyBytes`. */
  maxBodyBytes?: number;
  /**
   * Request headers stored with the row and seen by the method when it runs (lower case).
   * `content-type` is always kept. Default: the Standard Webhooks headers, `webhook-id`,
   * `webhook-timestamp` and `webhook-signature`, so a stored request can be verified again.
   */
  headers?: string[];
}
