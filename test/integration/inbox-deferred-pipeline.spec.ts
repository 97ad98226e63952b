import { RabbitPayload, RabbitRequest, RabbitSubscribe } from '@golevelup/nestjs-rabbitmq';
import { TransactionHost } from '@nestjs-cls/transactional';
import { TransactionalAdapterTypeOrm } from '@nestjs-cls/transactional-adapter-typeorm';
import {
  BadRequestException,
  CallHandler,
  CanActivate,
  ExecutionContext,
  INestApplicationContext,
  Injectable,
  NestInterceptor,
  PipeTransform,
  UseGuards,
  UseInterceptors,
} from '@nestjs/common';
import { ConsumeMessage } from 'amqplib';
import { randomUUID } from 'node:crypto';
import { Observable } from 'rxjs';
import { InboxHandler } from '../../lib';
import { InboxWorker } from '../../lib/entries/admin';
import { BrokerConnection } from '../support/broker-connection';
import { brokerName } from '../support/broker-names';
import { testDatabase } from '../support/database';
import { createTestApp, TestEffect } from '../support/test-app';
import { STARTUP_TIMEOUT_MS, timeoutFor, WAIT_TIMEOUT_MS, waitUntil } from '../support/wait';

const database = testDatabase('it_inbox_deferred_pipeline');
const PREFIX = brokerName('it.inbox-deferred-pipeline');
const EXCHANGE = `${PREFIX}.in`;
const DEAD_LETTERS = `${PREFIX}.dlx`;
const NAMES = ['piped', 'decoded', 'guarded', 'validated'];
const queue = (name: string) => ({
  exchange: EXCHANGE,
  routingKey: name,
  queue: `${PREFIX}.${name}`,
  queueOptions: { durable: false, arguments: { 'x-dead-letter-exchange': DEAD_LETTERS } },
});

interface OrderEvent {
  orderId: number;
  validated?: boolean;
}

/** Rejects odd order ids, as a validation pipe rejects a malformed event. */
class EvenOrdersOnly implements PipeTransform {
  transform(event: OrderEvent): OrderEvent {
    if (event.orderId % 2 === 1) throw new BadRequestException(`order ${event.orderId} is odd`);
    return { ...event, validated: true };
  }
}

/** A wire format of its own: `order:<id>`, not JSON. */
const decodeOrder = (content: Buffer): OrderEvent => ({ orderId: Number(/^order:(\d+)$/.exec(content.toString('utf8'))?.[1] ?? NaN) });

/** Records each time it runs: the context type, the message id, and whether a transaction was active. */
class Probe implements CanActivate, NestInterceptor {
  readonly seen: { type: string; messageId: string; inTransaction: boolean }[] = [];

  canActivate(context: ExecutionContext): boolean {
    this.record(context);
    return true;
  }

  intercept(context: ExecutionContext, next: CallHandler): Observable<unknown> {
    this.record(context);
    return next.handle();
  }

  runsFor(messageId: string) {
    return this.seen.filter((s) => s.messageId === messageId);
  }

  private record(context: ExecutionContext): void {
    const message = context.getArgByIndex<ConsumeMessage>(1);
    this.seen.push({ type: context.getType(), messageId: message.properties.messageId, inTransaction: TransactionHost.getInstance().isTransactionActive() });
  }
}

const guard = new Probe();
const inside = new Probe();
const around = new Probe();

@Injectable()
class DeferredConsumers {
  constructor(private readonly txHost: TransactionHost<TransactionalAdapterTypeOrm>) {}

  @RabbitSubscribe(queue('piped'))
  @InboxHandler({ consumer: 'piped', mode: 'deferred', maxAttempts: 1 })
  async piped(@RabbitPayload(EvenOrdersOnly) event: OrderEvent, @RabbitRequest() message: ConsumeMessage): Promise<void> {
    await this.write('piped', event.validated ? event.orderId : -event.orderId, message);
  }

  @RabbitSubscribe(queue('validated'))
  @InboxHandler({ consumer: 'validated', mode: 'deferred', maxAttempts: 10 })
  async validated(@RabbitPayload(EvenOrdersOnly) event: OrderEvent, @RabbitRequest() message: ConsumeMessage): Promise<void> {
    await this.write('validated', event.orderId, message);
  }

  @RabbitSubscribe({ ...queue('decoded'), deserializer: decodeOrder })
  @InboxHandler({ consumer: 'decoded', mode: 'deferred' })
  async decoded(event: OrderEvent, message: ConsumeMessage): Promise<void> {
    await this.write('decoded', event.orderId, message);
  }

  @RabbitSubscribe(queue('guarded'))
  @UseInterceptors(inside)
  @InboxHandler({ consumer: 'guarded', mode: 'deferred' })
  @UseInterceptors(around)
  @UseGuards(guard)
  async guarded(event: OrderEvent, message: ConsumeMessage): Promise<void> {
    await this.write('guarded', event.orderId, message);
  }

  private write(consumer: string, orderId: number, message: ConsumeMessage) {
    return this.txHost.tx.getRepository(TestEffect).insert({ consumer, orderId, messageId: message.properties.messageId });
  }
}

describe('Deferred @InboxHandler methods run through the same Nest chain and deserializer as transactional ones', () => {
  let app: INestApplicationContext;
  let broker: BrokerConnection;

  beforeAll(async () => {
    await database.reset();
    broker = await BrokerConnection.open();
    await broker.assertExchange(EXCHANGE);
    await broker.channel.deleteExchange(DEAD_LETTERS);
    await broker.assertExchange(DEAD_LETTERS);
    await broker.freshQueues(NAMES.map((name) => `${PREFIX}.${name}`));
    app = await createTestApp({ database, outbox: { pollIntervalMs: 50, backoffBaseMs: 50, backoffMaxMs: 100 }, providers: [DeferredConsumers] });
  }, timeoutFor(STARTUP_TIMEOUT_MS));

  afterAll(async () => {
    await app.close();
    await broker.close();
  });

  const deliver = (routingKey: string, body: Buffer | OrderEvent, messageId: string) =>
    broker.channel.publish(EXCHANGE, routingKey, Buffer.isBuffer(body) ? body : Buffer.from(JSON.stringify(body)), { messageId, type: 'order.paid' });
  const inboxRow = async (consumer: string, messageId: string) =>
    (await database.sql(`SELECT status, last_error FROM {inbox_message} WHERE consumer = ? AND message_id = ?`, [consumer, messageId]))[0];
  const effects = async (consumer: string, messageId: string) =>
    (await database.sql<{ order_id: unknown }>(`SELECT order_id FROM {test_effect} WHERE consumer = ? AND message_id = ?`, [consumer, messageId])).map((r) =>
      Number(r.order_id),
    );
  const processed = (consumer: string, messageId: string) =>
    waitUntil(async () => ['DONE', 'MANUAL_REQUIRED'].includes((await inboxRow(consumer, messageId))?.status), `${consumer} ran message ${messageId}`);

  it(
    'hands the handler what its parameter pipes made of the stored payload',
    async () => {
      const messageId = randomUUID();
      deliver('piped', { orderId: 2 }, messageId);
      await processed('piped', messageId);
      expect(await inboxRow('piped', messageId)).toMatchObject({ status: 'DONE' });
      expect(await effects('piped', messageId)).toEqual([2]);
    },
    timeoutFor(WAIT_TIMEOUT_MS),
  );

  it(
    'treats a pipe rejecting the stored payload as a failed attempt',
    async () => {
      const messageId = randomUUID();
      deliver('piped', { orderId: 3 }, messageId);
      await processed('piped', messageId);
      expect(await inboxRow('piped', messageId)).toMatchObject({ status: 'MANUAL_REQUIRED', last_error: expect.stringMatching(/order 3 is odd/) });
      expect(await effects('piped', messageId)).toEqual([]);
    },
    timeoutFor(WAIT_TIMEOUT_MS),
  );

  it(
    'gives up at once on a payload its pipes refuse with a client error, keeping what the pipe said',
    async () => {
      const messageId = randomUUID();
      deliver('validated', { orderId: 5 }, messageId);
      await processed('validated', messageId);
      const [row] = await database.sql(`SELECT status, attempts, last_error FROM {inbox_message} WHERE consumer = 'validated' AND message_id = ?`, [messageId]);
      expect({ ...row, attempts: Number(row.attempts) }).toMatchObject({
        status: 'MANUAL_REQUIRED',
        attempts: 1,
        last_error: expect.stringMatching(/^InputRejectedError: the method's pipes refused the input \(400\): order 5 is odd/),
      });
    },
    timeoutFor(WAIT_TIMEOUT_MS),
  );

  it(
    "deserializes the stored body with the handler's own deserializer",
    async () => {
      const messageId = randomUUID();
      deliver('decoded', Buffer.from('order:8'), messageId);
      await processed('decoded', messageId);
      expect(await effects('decoded', messageId)).toEqual([8]);
    },
    timeoutFor(WAIT_TIMEOUT_MS),
  );

  it(
    'refuses a body its own deserializer would get back altered from the stored text',
    async () => {
      const messageId = randomUUID();
      deliver('decoded', Buffer.from([0x6f, 0x72, 0xff, 0x00]), messageId);
      await processed('decoded', messageId);
      expect(await inboxRow('decoded', messageId)).toMatchObject({ status: 'MANUAL_REQUIRED', last_error: expect.stringMatching(/use mode 'transactional'/) });
    },
    timeoutFor(WAIT_TIMEOUT_MS),
  );

  it(
    'runs guards and interceptors again when the worker runs the row, the inner ones inside its transaction',
    async () => {
      const messageId = randomUUID();
      deliver('guarded', { orderId: 10 }, messageId);
      await processed('guarded', messageId);
      await app.get(InboxWorker).drain();
      expect(await effects('guarded', messageId)).toEqual([10]);
      // Once when the delivery is stored, once when the worker runs it.
      expect(guard.runsFor(messageId)).toEqual([
        { type: 'rmq', messageId, inTransaction: false },
        { type: 'rmq', messageId, inTransaction: false },
      ]);
      expect(around.runsFor(messageId).map((s) => s.inTransaction)).toEqual([false, false]);
      // Inside the inbox it runs only with the handler, in the transaction that settles the row.
      expect(inside.runsFor(messageId)).toEqual([{ type: 'rmq', messageId, inTransaction: true }]);
    },
    timeoutFor(WAIT_TIMEOUT_MS),
  );
});
