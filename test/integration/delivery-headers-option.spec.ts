import { INestApplicationContext } from '@nestjs/common';
import { randomUUID } from 'node:crypto';
import { DataSource } from 'typeorm';
import { OutboxService } from '../../lib';
import { brokerName } from '../support/broker-names';
import { testDatabase } from '../support/database';
import { assertExchange, QueueProbe } from '../support/queue-probe';
import { createTestApp } from '../support/test-app';
import { STARTUP_TIMEOUT_MS, timeoutFor } from '../support/wait';

const database = testDatabase('it_delivery_headers_option');
const EXCHANGE = brokerName('it.delivery-headers-option');

describe('deliveryHeaders: false', () => {
  let app: INestApplicationContext;
  let probe: QueueProbe;

  beforeAll(async () => {
    await database.reset();
    await assertExchange(EXCHANGE);
    app = await createTestApp({ database, outbox: { pollIntervalMs: 200, deliveryHeaders: false } });
    probe = await QueueProbe.bind(EXCHANGE, '#', `${EXCHANGE}.probe`);
  }, timeoutFor(STARTUP_TIMEOUT_MS));

  afterAll(async () => {
    await probe?.close();
    await app?.close();
  });

  function publish(headers?: Record<string, unknown>): Promise<string> {
    const outbox = app.get(OutboxService);
    const messageId = randomUUID();
    return app
      .get(DataSource)
      .transaction((manager) =>
        outbox.publish({ messageId, type: 'order.paid', exchange: EXCHANGE, routingKey: 'order.paid', payload: { messageId }, headers }, { manager }),
      )
      .then(() => messageId);
  }

  it(
    'sends a message without headers of its own with none, and one with headers with its own only',
    async () => {
      const bare = await publish();
      const tagged = await publish({ tenant: 'acme', 'x-retry-of': 'none' });
      await probe.waitFor(2);
      const byId = new Map(probe.messages.map((message) => [message.properties.messageId as string, message]));
      // amqplib always sends a header table, empty here.
      expect(byId.get(bare)!.properties.headers).toEqual({});
      expect(byId.get(tagged)!.properties.headers).toEqual({ tenant: 'acme', 'x-retry-of': 'none' });
      for (const message of byId.values()) {
        expect(message.properties).toMatchObject({ type: 'order.paid', contentType: 'application/json', deliveryMode: 2 });
      }
    },
    timeoutFor(STARTUP_TIMEOUT_MS),
  );
});
