// First: the OpenTelemetry SDK must be registered before the outbox takes its meter.
import '../src/metrics/prometheus-exporter';
import { INestApplication, Module } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { brokerlessModules } from './brokerless-modules';
import { freshSchema } from './fresh-schema';
import { OutboxTestKit } from '../../lib/testing';
import { HealthModule } from '../src/health/health.module';
import { MetricsModule } from '../src/metrics/metrics.module';
import { OrdersModule } from '../src/orders/orders.module';
import { OrdersService } from '../src/orders/orders.service';

const DATABASE_URL = process.env.DATABASE_URL!;
const SCHEMA = 'sample_app_metrics_test';

/** The sample's orders with its /metrics and /health, no broker: both transports capture. */
@Module({
  imports: [...brokerlessModules(DATABASE_URL, SCHEMA), OrdersModule, MetricsModule, HealthModule],
})
class SampleHttpTestModule {}

describe('sample app: /metrics and /health', () => {
  let app: INestApplication;
  let url: string;

  beforeAll(async () => {
    await freshSchema(DATABASE_URL, SCHEMA);
    const module = await Test.createTestingModule({ imports: [SampleHttpTestModule] }).compile();
    app = module.createNestApplication({ logger: false });
    await app.listen(0, '127.0.0.1');
    url = (await app.getUrl()).replace('[::1]', '127.0.0.1');
  });

  afterAll(async () => {
    await app?.close();
  });

  it('serves the outbox metrics in Prometheus text after orders are paid and shipped', async () => {
    const orders = app.get(OrdersService);
    for (let i = 0; i < 3; i++) {
      const order = await orders.create(1_000 + i);
      await orders.pay(order.id);
      if (i === 0) await orders.ship(order.id);
    }
    await OutboxTestKit.from(app).flush();

    const response = await fetch(`${url}/metrics`);
    expect(response.status).toBe(200);
    const text = await response.text();
    // The exporter adds labels of its own (otel_scope_name) after the metric's.
    const sample = (name: string, labels: string) => new RegExp(`^${name}\\{${labels}[,}].* (\\S+)$`, 'm').exec(text)?.[1];
    expect(sample('outbox_messages_published_total', 'outbox_transport="default"')).toBe('3');
    expect(sample('outbox_messages_published_total', 'outbox_transport="logistics"')).toBe('1');
    expect(sample('outbox_messages_sent_total', 'outbox_transport="logistics"')).toBe('1');
    expect(sample('outbox_rows', 'outbox_table="outbox",outbox_status="DONE",outbox_transport="default"')).toBe('3');
  });

  it('answers /health with the outbox figures and each transport', async () => {
    const response = await fetch(`${url}/health`);
    expect(response.status).toBe(200);
    expect(await response.json()).toMatchObject({
      status: 'ok',
      info: { outbox: { status: 'up', database: 'reachable', transports: { default: 'available', logistics: 'available' } } },
    });
  });
});
