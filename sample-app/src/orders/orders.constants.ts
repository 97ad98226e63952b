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

/** Event type of "an order was handed to logistics": delivered to the partner by HTTP. */
export const ORDER_SHIPPED = 'order.shipped';

export function orderShippedBizKey(orderId: number): string {
  return `order-${orderId}:shipped`;
}

/** Body of the `order.shipped` message, as the logistics partner receives it. */
export interface OrderShippedEvent {
  orderId: number;
}
