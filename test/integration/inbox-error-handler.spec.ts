import { MessageErrorHandler, MessageHandlerErrorBehavior, RabbitSubscribe } from '@golevelup/nestjs-rabbitmq';
import { CanActivate, INestApplicationContext, Injectable, UseGuards } from '@nestjs/common';
import { randomUUID } from 'node:crypto';
import { InboxHandler } from '../../lib';
import { BrokerConnection } from '../support/broker-connection';
import { brokerName } from '../support/broker-names';
import { testDatabase } from '../support/database';
import { QueueProbe } from '../support/queue-probe';
import { createTestApp } from '../support/test-app';
import { STARTUP_TIMEOUT_MS, timeoutFor, WAIT_TIMEOUT_MS, waitUntil } from '../support/wait';

const database = testDatabase('it_inbox_error_handler');
const PREFIX = brokerName('it.inbox-error-handler');
const EXCHANGE = `${PREFIX}.in`;
const DEAD_LETTERS = `${PREFIX}.dlx`;
const NAMES = ['module-default', 'own-handler', 'named'];
const queue = (name: string) => ({
  exchange: EXCHANGE,
  routingKey: name,
  queue: `${PREFIX}.${name}`,
  queueOptions: { durable: false, arguments: { 'x-dead-letter-exchange': DEAD_LETTERS } },
});

/** A guard that fails before the inbox runs: golevelup hands the error to the subscription's error handler. */
class RefusingGuard implements CanActivate {
  canActivate(): boolean {
    throw new Error('refused before the inbox');
  }
}

/** The application's own error handler: records what it was given and acknowledges. */
const handled: { messageId: string; error: string }[] = [];
const ownErrorHandler: MessageErrorHandler = (channel, message, error) => {
  handled.push({ messageId: message.properties.messageId, error: String(error?.message) });
  channel.ack(message);
};

@Injectable()
class GuardedConsumers {
  @RabbitSubscribe(queue('module-default'))
  @InboxHandler({ consumer: 'module-default' })
  @UseGuards(RefusingGuard)
  async moduleDefault(): Promise<void> {}

  @RabbitSubscribe({ ...queue('own-handler'), errorHandler: ownErrorHandler })
  @InboxHandler({ consumer: 'own-handler' })
  @UseGuards(RefusingGuard)
  async ownHandler(): Promise<void> {}
}

@Injectable()
class NamedConsumer {
  @RabbitSubscribe({ name: 'named', ...queue('named') })
  @InboxHandler({ consumer: 'named' })
  async handle(): Promise<void> {}
}

describe("The error handler the inbox gives golevelup keeps the application's own", () => {
  let broker: BrokerConnection;
  let dead: QueueProbe;

  beforeAll(async () => {
    await database.reset();
    broker = await BrokerConnection.open();
    await broker.assertExchange(EXCHANGE);
    await broker.channel.deleteExchange(DEAD_LETTERS);
    dead = await QueueProbe.bind(DEAD_LETTERS, '#', `${PREFIX}.dead`);
    await broker.freshQueues(NAMES.map((name) => `${PREFIX}.${name}`));
  });

  afterAll(async () => {
    await dead.close();
    await broker.close();
  });

  const deliver = (routingKey: string, messageId: string) =>
    broker.channel.publish(EXCHANGE, routingKey, Buffer.from(JSON.stringify({ orderId: 1 })), { messageId, type: 'order.paid' });

  describe('in a running application', () => {
    let app: INestApplicationContext;

    beforeAll(async () => {
      app = await createTestApp({ database, providers: [GuardedConsumers], rabbit: { defaultSubscribeErrorBehavior: MessageHandlerErrorBehavior.NACK } });
    }, timeoutFor(STARTUP_TIMEOUT_MS));

    afterAll(() => app.close());

    it(
      "falls back to the module's defaultSubscribeErrorBehavior",
      async () => {
        const messageId = randomUUID();
        deliver('module-default', messageId);
        // NACK rejects without requeueing: the queue's dead-letter exchange gets it.
        await waitUntil(() => dead.messageIds.includes(messageId), 'the refused delivery is dead-lettered');
      },
      timeoutFor(WAIT_TIMEOUT_MS),
    );

    it(
      "calls the handler's own errorHandler",
      async () => {
        const messageId = randomUUID();
        deliver('own-handler', messageId);
        await waitUntil(() => handled.some((h) => h.messageId === messageId), 'the own error handler ran');
        expect(handled.find((h) => h.messageId === messageId)).toEqual({ messageId, error: 'refused before the inbox' });
        expect(dead.messageIds).not.toContain(messageId);
      },
      timeoutFor(WAIT_TIMEOUT_MS),
    );
  });

  it(
    'refuses to start when a handlers entry of RabbitMQModule would replace the error handler the inbox gives',
    async () => {
      await expect(createTestApp({ database, providers: [NamedConsumer], rabbit: { handlers: { named: { errorHandler: ownErrorHandler } } } })).rejects.toThrow(
        /@InboxHandler on NamedConsumer.handle: RabbitMQModule's handlers entry "named" sets errorHandler, .*set it on @RabbitSubscribe\(\) instead/,
      );
    },
    timeoutFor(STARTUP_TIMEOUT_MS),
  );
});
