import { INestApplicationContext } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { OutboxMessage, OutboxService } from '../../lib';
import { OutboxDispatcher } from '../../lib/entries/admin';
import { brokerName } from '../support/broker-names';
import { testDatabase } from '../support/database';
import { AMQP_URL } from '../support/environment';
import { publishMany } from '../support/publish-many';
import { assertExchange, QueueProbe } from '../support/queue-probe';
import { TcpProxy } from '../support/tcp-proxy';
import { createTestApp } from '../support/test-app';
import { sleep, STARTUP_TIMEOUT_MS, timeoutFor, WAIT_TIMEOUT_MS, waitUntil } from '../support/wait';

const database = testDatabase('it_broker_outage');
const EXCHANGE = brokerName('it.broker-outage');

/**
 * The library's default timings, 60 times faster, so that a 30-minute outage takes 30 s; all but
 * the send timeout, which bounds one confirm, and a confirm takes as long as the broker needs:
 * shortened, it would time out healthy sends of the backlog after the outage. A dispatcher that
 * spent attempts during an outage would show it in the attempt counts, which must stay 0.
 */
const SPEED_UP = 60;
const COMPRESSED_DEFAULTS = {
  backoffBaseMs: Math.round(1_000 / SPEED_UP),
  backoffMaxMs: Math.round(300_000 / SPEED_UP),
  pollIntervalMs: Math.round(1_000 / SPEED_UP),
};
const OUTAGE_MS = (30 * 60_000) / SPEED_UP;
/** amqp-connection-manager's 5 s between reconnection attempts, compressed too. */
const RECONNECT_SECONDS = 5 / SPEED_UP;

interface Row {
  message_id: string;
  status: string;
  attempts: number;
}

const rows = async (): Promise<Row[]> =>
  (await database.sql(`SELECT message_id, status, attempts FROM {outbox_message}`)).map((row) => ({ ...row, attempts: Number(row.attempts) }));

const message = (n: number): OutboxMessage => ({ type: 'test.outage', exchange: EXCHANGE, routingKey: 'outage', bizKey: `outage-${n}`, payload: { n } });

describe('Broker outage', () => {
  let proxy: TcpProxy;
  let probe: QueueProbe;
  let app: INestApplicationContext;

  beforeAll(async () => {
    await database.reset();
    await assertExchange(EXCHANGE);
    proxy = await TcpProxy.inFrontOf(AMQP_URL);
    probe = await QueueProbe.bind(EXCHANGE, '#', `${EXCHANGE}.probe`);
    app = await createTestApp({ database, amqpUrl: proxy.rewrite(AMQP_URL), amqpReconnectSeconds: RECONNECT_SECONDS, outbox: COMPRESSED_DEFAULTS });
  }, timeoutFor(STARTUP_TIMEOUT_MS));

  afterAll(async () => {
    await app?.close();
    await probe?.close();
    await proxy?.close();
  });

  it(
    'spends no attempts during a 30-minute outage (60× compressed), keeps messages cancellable, and sends the backlog once the broker is back',
    async () => {
      const before = await publishMany(app, 2_000, message, { perTransaction: 500 });
      // Cut while the backlog is being sent: some messages are confirmed, some in flight, some still waiting.
      await waitUntil(() => probe.messages.length > 0, 'the backlog is being sent');
      proxy.cut();

      const during = await publishMany(app, 200, (n) => message(2_000 + n), { perTransaction: 50 });
      // A message that cannot be sent is not "being sent right now": it can still be cancelled.
      const cancelled = await app.get(DataSource).transaction((manager) => app.get(OutboxService).cancel('outage-2100', undefined, { manager }));
      expect(cancelled).toBe(1);
      // The outage itself: a clock that must pass.
      await sleep(OUTAGE_MS);

      const atEnd = await rows();
      expect(atEnd.filter((row) => !['PENDING', 'DONE', 'ABANDONED'].includes(row.status))).toEqual([]);
      expect(atEnd.filter((row) => row.attempts !== 0)).toEqual([]);
      expect(atEnd.some((row) => row.status === 'PENDING')).toBe(true);
      // Some messages were in flight at the cut and given back, unattempted.
      expect(app.get(OutboxDispatcher).stats.released).toBeGreaterThan(0);

      proxy.restore();
      const expected = [...before, ...during.filter((_, n) => n !== 100)];
      const sent = async () => (await rows()).filter((row) => row.status === 'DONE').length === expected.length;
      await waitUntil(sent, 'the backlog is sent', WAIT_TIMEOUT_MS);
      expect((await rows()).filter((row) => row.attempts !== 0)).toEqual([]);
      await probe.flush();
      // Messages in flight at the cut may have reached the broker before their confirm was lost:
      // they are sent again (at least once), never lost.
      expect(new Set(probe.messageIds)).toEqual(new Set(expected));
    },
    timeoutFor(OUTAGE_MS, WAIT_TIMEOUT_MS, WAIT_TIMEOUT_MS),
  );
});
