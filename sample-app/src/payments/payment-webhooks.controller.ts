import { Body, Controller, Post, UseGuards } from '@nestjs/common';
import { StandardWebhooksGuard, WebhookInbox, WebhookRequest } from '../../../lib/entries/webhooks';
import { OrdersService } from '../orders/orders.service';
import { PaymentCallbackDto } from './payment-callback.dto';
import { PAYMENT_SUCCEEDED, PAYMENTS_WEBHOOK_SECRET } from './payments.constants';

/** The order id a callback is about, for the inbox's keys; undefined for a body without one (400). */
function orderIdOf(request: WebhookRequest): string | undefined {
  const orderId = (request.body as { data?: { orderId?: unknown } } | undefined)?.data?.orderId;
  return typeof orderId === 'number' ? String(orderId) : undefined;
}

/**
 * The payment provider's callbacks. A signed request is stored in the inbox and answered 200 at
 * once; the method runs afterwards on the inbox worker, in a transaction that also marks the
 * inbox row DONE, so the order is paid (and `order.paid` published) once however often the
 * provider retries.
 */
@Controller('webhooks')
export class PaymentWebhooksController {
  constructor(private readonly orders: OrdersService) {}

  @Post('payments')
  @UseGuards(StandardWebhooksGuard.for({ secrets: [PAYMENTS_WEBHOOK_SECRET] }))
  @WebhookInbox({
    consumer: 'payments',
    type: (request) => (request.body as { type?: string }).type,
    // One captured payment per order: a second payment.succeeded for the order, under a new id, is
    // a duplicate. Failed attempts are facts of their own (a customer may fail several times),
    // deduplicated by their webhook id only.
    bizKey: (request) => {
      const orderId = orderIdOf(request);
      return orderId !== undefined && (request.body as { type?: unknown }).type === PAYMENT_SUCCEEDED ? `order-${orderId}:payment` : undefined;
    },
    // Callbacks for one order are processed in the order they arrived; every type they can have
    // is accepted below, so none can park the order's key.
    orderingKey: orderIdOf,
  })
  async onPayment(@Body() callback: PaymentCallbackDto): Promise<void> {
    // A failed attempt leaves the order NEW: the customer pays again, and its payment.succeeded pays it.
    if (callback.type !== PAYMENT_SUCCEEDED) return;
    // Joins the worker's transaction: the order, its outbox message and the inbox row commit together.
    await this.orders.pay(callback.data.orderId);
  }
}
