import { INestApplicationContext } from '@nestjs/common';
import { brokerName } from '../support/broker-names';
import { testDatabase } from '../support/database';
import { AMQP_URL } from '../support/environment';
import { assertExchange, QueueProbe } from '../support/queue-probe';
import { toDate } from '../support/sql-values';
import { TcpProxy } from '../support/tcp-proxy';
import { createTestApp, OrderPayments } from '../support/test-app';
import { waitUntil } from '../support/wait';

const database = testDatabase('it_broker_outage');
const EXCHANGE = brokerName('it.broker-outage');

interface Row {
  message_id: string;
  status: string;
  attempts: number;
  next_attempt_at: Date;
  last_error: string | null;
}

const rows = async (ids: string[]): Promise<Row[]> =>
  (await database.sql(`SELECT message_id, status, attempts, next_attempt_at, last_error FROM {outbox_message} WHERE message_id IN (?) ORDER BY id`, [ids])).map(
    (row) => ({ ...row, attempts: Number(row.attempts), next_attempt_at: toDate(row.next_attempt_at)! }),
  );

describe('Broker outage', () => {
  let proxy: TcpProxy;
  let probe: QueueProbe;
  let app: INestApplicationContext | undefined;

  beforeAll(async () => {
    await database.reset();
    await assertExchange(EXCHANGE);
    const broker = new URL(AMQP_URL);
    proxy = await TcpProxy.start(broker.hostname, Number(broker.port || 5672));
  });

  beforeEach(async () => {
    proxy.restore();
    probe = await QueueProbe.bind(EXCHANGE, '#', `${EXCHANGE}.probe`);
  });

  afterEach(async () => {
    await app?.close();
    app = undefined;
    await probe.close();
  });

  afterAll(() => proxy.close());

  it('keeps messages FAILED with growing next_attempt_at while the broker is unreachable, then delivers all without a restart', async () => {
    app = await createTestApp({
      database,
      amqpUrl: proxy.rewrite(AMQP_URL),
      outbox: { pollIntervalMs: 50, sendTimeoutMs: 300, backoffBaseMs: 200, backoffMaxMs: 800, backoffJitter: 0, maxAttempts: 1000 },
    });
    const payments = app.get(OrderPayments);
    await payments.pay(EXCHANGE); // the transport's channel is up before the outage
    await probe.waitFor(1);

    proxy.cut();
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) ids.push((await payments.pay(EXCHANGE)).messageId);

    await waitUntil(async () => (await rows(ids)).every((r) => r.status === 'FAILED' && r.attempts >= 1), 'all rows FAILED once');
    const first = await rows(ids);
    // Counted from the first read: by the time every row was FAILED at once, some may have failed
    // several times already, and an absolute count could be reached with no retry in between.
    await waitUntil(async () => (await rows(ids)).every((r, i) => r.attempts >= first[i].attempts + 2), 'every row retried twice more', 30_000);
    const later = await rows(ids);
    for (const [index, row] of later.entries()) {
      expect(row.status).toBe('FAILED');
      expect(row.next_attempt_at.getTime()).toBeGreaterThan(first[index].next_attempt_at.getTime());
      expect(row.last_error).toMatch(/SendTimeoutError|confirm/);
    }
    expect(probe.messages).toHaveLength(1);

    proxy.restore();
    await probe.waitFor(1 + ids.length, 30_000);
    await waitUntil(async () => (await rows(ids)).every((r) => r.status === 'DONE'), 'all rows DONE');
    expect(new Set(probe.messageIds)).toEqual(new Set([...probe.messageIds.slice(0, 1), ...ids]));
  });

  it('moves a message to MANUAL_REQUIRED with its last error once attempts are exhausted', async () => {
    app = await createTestApp({
      database,
      amqpUrl: proxy.rewrite(AMQP_URL),
      outbox: { pollIntervalMs: 50, sendTimeoutMs: 200, backoffBaseMs: 50, backoffMaxMs: 100, maxAttempts: 3 },
    });
    proxy.cut();
    const { messageId } = await app.get(OrderPayments).pay(EXCHANGE);
    await waitUntil(async () => (await rows([messageId]))[0].status === 'MANUAL_REQUIRED', 'the row is MANUAL_REQUIRED', 30_000);
    const [row] = await rows([messageId]);
    expect(row.attempts).toBe(3);
    expect(row.last_error).toMatch(/SendTimeoutError/);
    proxy.restore();
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    expect(probe.messageIds).not.toContain(messageId);
  });
});
