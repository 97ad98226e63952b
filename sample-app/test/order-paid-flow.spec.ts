import { TransactionHost } from '@nestjs-cls/transactional';
import { TransactionalAdapterTypeOrm } from '@nestjs-cls/transactional-adapter-typeorm';
import { INestApplicationContext, Module } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { brokerlessModules } from './brokerless-modules';
import { freshSchema } from './fresh-schema';
import { CapturingOutboxTransport, OutboxTestKit } from '../../lib/testing';
import { INVENTORY_CONSUMER, INVENTORY_RESERVED, StockOutcomeEvent } from '../src/inventory/inventory.constants';
import { InventoryModule } from '../src/inventory/inventory.module';
import { ReservationStatus, StockReservation } from '../src/inventory/stock-reservation.entity';
import { LOGISTICS_TRANSPORT, WAREHOUSE_ENDPOINT } from '../src/logistics/logistics.constants';
import { ORDER_PAID, ORDER_SHIPPED, OrderPaidEvent } from '../src/orders/orders.constants';
import { OrdersModule } from '../src/orders/orders.module';
import { OrdersService } from '../src/orders/orders.service';

/** The sample's entities use PostgreSQL types; each run gets a schema of its own. */
const DATABASE_URL = process.env.DATABASE_URL!;
const SCHEMA = 'sample_app_test';

/**
 * The sample's orders and inventory as AppModule wires them, but with no broker: the outbox
 * sends through CapturingOutboxTransport, and the test kit hands what it captured to the
 * inventory's @InboxHandler.
 */
@Module({
  imports: [...brokerlessModules(DATABASE_URL, SCHEMA), OrdersModule, InventoryModule],
})
class SampleTestModule {}

describe('sample app: paying an order reserves stock', () => {
  let app: INestApplicationContext;
  let kit: OutboxTestKit;
  let orders: OrdersService;
  let logistics: CapturingOutboxTransport;

  beforeAll(async () => {
    await freshSchema(DATABASE_URL, SCHEMA);
    const module = await Test.createTestingModule({ imports: [SampleTestModule] }).compile();
    app = await module.init();
    kit = OutboxTestKit.from(app, { deliverToInboxHandlers: true });
    orders = app.get(OrdersService);
    logistics = kit.transportOf(LOGISTICS_TRANSPORT);
  });

  afterAll(async () => {
    await app?.close();
  });

  beforeEach(() => {
    kit.transport.clear();
    logistics.clear();
  });

  const reservationsOf = (orderId: number) =>
    app.get<TransactionHost<TransactionalAdapterTypeOrm>>(TransactionHost).tx.getRepository(StockReservation).findBy({ orderId });

  it('publishes order.paid once, delivers it to the inventory, and reserves stock', async () => {
    const order = await orders.create(2_500);
    await orders.pay(order.id);
    await kit.flush();

    expect(kit.transport.ofType<OrderPaidEvent>(ORDER_PAID).map((message) => message.payload)).toEqual([{ orderId: order.id, amountCents: 2_500 }]);
    const [paid] = kit.transport.ofType(ORDER_PAID);
    expect(kit.deliveries.filter((delivery) => delivery.message === paid).map((delivery) => [delivery.consumer, delivery.outcome])).toEqual([
      [INVENTORY_CONSUMER, 'ack'],
    ]);
    expect(await reservationsOf(order.id)).toEqual([expect.objectContaining({ orderId: order.id, status: ReservationStatus.RESERVED, quantity: 1 })]);
    expect(kit.transport.ofType<StockOutcomeEvent>(INVENTORY_RESERVED).map((message) => message.payload)).toEqual([
      { orderId: order.id, sku: 'SKU-1', quantity: 1 },
    ]);
  });

  it('reserves once when order.paid arrives twice', async () => {
    const order = await orders.create(900);
    await orders.pay(order.id);
    await kit.flush();
    const [paid] = kit.transport.ofType(ORDER_PAID);

    expect((await kit.deliver(paid)).map((delivery) => delivery.outcome)).toEqual(['ack']);
    await kit.flush();

    expect(await reservationsOf(order.id)).toHaveLength(1);
    expect(kit.transport.ofType(INVENTORY_RESERVED)).toHaveLength(1);
  });

  it('sends nothing for a payment that was cancelled before its message went out', async () => {
    const order = await orders.create(1_200);
    kit.transport.setAvailable(false);
    await orders.pay(order.id);
    await orders.cancel(order.id);
    kit.transport.setAvailable(true);
    await kit.flush();

    expect(kit.transport.messages).toHaveLength(0);
    expect(await reservationsOf(order.id)).toHaveLength(0);
  });

  it('sends order.shipped to the logistics partner through its own transport, not RabbitMQ', async () => {
    const order = await orders.create(4_000);
    await orders.pay(order.id);
    await orders.ship(order.id);
    await orders.ship(order.id);
    await kit.flush();

    expect(logistics.messages.map((message) => [message.type, message.destination, message.payload])).toEqual([
      [ORDER_SHIPPED, WAREHOUSE_ENDPOINT, { orderId: order.id }],
    ]);
    expect(kit.transport.ofType(ORDER_SHIPPED)).toEqual([]);
    await expect(orders.cancel(order.id)).rejects.toThrow('SHIPPED and can no longer be cancelled');
  });
});
