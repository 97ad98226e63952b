import { WEBHOOK_HEADERS } from '../transport/http/standard-webhooks';

/** Metadata key of `@WebhookInbox()` options on a route method. */
export const WEBHOOK_INBOX_METADATA = Symbol('nestjs-outbox:webhook-inbox');
/** Metadata key of the resolved definition, set at start-up on the same method. */
export const WEBHOOK_INBOX_DEFINITION = Symbol('nestjs-outbox:webhook-inbox-definition');
/** The message id header of the Standard Webhooks scheme, the default id source. */
export const STANDARD_WEBHOOK_ID_HEADER = WEBHOOK_HEADERS.id;
/** Headers kept by default: the Standard Webhooks ones, so a stored request can be verified again. */
export const DEFAULT_KEPT_HEADERS: readonly string[] = Object.values(WEBHOOK_HEADERS);
