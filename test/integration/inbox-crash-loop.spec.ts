import { once } from 'node:events';
import { randomUUID } from 'node:crypto';
import { BrokerConnection } from '../support/broker-connection';
import { brokerName } from '../support/broker-names';
import { ChildApp, killAllChildren } from '../support/child-app';
import { testDatabase } from '../support/database';
import { InboxFixtureConfig } from '../support/inbox-fixture';
import { QueueProbe } from '../support/queue-probe';
import { STARTUP_TIMEOUT_MS, waitUntil } from '../support/wait';

const database = testDatabase('it_inbox_crash_loop');
const PREFIX = brokerName('it.inbox-crash-loop');
const CONSUMER = 'crash-loop';
const MAX_ATTEMPTS = 2;

/** A transactional handler that SIGKILLs its own process on every delivery, after its writes. */
const config: InboxFixtureConfig = {
  exchange: `${PREFIX}.in`,
  routingKey: 'order.paid',
  outExchange: `${PREFIX}.out`,
  deadLetterExchange: `${PREFIX}.dlx`,
  consumers: [{ name: CONSUMER, queue: `${PREFIX}.orders` }],
  mode: 'transactional',
  maxAttempts: MAX_ATTEMPTS,
  crash: 'in-handler',
  announceStarts: true,
};

describe('A transactional delivery whose handler kills its process (real processes)', () => {
  let broker: BrokerConnection;
  let dead: QueueProbe;

  beforeAll(async () => {
    await database.reset();
    broker = await BrokerConnection.open();
    await broker.prepareInboxes([config], { outExchange: true });
    dead = await QueueProbe.bind(config.deadLetterExchange, '#', `${PREFIX}.dead`);
  });

  afterEach(() => killAllChildren());

  afterAll(async () => {
    await dead.close();
    await broker.close();
  });

  const inboxRow = async (messageId: string) => {
    const [row] = await database.sql(`SELECT status, attempts, last_error FROM {inbox_message} WHERE consumer = ? AND message_id = ?`, [CONSUMER, messageId]);
    return row && { ...row, attempts: Number(row.attempts) };
  };
  const effects = async () => Number((await database.sql(`SELECT count(*) AS n FROM {test_effect} WHERE consumer = ?`, [CONSUMER]))[0].n);

  it('counts the starts of a redelivered handler, and gives the delivery up (MANUAL_REQUIRED, dead-lettered) after maxAttempts + 1 starts', async () => {
    const messageId = randomUUID();
    let starts = 0;
    let published = false;
    const deadLettered = () => dead.messageIds.includes(messageId);
    for (let generation = 1; !deadLettered(); generation++) {
      if (generation > MAX_ATTEMPTS + 3) throw new Error(`still not given up after ${generation - 1} consumer processes`);
      const child = await ChildApp.start(`it-inbox-crash-loop-${generation}`, { database, inbox: config }, STARTUP_TIMEOUT_MS);
      // Its output is complete only once its pipes close, which may come after the exit.
      const outputComplete = once(child.process, 'close');
      // The consumer's queue exists once the first child subscribed.
      if (!published) {
        broker.channel.publish(config.exchange, config.routingKey, Buffer.from(JSON.stringify({ orderId: 1 })), { messageId, type: 'order.paid' });
        published = true;
      }
      // Every child either dies in the handler or, once the attempts are used up, dead-letters the delivery.
      await waitUntil(() => !child.isRunning || deadLettered(), `${child.name} crashed or gave the delivery up`, 120_000);
      if (child.isRunning) {
        // A process that gave up stays up.
        await child.stop();
      } else {
        expect((await child.exited).signal).toBe('SIGKILL');
      }
      await outputComplete;
      starts += child.stdout.split('\n').filter((line) => line === `HANDLER_STARTED ${CONSUMER} ${messageId}`).length;
    }

    // The first delivery is not counted before it runs (first deliveries pay no extra write);
    // each redelivery is, so the handler starts once more than maxAttempts.
    expect(starts).toBe(MAX_ATTEMPTS + 1);
    expect(await inboxRow(messageId)).toEqual({
      status: 'MANUAL_REQUIRED',
      attempts: MAX_ATTEMPTS,
      last_error: expect.stringMatching(/gave up without running the handler again: its attempts are used up and the last one started and never finished/),
    });
    expect(dead.messageIds.filter((id) => id === messageId)).toHaveLength(1);
    // None of the killed handlers' writes committed.
    expect(await effects()).toBe(0);
  }, 900_000);
});
