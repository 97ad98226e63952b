import { AmqpConnection } from '@golevelup/nestjs-rabbitmq';
import { INestApplicationContext } from '@nestjs/common';
import { connect } from 'amqplib';
import { randomUUID } from 'node:crypto';
import { OutboxMessage } from '../../lib';
import { brokerName } from '../support/broker-names';
import { testDatabase } from '../support/database';
import { AMQP_URL } from '../support/environment';
import { publishMany } from '../support/publish-many';
import { assertExchange, QueueProbe } from '../support/queue-probe';
import { createTestApp } from '../support/test-app';
import { STARTUP_TIMEOUT_MS, timeoutFor, WAIT_TIMEOUT_MS, waitUntil } from '../support/wait';

const database = testDatabase('it_outbox_channel_errors');
const EXCHANGE = brokerName('it.outbox-channel-errors');
/** An exchange that exists when first published to, and is deleted afterwards. */
const VANISHING = brokerName('it.outbox-channel-errors.vanishing');

interface Row {
  message_id: string;
  status: string;
  attempts: number;
  last_error: string | null;
}

const rowsOf = async (ids: string[]): Promise<Row[]> =>
  (await database.sql(`SELECT message_id, status, attempts, last_error FROM {outbox_message} WHERE message_id IN (?)`, [ids])).map((row) => ({
    ...row,
    attempts: Number(row.attempts),
  }));

const good = (n: number): OutboxMessage => ({ type: 'test.good', exchange: EXCHANGE, routingKey: 'good', payload: { n } });

/**
 * Writes a row as an older version of the library, or a hand-written INSERT, could have: without
 * publish()'s checks, so the transport meets what amqplib or the broker refuse.
 */
async function insertUnchecked(fields: { exchange?: string; routingKey?: string; headers?: string }): Promise<string> {
  const messageId = randomUUID();
  await database.sql(
    `INSERT INTO {outbox_message} (message_id, message_type, exchange, routing_key, payload, headers, status, max_attempts)
     VALUES (?, 'test.unchecked', ?, ?, '{}', ?, 'PENDING', 3)`,
    [messageId, fields.exchange ?? EXCHANGE, fields.routingKey ?? 'unchecked', fields.headers ?? '{}'],
  );
  return messageId;
}

describe('Channel errors on the outbox channel', () => {
  let app: INestApplicationContext;
  let probe: QueueProbe;
  let disconnects = 0;

  beforeAll(async () => {
    await database.reset();
    await assertExchange(EXCHANGE);
    probe = await QueueProbe.bind(EXCHANGE, '#', `${EXCHANGE}.probe`);
    app = await createTestApp({
      database,
      outbox: { pollIntervalMs: 50, maxAttempts: 3, backoffBaseMs: 50, backoffMaxMs: 100, backoffJitter: 0 },
    });
    // The connection the application's consumers share must survive whatever a message causes.
    app.get(AmqpConnection).managedConnection.on('disconnect', () => disconnects++);
  }, timeoutFor(STARTUP_TIMEOUT_MS));

  afterAll(async () => {
    await app?.close();
    await probe?.close();
  });

  /** Waits until every row of `ids` is settled (DONE, or out of attempts). */
  const settled = (ids: string[]) =>
    waitUntil(async () => (await rowsOf(ids)).every((row) => row.status === 'DONE' || row.status === 'MANUAL_REQUIRED'), `${ids.length} row(s) settled`);

  const expectDeliveredOnceUnattempted = async (ids: string[]) => {
    await probe.flush();
    const delivered = probe.messageIds.filter((id) => ids.includes(id));
    expect(new Set(delivered).size).toBe(ids.length);
    expect((await rowsOf(ids)).filter((row) => row.status !== 'DONE' || row.attempts !== 0)).toEqual([]);
  };

  it(
    'fails only the message whose exchange does not exist: its batch is sent unattempted and the connection stays up',
    async () => {
      const missing = brokerName(`it.outbox-channel-errors.missing-${randomUUID()}`);
      const [bad, ...ids] = await publishMany(app, 201, (n) => (n === 0 ? { ...good(n), exchange: missing } : good(n)), { perTransaction: 201 });
      await settled([bad, ...ids]);

      const [badRow] = await rowsOf([bad]);
      expect(badRow).toMatchObject({ status: 'MANUAL_REQUIRED', attempts: 3 });
      expect(badRow.last_error).toContain('ExchangeNotFoundError');
      expect(badRow.last_error).toContain(missing);
      await expectDeliveredOnceUnattempted(ids);
      expect(disconnects).toBe(0);
    },
    timeoutFor(WAIT_TIMEOUT_MS, WAIT_TIMEOUT_MS),
  );

  it(
    'fails only the messages of an exchange deleted after it was checked; the others on the closed channel are sent again',
    async () => {
      const connection = await connect(AMQP_URL);
      try {
        const channel = await connection.createChannel();
        await channel.assertExchange(VANISHING, 'fanout', { durable: false });
        await channel.assertQueue(`${VANISHING}.queue`, { durable: false });
        await channel.bindQueue(`${VANISHING}.queue`, VANISHING, '');
        // The transport learns that the exchange exists…
        const [first] = await publishMany(app, 1, () => ({ ...good(0), exchange: VANISHING }));
        await settled([first]);
        expect((await rowsOf([first]))[0].status).toBe('DONE');
        // …and is not told when it is deleted: the next publications to it reach the broker.
        await channel.deleteExchange(VANISHING);
        await channel.deleteQueue(`${VANISHING}.queue`);
      } finally {
        await connection.close();
      }

      const ids = await publishMany(app, 300, (n) => (n % 60 === 0 ? { ...good(n), exchange: VANISHING } : good(n)), { perTransaction: 300 });
      const vanished = ids.filter((_, n) => n % 60 === 0);
      const others = ids.filter((_, n) => n % 60 !== 0);
      await settled(ids);

      for (const row of await rowsOf(vanished)) {
        expect(row).toMatchObject({ status: 'MANUAL_REQUIRED', attempts: 3 });
        expect(row.last_error).toContain('ExchangeNotFoundError');
      }
      await expectDeliveredOnceUnattempted(others);
      expect(disconnects).toBe(0);
    },
    timeoutFor(WAIT_TIMEOUT_MS, WAIT_TIMEOUT_MS, WAIT_TIMEOUT_MS),
  );

  it(
    'sends a row the broker refuses over a header (no exchange named) alone to find it, and fails only it',
    async () => {
      // RabbitMQ closes the channel with 406 over a CC header that is not an array; its message
      // names no exchange, so every message in flight on that channel is a suspect at first.
      const refused = await insertUnchecked({ headers: JSON.stringify({ CC: 'not-an-array' }) });
      const ids = await publishMany(app, 100, good, { perTransaction: 100 });
      await settled([refused, ...ids]);

      const [row] = await rowsOf([refused]);
      // A 406 is the broker refusing the message itself: no retry can help.
      expect(row).toMatchObject({ status: 'MANUAL_REQUIRED', attempts: 1 });
      expect(row.last_error).toMatch(/BrokerChannelError.*406/);
      await expectDeliveredOnceUnattempted(ids);
      expect(probe.messageIds).not.toContain(refused);
      expect(disconnects).toBe(0);
    },
    timeoutFor(WAIT_TIMEOUT_MS, WAIT_TIMEOUT_MS),
  );

  it(
    'fails rows amqplib cannot encode or RabbitMQ can never route (names over 255 bytes, an over-long header key, a line break) without disturbing the others',
    async () => {
      const unencodable = [
        await insertUnchecked({ exchange: 'é'.repeat(200) }),
        await insertUnchecked({ routingKey: '€'.repeat(100) }),
        await insertUnchecked({ headers: JSON.stringify({ ['k'.repeat(256)]: 1 }) }),
        // RabbitMQ strips CR/LF from the names it declares: a passive check would find `EXCHANGE`.
        await insertUnchecked({ exchange: `${EXCHANGE}\n` }),
      ];
      const ids = await publishMany(app, 100, good, { perTransaction: 100 });
      await settled([...unencodable, ...ids]);

      for (const row of await rowsOf(unencodable)) {
        expect(row).toMatchObject({ status: 'MANUAL_REQUIRED', attempts: 1 });
        expect(row.last_error).toContain('cannot be sent over AMQP');
      }
      await expectDeliveredOnceUnattempted(ids);
      expect(disconnects).toBe(0);
    },
    timeoutFor(WAIT_TIMEOUT_MS, WAIT_TIMEOUT_MS),
  );
});
