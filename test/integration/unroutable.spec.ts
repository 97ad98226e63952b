import { INestApplicationContext } from '@nestjs/common';
import { freshSchema, sql } from '../support/database';
import { assertExchange, QueueProbe } from '../support/queue-probe';
import { createTestApp, OrderPayments } from '../support/test-app';
import { waitUntil } from '../support/wait';

const SCHEMA = 'it_unroutable';
const EXCHANGE = 'it.unroutable';

describe('Unroutable messages (mandatory flag)', () => {
  let app: INestApplicationContext;

  beforeAll(async () => {
    await freshSchema(SCHEMA);
    await assertExchange(EXCHANGE);
    app = await createTestApp({ schema: SCHEMA, outbox: { pollIntervalMs: 50, backoffBaseMs: 100, backoffMaxMs: 200, maxAttempts: 1_000 } });
  });

  afterAll(() => app.close());

  it('does not count a message no queue is bound for as sent, and delivers it once a queue is bound', async () => {
    const { messageId } = await app.get(OrderPayments).pay(EXCHANGE);
    const row = async () => (await sql(`SELECT status, attempts, last_error FROM "${SCHEMA}".outbox_message WHERE message_id = $1`, [messageId]))[0];
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
  });
});
