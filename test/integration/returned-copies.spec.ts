import { INestApplicationContext } from '@nestjs/common';
import { randomUUID } from 'node:crypto';
import { DataSource } from 'typeorm';
import { OutboxMessage, OutboxService } from '../../lib';
import { AckCoalescingProxy } from '../support/ack-coalescing-proxy';
import { brokerName } from '../support/broker-names';
import { testDatabase } from '../support/database';
import { AMQP_URL } from '../support/environment';
import { assertExchange, QueueProbe } from '../support/queue-probe';
import { createTestApp } from '../support/test-app';
import { STARTUP_TIMEOUT_MS, timeoutFor, WAIT_TIMEOUT_MS, waitUntil } from '../support/wait';

const database = testDatabase('it_returned_copies');
const EXCHANGE = brokerName('it.returned-copies');
/** Short, so that the first copy, whose confirm the proxy holds, times out soon. */
const SEND_TIMEOUT_MS = 1_500;

/**
 * A message sent again after a send timeout goes out on the same channel while the broker has
 * not yet confirmed its first copy. When the broker returns both copies as unroutable and confirms
 * them together (`multiple`), each return must count for one copy: the retry was not delivered.
 */
describe('Returned copies of one message on one channel', () => {
  let proxy: AckCoalescingProxy;
  let probe: QueueProbe;
  let app: INestApplicationContext;

  beforeAll(async () => {
    await database.reset();
    await assertExchange(EXCHANGE);
    proxy = await AckCoalescingProxy.inFrontOf(AMQP_URL);
    probe = await QueueProbe.bind(EXCHANGE, 'bound', `${EXCHANGE}.probe`);
    app = await createTestApp({
      database,
      amqpUrl: proxy.rewrite(AMQP_URL),
      outbox: { pollIntervalMs: 50, backoffBaseMs: 100, backoffMaxMs: 200, maxAttempts: 1_000, sendTimeoutMs: SEND_TIMEOUT_MS, stuckReclaimAfterMs: 60_000 },
    });
  }, timeoutFor(STARTUP_TIMEOUT_MS));

  afterAll(async () => {
    await app?.close();
    await probe?.close();
    await proxy?.close();
  });

  const publish = async (routingKey: string): Promise<string> => {
    const message: OutboxMessage = { messageId: randomUUID(), type: 'order.paid', exchange: EXCHANGE, routingKey, payload: { routingKey } };
    await app.get(DataSource).transaction((manager) => app.get(OutboxService).publish(message, { manager }));
    return message.messageId!;
  };

  const rowOf = async (messageId: string) => {
    const [row] = await database.sql(`SELECT status, attempts, last_error FROM {outbox_message} WHERE message_id = ?`, [messageId]);
    return row as { status: string; attempts: number | string; last_error: string | null };
  };

  it(
    'does not count a retried copy as sent when both copies came back unroutable and were confirmed together',
    async () => {
      // The exchange known and the channel open, as in any running application.
      const delivered = await publish('bound');
      await probe.waitFor(1);
      await waitUntil(async () => (await rowOf(delivered)).status === 'DONE', 'the first message is DONE');

      let coalesced = false;
      void proxy.coalesceNextAcks(2).then(() => (coalesced = true));
      const lost = await publish('nowhere');
      // The first copy's confirm is held: its send times out, and the retry goes to the same channel.
      await waitUntil(() => coalesced, 'both copies confirmed at once');
      await waitUntil(async () => {
        const row = await rowOf(lost);
        return row.status === 'DONE' || /UnroutableMessageError/.test(row.last_error ?? '');
      }, 'the retried copy is settled');

      const row = await rowOf(lost);
      expect(row.status).not.toBe('DONE');
      expect(row.last_error).toMatch(/UnroutableMessageError/);
      expect(probe.messageIds).toEqual([delivered]);
    },
    timeoutFor(WAIT_TIMEOUT_MS, WAIT_TIMEOUT_MS, WAIT_TIMEOUT_MS),
  );
});
