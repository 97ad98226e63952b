import { ConsoleLogger, INestApplicationContext } from '@nestjs/common';
import { HealthIndicatorService } from '@nestjs/terminus';
import { randomUUID } from 'node:crypto';
import { OutboxHealthIndicator } from '../../lib/health';
import { BrokerConnection } from '../support/broker-connection';
import { brokerName } from '../support/broker-names';
import { testDatabase } from '../support/database';
import { InboxFixtureConfig, inboxFixtureProviders } from '../support/inbox-fixture';
import { createTestApp } from '../support/test-app';
import { STARTUP_TIMEOUT_MS, timeoutFor, WAIT_TIMEOUT_MS, waitUntil } from '../support/wait';

const database = testDatabase('it_inbox_cancel');
const PREFIX = brokerName('it.inbox-cancel');

const config: InboxFixtureConfig = {
  exchange: `${PREFIX}.in`,
  routingKey: 'order.paid',
  outExchange: `${PREFIX}.out`,
  deadLetterExchange: `${PREFIX}.dlx`,
  consumers: [
    { name: 'cancelled', queue: `${PREFIX}.cancelled` },
    { name: 'steady', queue: `${PREFIX}.steady` },
  ],
};
const [CANCELLED_QUEUE, STEADY_QUEUE] = config.consumers.map((consumer) => consumer.queue);
/** The arguments golevelup declares the fixture's queues with. */
const QUEUE_OPTIONS = { durable: false, arguments: { 'x-dead-letter-exchange': config.deadLetterExchange } };

describe('An @InboxHandler consumer the broker cancels', () => {
  let app: INestApplicationContext;
  let broker: BrokerConnection;
  let health: OutboxHealthIndicator;
  const logLines: string[] = [];

  beforeAll(async () => {
    await database.reset();
    broker = await BrokerConnection.open();
    await broker.prepareInboxes([config], { outExchange: true });
    for (const level of ['log', 'warn'] as const) {
      const original = ConsoleLogger.prototype[level];
      jest.spyOn(ConsoleLogger.prototype, level).mockImplementation(function (this: ConsoleLogger, message: unknown, ...rest: unknown[]) {
        logLines.push(String(message));
        return original.call(this, message, ...rest);
      });
    }
    app = await createTestApp({
      database,
      outbox: { pollIntervalMs: 50 },
      providers: [...inboxFixtureProviders(config), HealthIndicatorService, OutboxHealthIndicator],
    });
    health = app.get(OutboxHealthIndicator);
  }, timeoutFor(STARTUP_TIMEOUT_MS));

  afterAll(async () => {
    await app?.close();
    await broker.close();
    jest.restoreAllMocks();
  });

  const deliver = (orderId: number) =>
    broker.channel.publish(config.exchange, config.routingKey, Buffer.from(JSON.stringify({ orderId })), { messageId: randomUUID(), type: 'order.paid' });
  const effects = async (consumer: string, orderId: number) =>
    Number((await database.sql(`SELECT count(*) AS n FROM {test_effect} WHERE consumer = ? AND order_id = ?`, [consumer, orderId]))[0].n);
  const consumersOf = async (queue: string) => (await broker.channel.checkQueue(queue)).consumerCount;

  it(
    'is reported down while its queue is gone, subscribes again once the queue is declared again, and handles what arrives',
    async () => {
      deliver(1);
      for (const consumer of ['cancelled', 'steady']) await waitUntil(async () => (await effects(consumer, 1)) === 1, `${consumer} handled order 1`);
      expect(await health.isHealthy('outbox')).toMatchObject({ outbox: { status: 'up' } });

      await broker.channel.deleteQueue(CANCELLED_QUEUE);
      await waitUntil(() => logLines.some((line) => line.includes('consumer "cancelled" was cancelled by the broker')), 'the cancel is logged');
      const down = await health.isHealthy('outbox');
      expect(down.outbox).toMatchObject({
        status: 'down',
        cancelledConsumers: [{ consumer: 'cancelled', queue: CANCELLED_QUEUE }],
        problems: [expect.stringContaining('the broker cancelled inbox consumer "cancelled"')],
      });
      // It keeps looking while the queue is missing, and the other consumer goes on.
      await waitUntil(() => logLines.some((line) => line.includes('consumer "cancelled" cannot subscribe to queue')), 'a probe finds no queue');
      deliver(2);
      await waitUntil(async () => (await effects('steady', 2)) === 1, 'steady handled order 2');
      expect(await consumersOf(STEADY_QUEUE)).toBe(1);

      // Declared again as an operator would, without its binding: a delivery waits in it.
      await broker.channel.assertQueue(CANCELLED_QUEUE, QUEUE_OPTIONS);
      broker.channel.sendToQueue(CANCELLED_QUEUE, Buffer.from(JSON.stringify({ orderId: 3 })), { messageId: randomUUID(), type: 'order.paid' });
      await waitUntil(async () => (await effects('cancelled', 3)) === 1, 'the consumer is back and handles order 3', WAIT_TIMEOUT_MS);
      expect(await consumersOf(CANCELLED_QUEUE)).toBe(1);
      expect(logLines.some((line) => line.includes(`consumer "cancelled" consumes queue "${CANCELLED_QUEUE}" again`))).toBe(true);
      expect(await health.isHealthy('outbox')).toMatchObject({ outbox: { status: 'up' } });
      // Its binding was set up again with the subscription.
      deliver(4);
      await waitUntil(async () => (await effects('cancelled', 4)) === 1, 'the consumer handles order 4 from the exchange');
    },
    timeoutFor(6 * WAIT_TIMEOUT_MS),
  );
});
