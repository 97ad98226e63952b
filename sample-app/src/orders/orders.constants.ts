/** The topic exchange this service publishes its order events to (declared in AppModule). */
export const ORDERS_EXCHANGE = 'orders';

/** Event type and routing key of "an order was paid". */
export const ORDER_PAID = 'order.paid';

/** The business fact plus the event kind, never a bare entity id: publish and cancel agree on it. */
export function orderPaidBizKey(orderId: number): string {
  return `order-${orderId}:paid`;
}

/** Body of the `order.paid` message. */
export interface OrderPaidEvent {
  orderId: number;
  amountCents: number;
}
