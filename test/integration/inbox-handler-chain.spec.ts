import { RabbitPayload, RabbitRequest, RabbitSubscribe } from '@golevelup/nestjs-rabbitmq';
import { TransactionHost } from '@nestjs-cls/transactional';
import { TransactionalAdapterTypeOrm } from '@nestjs-cls/transactional-adapter-typeorm';
import {
  BadRequestException,
  CallHandler,
  ExecutionContext,
  INestApplicationContext,
  Injectable,
  NestInterceptor,
  PipeTransform,
  UseInterceptors,
} from '@nestjs/common';
import { ConsumeMessage } from 'amqplib';
import { randomUUID } from 'node:crypto';
import { Observable } from 'rxjs';
import { InboxHandler } from '../../lib';
import { BrokerConnection } from '../support/broker-connection';
import { brokerName } from '../support/broker-names';
import { testDatabase } from '../support/database';
import { QueueProbe } from '../support/queue-probe';
import { createTestApp, TestEffect } from '../support/test-app';
import { STARTUP_TIMEOUT_MS, timeoutFor, WAIT_TIMEOUT_MS, waitUntil } from '../support/wait';

const database = testDatabase('it_inbox_chain');
const PREFIX = brokerName('it.inbox-chain');
const EXCHANGE = `${PREFIX}.in`;
const DEAD_LETTERS = `${PREFIX}.dlx`;
const queue = (name: string) => ({
  exchange: EXCHANGE,
  routingKey: name,
  queue: `${PREFIX}.${name}`,
  queueOptions: { durable: false, arguments: { 'x-dead-letter-exchange': DEAD_LETTERS } },
});

interface ChainEvent {
  orderId: number;
  validated?: boolean;
}

/** Rejects odd order ids, as a validation pipe rejects a malformed event. */
class EvenOrdersOnly implements PipeTransform {
  transform(event: ChainEvent): ChainEvent {
    if (event.orderId % 2 === 1) throw new BadRequestException(`order ${event.orderId} is odd`);
    return { ...event, validated: true };
  }
}

/** Records, each time it runs, whether a transaction was active. */
class TransactionProbe implements NestInterceptor {
  readonly seen: boolean[] = [];

  intercept(_: ExecutionContext, next: CallHandler): Observable<unknown> {
    this.seen.push(TransactionHost.getInstance().isTransactionActive());
    return next.handle();
  }
}

const inside = new TransactionProbe();
const around = new TransactionProbe();

@Injectable()
class ChainConsumers {
  constructor(private readonly txHost: TransactionHost<TransactionalAdapterTypeOrm>) {}

  @RabbitSubscribe(queue('piped'))
  @InboxHandler({ consumer: 'piped', maxAttempts: 1 })
  async piped(@RabbitPayload(EvenOrdersOnly) event: ChainEvent, @RabbitRequest() message: ConsumeMessage): Promise<void> {
    await this.write('piped', event.validated ? event.orderId : -event.orderId, message);
  }

  @RabbitSubscribe(queue('intercepted'))
  @UseInterceptors(inside)
  @InboxHandler({ consumer: 'intercepted' })
  @UseInterceptors(around)
  async intercepted(event: ChainEvent, message: ConsumeMessage): Promise<void> {
    await this.write('intercepted', event.orderId, message);
  }

  private write(consumer: string, orderId: number, message: ConsumeMessage) {
    return this.txHost.tx.getRepository(TestEffect).insert({ consumer, orderId, messageId: message.properties.messageId });
  }
}

describe('@InboxHandler with the rest of the Nest handler chain', () => {
  let app: INestApplicationContext;
  let broker: BrokerConnection;
  let dead: QueueProbe;

  beforeAll(async () => {
    await database.reset();
    broker = await BrokerConnection.open();
    await broker.assertExchange(EXCHANGE);
    await broker.channel.deleteExchange(DEAD_LETTERS);
    dead = await QueueProbe.bind(DEAD_LETTERS, '#', `${PREFIX}.dead`);
    await broker.freshQueues([`${PREFIX}.piped`, `${PREFIX}.intercepted`]);
    app = await createTestApp({ database, outbox: { pollIntervalMs: 50, backoffBaseMs: 50, backoffMaxMs: 100 }, providers: [ChainConsumers] });
  }, timeoutFor(STARTUP_TIMEOUT_MS));

  afterAll(async () => {
    await app.close();
    await dead.close();
    await broker.close();
  });

  const deliver = (routingKey: string, body: ChainEvent, messageId: string) =>
    broker.channel.publish(EXCHANGE, routingKey, Buffer.from(JSON.stringify(body)), { messageId, type: 'order.paid', contentType: 'application/json' });
  const inboxRow = async (consumer: string, messageId: string) =>
    (await database.sql(`SELECT status, last_error FROM {inbox_message} WHERE consumer = ? AND message_id = ?`, [consumer, messageId]))[0];
  const effects = async (consumer: string, messageId: string) =>
    (await database.sql<{ order_id: unknown }>(`SELECT order_id FROM {test_effect} WHERE consumer = ? AND message_id = ?`, [consumer, messageId])).map((r) =>
      Number(r.order_id),
    );

  it(
    'hands the handler what its parameter pipes made of the payload',
    async () => {
      const messageId = randomUUID();
      deliver('piped', { orderId: 2 }, messageId);
      await waitUntil(async () => (await inboxRow('piped', messageId))?.status === 'DONE', 'the delivery is processed');
      expect(await effects('piped', messageId)).toEqual([2]);
    },
    timeoutFor(WAIT_TIMEOUT_MS),
  );

  it(
    'treats a pipe rejecting the payload as a failed attempt: recorded, given up on, dead-lettered',
    async () => {
      const messageId = randomUUID();
      deliver('piped', { orderId: 3 }, messageId);
      await waitUntil(() => dead.messageIds.includes(messageId), 'the delivery is dead-lettered');
      expect(await inboxRow('piped', messageId)).toMatchObject({ status: 'MANUAL_REQUIRED', last_error: expect.stringMatching(/order 3 is odd/) });
      expect(await effects('piped', messageId)).toEqual([]);
    },
    timeoutFor(WAIT_TIMEOUT_MS),
  );

  it(
    'runs an interceptor written above @InboxHandler inside the inbox transaction, and one written below around it',
    async () => {
      const messageId = randomUUID();
      deliver('intercepted', { orderId: 4 }, messageId);
      await waitUntil(async () => (await inboxRow('intercepted', messageId))?.status === 'DONE', 'the delivery is processed');
      expect(await effects('intercepted', messageId)).toEqual([4]);
      expect(inside.seen).toEqual([true]);
      expect(around.seen).toEqual([false]);
    },
    timeoutFor(WAIT_TIMEOUT_MS),
  );
});
