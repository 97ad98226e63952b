import { ConsoleLogger, INestApplicationContext } from '@nestjs/common';
import { randomUUID } from 'node:crypto';
import { OutboxMessage } from '../../lib';
import { brokerName } from '../support/broker-names';
import { testDatabase } from '../support/database';
import { publishMany } from '../support/publish-many';
import { QueueProbe } from '../support/queue-probe';
import { createTestApp } from '../support/test-app';
import { STARTUP_TIMEOUT_MS, timeoutFor, WAIT_TIMEOUT_MS, waitUntil } from '../support/wait';

const database = testDatabase('it_unreadable_row_lane');
const EXCHANGE = brokerName('it.unreadable-row-lane');
const QUEUE = brokerName('it.unreadable-row-lane.probe');
const GOOD = 20;
/** Messages sent one at a time after the others, each only by a later poll of the lane. */
const LATER_POLLS = 3;

/**
 * Headers a hand-written INSERT could leave: text that is not JSON where the column is text,
 * JSON that is not an object where PostgreSQL's json type refuses the rest.
 */
const BAD_HEADERS = database.kind === 'postgres' ? '["x-trace", "not an object"]' : '{"x-trace": "cut off';

describe('A lane with a row whose headers cannot be read', () => {
  let writer: INestApplicationContext;
  let dispatcher: INestApplicationContext;
  let probe: QueueProbe;
  let errors: jest.SpyInstance;

  beforeAll(async () => {
    await database.reset();
    probe = await QueueProbe.bind(EXCHANGE, '#', QUEUE);
    // Writes only: every row waits in the table until the dispatcher's first claim.
    writer = await createTestApp({ database, outbox: { dispatcherEnabled: false } });
  }, timeoutFor(STARTUP_TIMEOUT_MS));

  afterAll(async () => {
    errors?.mockRestore();
    await dispatcher?.close();
    await writer?.close();
    await probe?.close();
  });

  const message = (n: number): OutboxMessage => ({ type: 'test.good', exchange: EXCHANGE, routingKey: 'good', payload: { n } });

  it(
    'sends the 20 messages claimed with it, and sets it aside as MANUAL_REQUIRED with the reason, logged once',
    async () => {
      const badId = randomUUID();
      await database.sql(
        `INSERT INTO {outbox_message} (message_id, message_type, exchange, routing_key, payload, headers, status, max_attempts)
         VALUES (?, 'test.unreadable', ?, 'bad', '{}', ?, 'PENDING', 5)`,
        [badId, EXCHANGE, BAD_HEADERS],
      );
      const good = await publishMany(writer, GOOD, message, { perTransaction: GOOD });

      errors = jest.spyOn(ConsoleLogger.prototype, 'error');
      // One claim takes the bad row (the lowest id) and the 20 behind it.
      dispatcher = await createTestApp({ database, outbox: { pollIntervalMs: 100, batchSize: 50 } });
      await waitUntil(() => good.every((id) => probe.messageIds.includes(id)), `the ${GOOD} good messages arrive`, WAIT_TIMEOUT_MS);

      // Later polls of the lane, each proven by a message only it could send.
      for (let n = 0; n < LATER_POLLS; n++) {
        const [later] = await publishMany(writer, 1, message);
        await waitUntil(() => probe.messageIds.includes(later), 'a message published later arrives', WAIT_TIMEOUT_MS);
      }

      const [row] = await database.sql(`SELECT status, attempts, last_error FROM {outbox_message} WHERE message_id = ?`, [badId]);
      expect({ status: row.status, attempts: Number(row.attempts) }).toEqual({ status: 'MANUAL_REQUIRED', attempts: 0 });
      expect(row.last_error).toMatch(/^UnreadableRowError: Column headers cannot be read: (not JSON|expected a JSON object, found an array)/);
      expect(probe.messageIds).not.toContain(badId);
      const aboutBadRow = errors.mock.calls.filter(([text]) => String(text).includes(badId));
      expect(aboutBadRow).toHaveLength(1);
      expect(String(aboutBadRow[0][0])).toContain('is now MANUAL_REQUIRED: UnreadableRowError: Column headers cannot be read');
      // The last message can reach the queue before its settle commits.
      const doneUnattempted = async () =>
        Number((await database.sql(`SELECT count(*) AS n FROM {outbox_message} WHERE status = 'DONE' AND attempts = 0`))[0].n);
      await waitUntil(async () => (await doneUnattempted()) === GOOD + LATER_POLLS, 'every good message is DONE, unattempted', WAIT_TIMEOUT_MS);
    },
    timeoutFor(WAIT_TIMEOUT_MS, WAIT_TIMEOUT_MS, WAIT_TIMEOUT_MS, WAIT_TIMEOUT_MS, WAIT_TIMEOUT_MS),
  );
});
