import { INestApplicationContext } from '@nestjs/common';
import { Channel, ChannelModel, connect, ConsumeMessage } from 'amqplib';
import fc from 'fast-check';
import { randomUUID } from 'node:crypto';
import { DataSource, EntityManager } from 'typeorm';
import { OutboxMessage, OutboxMessageInvalidError, OutboxService } from '../../lib';
import { ATTEMPT_HEADER, PUBLISHED_AT_HEADER } from '../../lib/entries/transports';
import { canonicalJson } from '../support/amqplib-codec';
import { brokerName } from '../support/broker-names';
import { testDatabase } from '../support/database';
import { AMQP_URL } from '../support/environment';
import { MessageDraft, messageDraft, nested, text } from '../support/message-arbitraries';
import { QueueProbe } from '../support/queue-probe';
import { createTestApp } from '../support/test-app';
import { timeoutFor, waitUntil, WAIT_TIMEOUT_MS } from '../support/wait';

const database = testDatabase('it_publish_limits');
const EXCHANGE = brokerName('it.publish-limits');
/** Property runs: each publishes one random message in a transaction of its own. */
const RUNS = Number(process.env.PUBLISH_LIMITS_RUNS ?? 150);
/** Small, so that random payloads cross it. */
const MAX_PAYLOAD_BYTES = 8_192;
const DEFAULT_MAX_ATTEMPTS = 10;
/** An exchange name of exactly 255 bytes of UTF-8, the most AMQP carries. */
const LONG_EXCHANGE = padToBytes(`${EXCHANGE}.`, 255);

function padToBytes(prefix: string, bytes: number): string {
  const room = bytes - Buffer.byteLength(prefix);
  return `${prefix}${'é'.repeat(Math.floor(room / 2))}${'x'.repeat(room % 2)}`;
}

/** What arrived is compared with the JSON round trip of what was given; RabbitMQ removes BCC from deliveries by design. */
function expectedHeaders(message: OutboxMessage): Record<string, unknown> {
  const sent = JSON.parse(JSON.stringify(message.headers ?? {})) as Record<string, unknown>;
  delete sent.BCC;
  return sent;
}

/**
 * Exchange names for random messages: mostly the test's own, else a random one the test declares
 * (never `amq.*`, reserved), ending in the database kind. The database projects run this file at
 * once on one broker, and a name two of them generate (fast-check favours some, e.g. `toString`)
 * would bring one project's messages to the other's probe.
 */
const exchangeName = fc.oneof(
  { weight: 3, arbitrary: fc.constant(EXCHANGE) },
  { weight: 1, arbitrary: text(30, true).map((name) => (name === '' || name.startsWith('amq.') ? EXCHANGE : brokerName(name))) },
);

describe('publish() refuses what cannot be stored or sent, and delivers the rest exactly as given', () => {
  let app: INestApplicationContext;
  let outbox: OutboxService;
  let dataSource: DataSource;
  let probe: QueueProbe;
  let broker: ChannelModel;
  let declarer: Channel;
  /** Every message id this file had stored, to tell a phantom delivery. */
  const stored = new Set<string>();
  let sequence = 0;

  beforeAll(async () => {
    await database.reset();
    probe = await QueueProbe.bind(EXCHANGE, '#', `${EXCHANGE}.probe`);
    broker = await connect(AMQP_URL);
    declarer = await broker.createChannel();
    // A refused declaration rejects its own call; the channel's error event must not end the process.
    declarer.on('error', () => undefined);
    await declarer.assertExchange(LONG_EXCHANGE, 'fanout', { durable: false, autoDelete: true });
    await declarer.bindQueue(probe.queue, LONG_EXCHANGE, '');
    app = await createTestApp({
      database,
      outbox: { pollIntervalMs: 100, maxPayloadBytes: MAX_PAYLOAD_BYTES, maxAttempts: DEFAULT_MAX_ATTEMPTS, backoffBaseMs: 100, backoffMaxMs: 500 },
    });
    outbox = app.get(OutboxService);
    dataSource = app.get(DataSource);
  }, timeoutFor(WAIT_TIMEOUT_MS));

  afterAll(async () => {
    await app?.close();
    // Deleting the probe's queue removes the bindings of the random exchanges, which are auto-delete.
    await probe?.close();
    await broker?.close().catch(() => undefined);
  });

  const rowCount = async () => Number((await database.sql(`SELECT count(*) AS n FROM {outbox_message}`))[0].n);
  const delivery = (messageId: string): ConsumeMessage | undefined => probe.messages.find((m) => m.properties.messageId === messageId);

  /** Waits for the delivery of `messageId` and compares every field with what was given, and the stored keys with the row. */
  async function expectDeliveredAsGiven(message: OutboxMessage, messageId: string): Promise<void> {
    await waitUntil(() => delivery(messageId) !== undefined, `message ${messageId} arrived`);
    const arrived = delivery(messageId)!;
    expect(arrived.fields.exchange).toBe(message.exchange);
    expect(arrived.fields.routingKey).toBe(message.routingKey);
    expect(arrived.properties.type).toBe(message.type);
    if (message.messageId) expect(messageId).toBe(message.messageId.toLowerCase());
    // The message's headers, with the delivery headers over them.
    const { [PUBLISHED_AT_HEADER]: publishedAt, ...headers } = arrived.properties.headers ?? {};
    expect(publishedAt).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    expect(canonicalJson(headers)).toBe(canonicalJson({ ...expectedHeaders(message), [ATTEMPT_HEADER]: 1 }));
    expect(arrived.content.equals(Buffer.from(JSON.stringify(message.payload), 'utf8'))).toBe(true);
    const [row] = await database.sql(
      `SELECT message_type, biz_key, ordering_key, exchange, routing_key, max_attempts FROM {outbox_message} WHERE message_id = ?`,
      [messageId],
    );
    expect(row).toMatchObject({
      message_type: message.type,
      biz_key: message.bizKey ?? null,
      ordering_key: message.orderingKey ?? null,
      exchange: message.exchange,
      routing_key: message.routingKey,
    });
    expect(Number(row.max_attempts)).toBe(message.maxAttempts ?? DEFAULT_MAX_ATTEMPTS);
  }

  /** Publishes through `manager`, as a new message. */
  async function publishIn(manager: EntityManager, message: OutboxMessage): Promise<string> {
    const result = await outbox.publish(message, { manager });
    expect(result.duplicate).toBe(false);
    stored.add(result.messageId);
    return result.messageId;
  }

  /** Publishes in a transaction of its own; `beforeCommit` runs when the message was accepted. */
  async function publishAlone(message: OutboxMessage, beforeCommit?: () => Promise<void>): Promise<{ messageId?: string; refusal?: unknown }> {
    return dataSource.transaction(async (manager) => {
      let messageId: string;
      try {
        messageId = await publishIn(manager, message);
      } catch (refusal) {
        // A refusal leaves the transaction usable, as any error thrown before a statement does.
        await manager.query('SELECT 1');
        return { refusal };
      }
      await beforeCommit?.();
      return { messageId };
    });
  }

  function goodMessage(change: Partial<OutboxMessage> = {}): OutboxMessage {
    return { type: 'limits.checked', exchange: EXCHANGE, routingKey: 'limits.checked', bizKey: `good-${++sequence}`, payload: { n: sequence }, ...change };
  }

  it(
    'either refuses a random message with OutboxMessageInvalidError, storing nothing, or delivers every field as given',
    async () => {
      let delivered = 0;
      await fc.assert(
        fc.asyncProperty(messageDraft, exchangeName, async (draft: MessageDraft, exchange: string) => {
          const message: OutboxMessage = {
            ...draft,
            exchange,
            // Unique, so that no run is a duplicate of another (shrinking repeats values).
            bizKey: draft.bizKey === undefined ? undefined : `${++sequence}~${draft.bizKey}`,
            messageId: draft.messageId === undefined ? undefined : randomUUID(),
          };
          const before = await rowCount();
          const outcome = await publishAlone(message, async () => {
            // A random exchange of the run, declared before COMMIT so that it exists when the message is sent.
            if (exchange === EXCHANGE) return;
            await declarer.assertExchange(exchange, 'fanout', { durable: false, autoDelete: true });
            await declarer.bindQueue(probe.queue, exchange, '');
          });
          if (outcome.refusal !== undefined) {
            expect(outcome.refusal).toBeInstanceOf(OutboxMessageInvalidError);
            expect(await rowCount()).toBe(before);
            return;
          }
          await expectDeliveredAsGiven(message, outcome.messageId!);
          delivered++;
        }),
        { numRuns: RUNS, interruptAfterTimeLimit: 240_000, markInterruptAsFailure: true },
      );
      // Both outcomes came up: the property was not vacuous.
      expect(delivered).toBeGreaterThan(RUNS / 10);
      expect(delivered).toBeLessThan(RUNS);

      await waitUntil(async () => (await database.statusCounts()).DONE === (await rowCount()), 'every stored message is DONE');
      await probe.flush();
      expect(probe.messages.filter((m) => !stored.has(m.properties.messageId as string))).toEqual([]);
    },
    timeoutFor(240_000, WAIT_TIMEOUT_MS, WAIT_TIMEOUT_MS),
  );
  it.each<[string, string, Partial<OutboxMessage>]>([
    ['an exchange of 200 "é" (400 bytes)', 'exchange', { exchange: 'é'.repeat(200) }],
    ['a type of 100 "€" (300 bytes)', 'type', { type: '€'.repeat(100) }],
    ['a routing key with a lone surrogate', 'routingKey', { routingKey: 'order.\ud800' }],
    ['an exchange with a line break, which RabbitMQ cannot declare', 'exchange', { exchange: `${EXCHANGE}\n` }],
    ['a queue name with a line break as the routing key of the default exchange', 'routingKey', { exchange: '', routingKey: `${EXCHANGE}.probe\r` }],
    ...(['type', 'bizKey', 'orderingKey', 'exchange', 'routingKey'] as const).map((field): [string, string, Partial<OutboxMessage>] => [
      `a NUL in ${field}`,
      field,
      { [field]: 'nul\u0000' },
    ]),
    ['maxAttempts: 3e9', 'maxAttempts', { maxAttempts: 3e9 }],
    ['a header name of 256 bytes', 'headers', { headers: { ['h'.repeat(256)]: 1 } }],
    ['headers over 64 KiB', 'headers', { headers: { big: 'x'.repeat(70_000) } }],
    ['a CC header that is a string', 'headers', { headers: { CC: 'audit' } }],
    ['a nested header named __proto__', 'headers', { headers: JSON.parse('{"trace":{"__proto__":{"polluted":true}}}') }],
    ['a nested table with a hasOwnProperty field', 'headers', { headers: { trace: { hasOwnProperty: 'yes' } } }],
    ['a nested table with a "!" field', 'headers', { headers: { sent: { '!': 'timestamp', value: 1 } } }],
    ['headers of 101 levels', 'headers', { headers: nested(101) }],
    ['a payload over maxPayloadBytes', 'payload', { payload: { blob: '€'.repeat(3_000) } }],
  ])(
    'refuses %s naming the field, inside a transaction that goes on and commits the rest',
    async (_, field, change) => {
      const before = await rowCount();
      const kept = await dataSource.transaction(async (manager) => {
        const first = goodMessage();
        const firstId = await publishIn(manager, first);
        const refusal = await outbox.publish(goodMessage(change), { manager }).then(
          () => undefined,
          (error: unknown) => error,
        );
        expect(refusal).toBeInstanceOf(OutboxMessageInvalidError);
        expect((refusal as OutboxMessageInvalidError).field).toBe(field);
        const second = goodMessage();
        return [
          [first, firstId],
          [second, await publishIn(manager, second)],
        ] as const;
      });
      expect(await rowCount()).toBe(before + 2);
      for (const [message, messageId] of kept) await expectDeliveredAsGiven(message, messageId);
    },
    timeoutFor(WAIT_TIMEOUT_MS, WAIT_TIMEOUT_MS),
  );

  it('rolls back the whole transaction when the refusal is not caught, as any error does', async () => {
    const before = await rowCount();
    await expect(
      dataSource.transaction(async (manager) => {
        await publishIn(manager, goodMessage());
        await outbox.publish(goodMessage({ exchange: 'é'.repeat(200) }), { manager });
      }),
    ).rejects.toThrow(/exchange is 400 bytes in UTF-8, more than AMQP's 255-byte short string/);
    expect(await rowCount()).toBe(before);
  });

  it.each<[string, () => Partial<OutboxMessage>]>([
    ['an exchange of 255 bytes', () => ({ exchange: LONG_EXCHANGE })],
    ['a type of 85 "€" (255 bytes)', () => ({ type: '€'.repeat(85) })],
    ['a routing key of 63 emoji and 3 ASCII (255 bytes)', () => ({ routingKey: `${'😀'.repeat(63)}abc` })],
    ['a routing key with line breaks and other controls', () => ({ routingKey: 'a\r\nb\tc\u001f\u007f' })],
    ['a business key of 255 emoji', () => ({ bizKey: `${'😀'.repeat(247)}${String(++sequence).padStart(8, '0')}` })],
    ['an ordering key of 255 "é"', () => ({ orderingKey: 'é'.repeat(255) })],
    ['an attempt limit of 1000', () => ({ maxAttempts: 1_000 })],
    ["headers of exactly 65,408 bytes (64 KiB less the delivery headers' room)", () => ({ headers: { big: 'x'.repeat(65_395) } })],
    ['headers of 100 levels', () => ({ headers: nested(100) })],
    ['NUL, empty and special names in headers', () => ({ headers: { 'k\u0000': 'v\u0000', '': '', '!': 'timestamp', value: 1, hasOwnProperty: 2 } })],
    ['CC and BCC routing arrays', () => ({ headers: { CC: ['audit.copy', 7], BCC: ['hidden.copy'] } })],
    [
      'header numbers at the edges of their encodings',
      () => ({ headers: { n: [-(2 ** 63), 2 ** 63, 2 ** 53 + 2, -(2 ** 52), 2 ** 50, 1e300, 5e-324, -0.5, 127, -129] } }),
    ],
    ['a payload with NUL and lone surrogates', () => ({ payload: { text: 'a\u0000\ud800\udfff😀' } })],
    ['a payload of exactly maxPayloadBytes', () => ({ payload: 'é'.repeat((MAX_PAYLOAD_BYTES - 2) / 2) })],
  ])(
    'delivers %s exactly as given',
    async (_, change) => {
      const message = goodMessage(change());
      const { messageId, refusal } = await publishAlone(message);
      expect(refusal).toBeUndefined();
      await expectDeliveredAsGiven(message, messageId!);
    },
    timeoutFor(WAIT_TIMEOUT_MS),
  );
});
