import { RabbitSubscribe } from '@golevelup/nestjs-rabbitmq';
import { Injectable } from '@nestjs/common';
import { InboxHandler, NonRetryableError } from '../../../lib';
import { INVENTORY_CONSUMER, ORDER_PAID, ORDER_PAID_QUEUE, ORDER_PAID_QUEUE_OPTIONS, OrderPaidEvent, ORDERS_EXCHANGE } from './inventory.constants';
import { InventoryService } from './inventory.service';

/**
 * Consumes `order.paid`. `@InboxHandler` makes it effectively-once: the first delivery of a
 * message runs `onOrderPaid` inside a transaction that also records the message in the inbox,
 * and the delivery is acknowledged after the commit; a redelivery or a duplicate publish of the
 * same message is acknowledged without running it. Hence no dedupe code here.
 */
@Injectable()
export class OrderPaidConsumer {
  constructor(private readonly inventory: InventoryService) {}

  @RabbitSubscribe({
    exchange: ORDERS_EXCHANGE,
    routingKey: ORDER_PAID,
    queue: ORDER_PAID_QUEUE,
    queueOptions: ORDER_PAID_QUEUE_OPTIONS,
  })
  @InboxHandler({
    consumer: INVENTORY_CONSUMER,
    // Second dedupe layer: the same payment published again under a new messageId is skipped too.
    bizKey: (event: Partial<OrderPaidEvent> | null) => (isOrderId(event?.orderId) ? `order-${event.orderId}:paid` : undefined),
  })
  async onOrderPaid(event: unknown): Promise<void> {
    await this.inventory.reserveForPaidOrder(asOrderPaid(event));
  }
}

/** A body that parses as JSON but is not an `order.paid` cannot succeed on retry: give up at once. */
function asOrderPaid(event: unknown): OrderPaidEvent {
  const candidate = event as Partial<OrderPaidEvent> | null;
  if (!isOrderId(candidate?.orderId) || !Number.isSafeInteger(candidate.amountCents)) {
    throw new NonRetryableError(`not an ${ORDER_PAID} body (needs integer orderId and amountCents): ${JSON.stringify(event)?.slice(0, 200)}`);
  }
  return { orderId: candidate.orderId, amountCents: candidate.amountCents! };
}

function isOrderId(value: unknown): value is number {
  return typeof value === 'number' && Number.isSafeInteger(value) && value >= 1 && value <= 2_147_483_647;
}
