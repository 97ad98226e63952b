/**
 * `nestjs-outbox/webhooks`: HTTP intake into the inbox, and Standard Webhooks signatures.
 *
 * @module nestjs-outbox/webhooks
 */

// Receiving: a controller method whose requests are stored as inbox rows and run once each.
export { WebhookInbox } from '../webhooks/webhook-inbox.decorator';
export type { WebhookInboxOptions, WebhookMessageIdSource } from '../webhooks/webhook-inbox-options';
export type { WebhookRequest } from '../webhooks/webhook-request';
export { WebhookOptionsError } from '../errors';

// Verifying: the guard that checks a request's Standard Webhooks signature on its raw body.
export { StandardWebhooksGuard, VERIFIED_WEBHOOK } from '../webhooks/standard-webhooks.guard';
export type { StandardWebhooksGuardOptions, VerifiedWebhook } from '../webhooks/standard-webhooks.guard';

// Signing and verifying by hand (HttpOutboxTransport signs with the same functions).
export { signWebhook, verifyWebhook } from '../transport/http/standard-webhooks';
export type {
  SignWebhookInput,
  VerifyWebhookInput,
  WebhookBody,
  WebhookHeaders,
  WebhookRejection,
  WebhookSecrets,
  WebhookVerification,
} from '../transport/http/standard-webhooks';
