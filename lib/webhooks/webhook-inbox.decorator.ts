import { applyDecorators, HttpCode, SetMetadata, UseInterceptors } from '@nestjs/common';
import { WEBHOOK_INBOX_METADATA, WebhookInboxOptions } from './webhook-inbox-options';
import { WebhookInboxInterceptor } from './webhook-inbox.interceptor';

/**
 * Makes a controller route the inbox of a webhook. A request is stored as an inbox row in one
 * short transaction and answered at once (200, or `status`), without running the method; a
 * duplicate (same consumer and message id, or same type and `bizKey`) is answered the same and
 * stored once. The method runs later on the deferred inbox worker, with the stored request, in a
 * transaction that also settles the row: retries with backoff, MANUAL_REQUIRED, per-key ordering
 * and admin operations as for a deferred `@InboxHandler()`.
 *
 * Guards (signature verification: `StandardWebhooksGuard`) run when the request arrives. When the
 * method runs, its pipes and its `@Body()`, `@RawBody()`, `@Headers()` and `@Req()` parameters
 * see the stored request; interceptors and guards do not run again.
 *
 * ```ts
 * @Post('payments')
 * @UseGuards(StandardWebhooksGuard.for({ secrets: [process.env.PAYMENTS_WEBHOOK_SECRET!] }))
 * @WebhookInbox({ consumer: 'payments', bizKey: (request) => ... })
 * async onPayment(@Body() event: PaymentEvent) { ... }
 * ```
 */
export function WebhookInbox(options: WebhookInboxOptions = {}): MethodDecorator {
  return applyDecorators(SetMetadata(WEBHOOK_INBOX_METADATA, options), HttpCode(options.status ?? 200), UseInterceptors(WebhookInboxInterceptor));
}
