import type { QueueOptions, RabbitMQExchangeConfig, RabbitMQQueueConfig } from '@golevelup/nestjs-rabbitmq';

/** The exchange the order service publishes `order.paid` to (the inventory side only consumes it). */
export const ORDERS_EXCHANGE = 'orders';

/** Event type and routing key of "an order was paid", as the order service publishes it. */
export const ORDER_PAID = 'order.paid';

/** The topic exchange this side publishes its own events to. */
export const INVENTORY_EXCHANGE = 'inventory';

/** Event type and routing key of "stock was reserved for an order". */
export const INVENTORY_RESERVED = 'inventory.reserved';

/** Event type and routing key of "an order could not be served from stock". */
export const INVENTORY_OUT_OF_STOCK = 'inventory.out-of-stock';

/** Dedupe scope of the inventory's inbox handler (one row per message per consumer). */
export const INVENTORY_CONSUMER = 'inventory';

/** The durable queue the inventory consumes `order.paid` from. */
export const ORDER_PAID_QUEUE = 'inventory.order-paid';

/** Dead-letter exchange of `ORDER_PAID_QUEUE`, and the queue that keeps what was dead-lettered. */
export const INVENTORY_DLX = 'inventory.dlx';
export const ORDER_PAID_DEAD_QUEUE = 'inventory.order-paid.dead';

/** The one SKU this sample stocks, with the quantity seeded when the table has no row for it. */
export const SAMPLE_SKU = 'SKU-1';
export const SAMPLE_SKU_INITIAL_STOCK = 100;

/** Units reserved per paid order in this sample. */
export const UNITS_PER_ORDER = 1;

/** The business fact plus the event kind, never a bare entity id. */
export function reservedBizKey(orderId: number): string {
  return `order-${orderId}:reserved`;
}

export function outOfStockBizKey(orderId: number): string {
  return `order-${orderId}:out-of-stock`;
}

/**
 * Options of the queue `ORDER_PAID_QUEUE`, used where the subscriber declares it. Every
 * declaration of a queue must carry the same arguments, or RabbitMQ refuses it
 * (PRECONDITION_FAILED), so they live in this one place.
 *
 * Why a dead-letter exchange: the inbox acknowledges what it processed or recognised as a
 * duplicate, redelivers (Nack with requeue) what failed and may succeed, and for what can never
 * be processed (a body that is not JSON, an empty body, a message without messageId, or a
 * handler that failed maxAttempts times) it first records the delivery in `inbox_message` as
 * MANUAL_REQUIRED, body included, and then rejects it with Nack(false). Without a dead-letter
 * exchange RabbitMQ drops a rejected message; with one it moves it to `ORDER_PAID_DEAD_QUEUE`,
 * where it can be inspected or shovelled back.
 */
export const ORDER_PAID_QUEUE_OPTIONS: QueueOptions = {
  durable: true,
  arguments: {
    'x-dead-letter-exchange': INVENTORY_DLX,
    'x-dead-letter-routing-key': ORDER_PAID_QUEUE,
  },
};

/** Exchanges of the inventory side, for `RabbitMQModule.forRoot({ exchanges })`. */
export const INVENTORY_EXCHANGES: RabbitMQExchangeConfig[] = [
  { name: INVENTORY_EXCHANGE, type: 'topic' },
  { name: INVENTORY_DLX, type: 'direct' },
];

/** Queues of the inventory side declared at connection time, for `RabbitMQModule.forRoot({ queues })`. */
export const INVENTORY_QUEUES: RabbitMQQueueConfig[] = [
  { name: ORDER_PAID_DEAD_QUEUE, options: { durable: true }, exchange: INVENTORY_DLX, routingKey: ORDER_PAID_QUEUE },
];

/** Body of `order.paid`, as the inventory reads it. */
export interface OrderPaidEvent {
  orderId: number;
  amountCents: number;
}

/** Body of `inventory.reserved` and `inventory.out-of-stock`. */
export interface StockOutcomeEvent {
  orderId: number;
  sku: string;
  quantity: number;
}
