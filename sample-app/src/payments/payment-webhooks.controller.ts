import { Body, Controller, Post, UseGuards } from '@nestjs/common';
import { StandardWebhooksGuard, WebhookInbox, WebhookRequest } from '../../../lib';
import { OrdersService } from '../orders/orders.service';
import { PaymentCallbackDto } from './payment-callback.dto';
import { PAYMENTS_WEBHOOK_SECRET } from './payments.constants';

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
    // One payment per order: a second callback for the same order, under a new id, is a duplicate.
    bizKey: (request) => (orderIdOf(request) ? `order-${orderIdOf(request)}:payment` : undefined),
    // Callbacks for one order are processed in the order they arrived.
    orderingKey: orderIdOf,
  })
  async onPayment(@Body() callback: PaymentCallbackDto): Promise<void> {
    // Joins the worker's transaction: the order, its outbox message and the inbox row commit together.
    await this.orders.pay(callback.data.orderId);
  }
}
