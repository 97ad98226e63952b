import { INestApplicationContext } from '@nestjs/common';
import { brokerName } from '../support/broker-names';
import { testDatabase } from '../support/database';
import { assertExchange, QueueProbe } from '../support/queue-probe';
import { createTestApp, OrderPayments } from '../support/test-app';
import { STARTUP_TIMEOUT_MS, timeoutFor, WAIT_TIMEOUT_MS, waitUntil } from '../support/wait';

const database = testDatabase('it_unroutable');
const EXCHANGE = brokerName('it.unroutable');

describe('Unroutable messages (mandatory flag)', () => {
  let app: INestApplicationContext;

  beforeAll(async () => {
    await database.reset();
    await assertExchange(EXCHANGE);
    app = await createTestApp({ database, outbox: { pollIntervalMs: 50, backoffBaseMs: 100, backoffMaxMs: 200, maxAttempts: 1_000 } });
  }, timeoutFor(STARTUP_TIMEOUT_MS));

  afterAll(() => app.close());

  it(
    'does not count a message no queue is bound for as sent, and delivers it once a queue is bound',
    async () => {
      const { messageId } = await app.get(OrderPayments).pay(EXCHANGE);
      const row = async () => {
        const [found] = await database.sql(`SELECT status, attempts, last_error FROM {outbox_message} WHERE message_id = ?`, [messageId]);
        return { ...found, attempts: Number(found.attempts) };
      };
      await waitUntil(async () => (await row()).attempts >= 2, 'two failed attempts');
      expect(await row()).toMatchObject({ status: expect.stringMatching(/FAILED|PROCESSING/), last_error: expect.stringMatching(/UnroutableMessageError/) });

      const probe = await QueueProbe.bind(EXCHANGE, 'order.paid', `${EXCHANGE}.probe`);
      try {
        await probe.waitFor(1);
        expect(probe.messageIds).toEqual([messageId]);
        await waitUntil(async () => (await row()).status === 'DONE', 'the row is DONE');
      } finally {
        await probe.close();
      }
    },
    timeoutFor(3 * WAIT_TIMEOUT_MS),
  );
});
