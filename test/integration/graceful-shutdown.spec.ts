import { INestApplicationContext } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { OutboxService } from '../../lib';
import { brokerName } from '../support/broker-names';
import { testDatabase } from '../support/database';
import { assertExchange, QueueProbe } from '../support/queue-probe';
import { createTestApp } from '../support/test-app';
import { STARTUP_TIMEOUT_MS, timeoutFor, WAIT_TIMEOUT_MS, waitUntil } from '../support/wait';

const database = testDatabase('it_graceful_shutdown');
const EXCHANGE = brokerName('it.graceful-shutdown');
const MESSAGES = 2_000;
/** Dispatching 2,000 messages, which takes seconds on a quiet machine. */
const BACKLOG_TIMEOUT_MS = 2 * WAIT_TIMEOUT_MS;

describe('Graceful shutdown', () => {
  let probe: QueueProbe;

  beforeAll(async () => {
    await database.reset();
    await assertExchange(EXCHANGE);
    probe = await QueueProbe.bind(EXCHANGE, '#', `${EXCHANGE}.probe`);
  });

  afterAll(() => probe.close());

  it(
    'leaves no row PROCESSING when the app closes mid-dispatch, and loses nothing',
    async () => {
      const writer = await createTestApp({ database, outbox: { dispatcherEnabled: false } });
      const published: string[] = [];
      await writer.get(DataSource).transaction(async (manager) => {
        for (let n = 0; n < MESSAGES; n++) {
          const message = { type: 'shutdown.test', exchange: EXCHANGE, routingKey: 'x', payload: { n } };
          published.push((await writer.get(OutboxService).publish(message, { manager })).messageId);
        }
      });
      await writer.close();

      let app: INestApplicationContext = await createTestApp({ database, outbox: { batchSize: 50, dispatchConcurrency: 2 } });
      await waitUntil(() => probe.messages.length > 0, 'the first messages arrive');
      await app.close();
      const afterClose = await database.statusCounts();
      expect(afterClose.PROCESSING).toBeUndefined();
      expect(afterClose.DONE).toBeGreaterThan(0);
      // The premise: the app closed while messages were still waiting.
      expect(afterClose.DONE).toBeLessThan(MESSAGES);

      app = await createTestApp({ database, outbox: { pollIntervalMs: 100 } });
      try {
        await waitUntil(async () => (await database.statusCounts()).DONE === MESSAGES, 'every message is DONE', BACKLOG_TIMEOUT_MS);
        await probe.waitFor(MESSAGES);
        expect(new Set(probe.messageIds)).toEqual(new Set(published));
      } finally {
        await app.close();
      }
    },
    timeoutFor(3 * STARTUP_TIMEOUT_MS, WAIT_TIMEOUT_MS, BACKLOG_TIMEOUT_MS, WAIT_TIMEOUT_MS),
  );
});
