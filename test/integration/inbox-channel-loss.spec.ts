import { randomUUID } from 'node:crypto';
import { BrokerConnection } from '../support/broker-connection';
import { brokerName } from '../support/broker-names';
import { ChildApp, killAllChildren } from '../support/child-app';
import { testDatabase } from '../support/database';
import { AMQP_URL } from '../support/environment';
import { FixtureEvent, InboxFixtureConfig } from '../support/inbox-fixture';
import { TcpProxy } from '../support/tcp-proxy';
import { STARTUP_TIMEOUT_MS, waitUntil } from '../support/wait';

const database = testDatabase('it_inbox_channel_loss');
const PREFIX = brokerName('it.inbox-channel-loss');
const CONSUMER = 'channel-loss';

const config: InboxFixtureConfig = {
  exchange: `${PREFIX}.in`,
  routingKey: 'order.paid',
  outExchange: `${PREFIX}.out`,
  deadLetterExchange: `${PREFIX}.dlx`,
  consumers: [{ name: CONSUMER, queue: `${PREFIX}.orders` }],
  maxAttempts: 5,
  announceStarts: true,
};

describe('A transactional inbox delivery whose broker connection drops (real process, AMQP through a proxy)', () => {
  let proxy: TcpProxy;
  let broker: BrokerConnection;

  beforeAll(async () => {
    await database.reset();
    proxy = await TcpProxy.inFrontOf(AMQP_URL);
    broker = await BrokerConnection.open();
    await broker.prepareInboxes([config], { outExchange: true });
  });

  afterEach(async () => {
    proxy.restore();
    await killAllChildren();
  });

  afterAll(async () => {
    await broker.close();
    await proxy.close();
  });

  /**
   * A consumer whose AMQP connection goes through the proxy. The dispatcher is off: the messages
   * the handler publishes stay in the outbox, so that only the inbox meets the dropped connection.
   */
  const startConsumer = (name: string, outbox: Record<string, unknown> = {}) =>
    ChildApp.start(name, { database, inbox: config, amqpUrl: proxy.rewrite(AMQP_URL), outbox: { dispatcherEnabled: false, ...outbox } }, STARTUP_TIMEOUT_MS);
  const deliver = (event: FixtureEvent, messageId: string) =>
    broker.channel.publish(config.exchange, config.routingKey, Buffer.from(JSON.stringify(event)), { messageId, type: 'order.paid' });
  // The children create test_effect at start-up (synchronize), with the library's tables.
  const effects = async (orderId: number) => Number((await database.sql(`SELECT count(*) AS n FROM {test_effect} WHERE order_id = ?`, [orderId]))[0].n);
  const inboxRow = async (messageId: string) => {
    const [row] = await database.sql(`SELECT status, attempts FROM {inbox_message} WHERE consumer = ? AND message_id = ?`, [CONSUMER, messageId]);
    return row && { status: row.status as string, attempts: Number(row.attempts) };
  };
  const readyInQueue = async () => (await broker.channel.checkQueue(config.consumers[0].queue)).messageCount;

  /** Publishes a marker after the connection is back and waits until the child processed it. */
  const processMarker = async (child: ChildApp, orderId: number) => {
    deliver({ orderId }, randomUUID());
    await waitUntil(async () => (await effects(orderId)) === 1, `${child.name} reconnected and processed the marker`, 90_000);
  };

  it('keeps running when the connection drops while the handler runs, and applies the message once after reconnecting', async () => {
    const child = await startConsumer('it-inbox-channel-loss-a');
    const messageId = randomUUID();
    deliver({ orderId: 1, holdMs: 2_000 }, messageId);
    await child.waitForOutput(new RegExp(`HANDLER_STARTED ${CONSUMER} ${messageId}`), 60_000);
    proxy.cut();

    // The handler commits after the drop; golevelup then acknowledges on the closed channel.
    await child.waitForOutput(new RegExp(`the channel closed before message ${messageId} was settled`), 60_000);
    expect(child.isRunning).toBe(true);
    expect(await effects(1)).toBe(1);

    proxy.restore();
    await processMarker(child, 101);
    expect(child.isRunning).toBe(true);
    await child.stop();
    // The redelivery was acknowledged as a duplicate: nothing went back to the queue.
    expect(await readyInQueue()).toBe(0);
    expect(await effects(1)).toBe(1);
    expect(await inboxRow(messageId)).toEqual({ status: 'DONE', attempts: 0 });
  }, 300_000);

  it('keeps running when the connection drops while a failed delivery is held for its backoff, and applies it once after reconnecting', async () => {
    // A first failure is held for about 4 s before it is handed back.
    const child = await startConsumer('it-inbox-channel-loss-b', { backoffBaseMs: 4_000, backoffMaxMs: 5_000, backoffJitter: 0 });
    const messageId = randomUUID();
    deliver({ orderId: 2, failTimes: 1 }, messageId);
    await waitUntil(async () => (await inboxRow(messageId))?.status === 'FAILED', 'the first attempt failed and is held', 90_000);
    proxy.cut();

    // The hold ends with the connection; the nack meets the closed channel.
    await child.waitForOutput(new RegExp(`the channel closed before message ${messageId} was settled`), 60_000);
    expect(child.isRunning).toBe(true);

    proxy.restore();
    await waitUntil(async () => (await effects(2)) === 1, 'the redelivery is processed after reconnecting', 90_000);
    await processMarker(child, 102);
    expect(child.isRunning).toBe(true);
    await child.stop();
    expect(await readyInQueue()).toBe(0);
    expect(await effects(2)).toBe(1);
    // One failed attempt; the successful one is not counted.
    expect(await inboxRow(messageId)).toEqual({ status: 'DONE', attempts: 1 });
  }, 300_000);
});
