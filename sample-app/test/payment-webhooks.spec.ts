import { INestApplication, Module, ValidationPipe } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { randomUUID } from 'node:crypto';
import { brokerlessModules } from './brokerless-modules';
import { freshSchema } from './fresh-schema';
import { signWebhook } from '../../lib/entries/webhooks';
import { OutboxTestKit } from '../../lib/testing';
import { OrderStatus } from '../src/orders/order.entity';
import { ORDER_PAID } from '../src/orders/orders.constants';
import { OrdersModule } from '../src/orders/orders.module';
import { OrdersService } from '../src/orders/orders.service';
import { PAYMENTS_WEBHOOK_SECRET } from '../src/payments/payments.constants';
import { PaymentsModule } from '../src/payments/payments.module';

const DATABASE_URL = process.env.DATABASE_URL!;
const SCHEMA = 'sample_app_payments_test';

/** The sample's orders and payment webhooks as AppModule wires them, with no broker. */
@Module({
  imports: [...brokerlessModules(DATABASE_URL, SCHEMA), OrdersModule, PaymentsModule],
})
class PaymentsTestModule {}

describe('sample app: payment webhooks', () => {
  let app: INestApplication;
  let url: string;
  let kit: OutboxTestKit;

  beforeAll(async () => {
    await freshSchema(DATABASE_URL, SCHEMA);
    const module = await Test.createTestingModule({ imports: [PaymentsTestModule] }).compile();
    // As main.ts starts the sample.
    app = module.createNestApplication({ rawBody: true });
    app.useGlobalPipes(new ValidationPipe({ whitelist: true, forbidNonWhitelisted: true }));
    await app.listen(0, '127.0.0.1');
    url = await app.getUrl();
    kit = OutboxTestKit.from(app);
  });

  afterAll(async () => {
    await app?.close();
  });

  /** Posts a callback signed as the provider signs it. */
  async function callback(type: string, orderId: number): Promise<number> {
    const id = `msg_${randomUUID()}`;
    const timestamp = Math.floor(Date.now() / 1000);
    const body = JSON.stringify({ type, data: { orderId, paymentId: `pay_${randomUUID()}` } });
    const response = await fetch(`${url}/webhooks/payments`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        'webhook-id': id,
        'webhook-timestamp': String(timestamp),
        'webhook-signature': signWebhook({ secret: PAYMENTS_WEBHOOK_SECRET, id, timestamp, body }),
      },
      body,
    });
    return response.status;
  }

  it('pays an order whose payment failed first, then succeeded', async () => {
    const order = await app.get(OrdersService).create(2_500);
    expect(await callback('payment.failed', order.id)).toBe(200);
    expect(await callback('payment.succeeded', order.id)).toBe(200);
    await kit.flush();
    expect((await app.get(OrdersService).get(order.id)).status).toBe(OrderStatus.PAID);
    expect(kit.transport.ofType(ORDER_PAID).map((message) => message.payload)).toEqual([{ orderId: order.id, amountCents: 2_500 }]);
  });

  it('leaves an order NEW after a failed payment alone', async () => {
    const order = await app.get(OrdersService).create(900);
    expect(await callback('payment.failed', order.id)).toBe(200);
    await kit.flush();
    expect((await app.get(OrdersService).get(order.id)).status).toBe(OrderStatus.NEW);
  });
});
