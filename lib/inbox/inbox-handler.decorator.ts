import { applyDecorators, SetMetadata, UseInterceptors } from '@nestjs/common';
import { INBOX_HANDLER_METADATA, InboxHandlerOptions } from './inbox-handler-options';
import { InboxInterceptor } from './inbox.interceptor';

/**
 * Makes a `@RabbitSubscribe()` handler idempotent: each message's business effect is applied
 * once per consumer, however often it is delivered. The business method contains no dedupe
 * code; write through `TransactionHost.tx` (and publish through `OutboxService`) so that its
 * effects commit with the inbox mark.
 *
 * ```ts
 * @RabbitSubscribe({ exchange: 'orders', routingKey: 'order.paid', queue: 'inventory.order-paid' })
 * @InboxHandler({ consumer: 'inventory' })
 * async onOrderPaid(event: OrderPaid) { ... }
 * ```
 */
export function InboxHandler(options: InboxHandlerOptions = {}): MethodDecorator {
  return applyDecorators(SetMetadata(INBOX_HANDLER_METADATA, options), UseInterceptors(InboxInterceptor));
}
