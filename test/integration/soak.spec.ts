import { INestApplicationContext } from '@nestjs/common';
import { randomUUID } from 'node:crypto';
import { DataSource } from 'typeorm';
import { OutboxMessage, OutboxMessageInvalidError, OutboxService } from '../../lib';
import { BrokerConnection } from '../support/broker-connection';
import { brokerName } from '../support/broker-names';
import { ChildApp, ChildExit, DispatcherChildConfig, killAllChildren } from '../support/child-app';
import { testDatabase } from '../support/database';
import { AMQP_URL } from '../support/environment';
import { FixtureEvent, InboxFixtureConfig } from '../support/inbox-fixture';
import { QueueProbe } from '../support/queue-probe';
import { TcpProxy } from '../support/tcp-proxy';
import { createTestApp } from '../support/test-app';
import { sleep, STARTUP_TIMEOUT_MS, timeoutFor, WAIT_TIMEOUT_MS, waitUntil } from '../support/wait';

const database = testDatabase('it_soak');
const PREFIX = brokerName('it.soak');

const inbox: InboxFixtureConfig = {
  exchange: `${PREFIX}.in`,
  routingKey: 'order.paid',
  outExchange: `${PREFIX}.out`,
  deadLetterExchange: `${PREFIX}.dlx`,
  consumers: [{ name: 'soak', queue: `${PREFIX}.soak` }],
  mode: 'transactional',
  maxAttempts: 10,
};

/** Orders published through the outbox, about 15 per second. */
const ORDERS = 600;
const PUBLISH_INTERVAL_MS = 65;
/** Every hundredth order goes to an exchange that does not exist, another has a field too long to send. */
const isMissingExchange = (order: number) => order % 100 === 7;
const isOversized = (order: number) => order % 100 === 13;
/** One order in twenty fails its first handler attempt (in each process that handles it). */
const failsFirst = (order: number) => order % 20 === 3;
/** Deliveries the handler holds long enough to be in flight when a connection closes. */
const HELD_ORDERS = 8;
const HOLD_MS = 3_000;

/**
 * The children's timings: claims of a killed instance are reclaimed within seconds, and broker
 * reconnections are quick, so the soak settles within a minute of its last fault.
 */
const CHILD_OUTBOX: DispatcherChildConfig['outbox'] = {
  pollIntervalMs: 100,
  backoffBaseMs: 100,
  backoffMaxMs: 1_000,
  sendTimeoutMs: 5_000,
  stuckCheckIntervalMs: 1_000,
  stuckWarnAfterMs: 6_000,
  stuckReclaimAfterMs: 8_000,
};

describe('Soak: two instances under kills, broker restarts and hostile messages (real processes)', () => {
  let broker: BrokerConnection;
  let proxy: TcpProxy;
  let writer: INestApplicationContext;
  let outgoing: QueueProbe;
  let dead: QueueProbe;
  /** Every instance started, and whether the test killed it. */
  const instances: { child: ChildApp; killed: boolean }[] = [];
  let started = 0;

  const startInstance = async (): Promise<ChildApp> => {
    const child = await ChildApp.start(
      `it-soak-${++started}`,
      { database, inbox, outbox: CHILD_OUTBOX, amqpUrl: proxy.rewrite(AMQP_URL), amqpReconnectSeconds: 0.2 },
      STARTUP_TIMEOUT_MS,
    );
    instances.push({ child, killed: false });
    return child;
  };

  /** Kills the oldest running instance and starts a new one in its place. */
  const replaceAnInstance = async (): Promise<void> => {
    const victim = instances.find((instance) => instance.child.isRunning && !instance.killed)!;
    victim.killed = true;
    await victim.child.kill('SIGKILL');
    await startInstance();
  };

  /** A broker restart as the instances see it: every connection reset, none accepted for a while. */
  const restartBroker = async (downMs: number): Promise<void> => {
    proxy.cut();
    await sleep(downMs);
    proxy.restore();
  };

  beforeAll(
    async () => {
      await database.reset();
      broker = await BrokerConnection.open();
      await broker.prepareInboxes([inbox]);
      outgoing = await QueueProbe.bind(inbox.outExchange, '#', `${PREFIX}.outgoing`);
      dead = await QueueProbe.bind(inbox.deadLetterExchange, '#', `${PREFIX}.dead`);
      proxy = await TcpProxy.inFrontOf(AMQP_URL);
      // The test process only publishes; the two instances dispatch, consume and publish again.
      // Attempts enough that the faults alone (kills reclaim a claim as an attempt; on a loaded
      // machine a confirm can take longer than sendTimeoutMs) do not use up a good order's: with 3,
      // one order once reached MANUAL_REQUIRED on three send timeouts. A message to the missing
      // exchange still spends them all within a few seconds (backoffs of 0.1-1 s).
      writer = await createTestApp({ database, outbox: { dispatcherEnabled: false, maxAttempts: 5 } });
      await Promise.all([startInstance(), startInstance()]);
    },
    timeoutFor(STARTUP_TIMEOUT_MS, STARTUP_TIMEOUT_MS),
  );

  afterAll(async () => {
    await killAllChildren();
    await writer?.close();
    await outgoing?.close();
    await dead?.close();
    await proxy?.close();
    await broker?.close();
  });

  it(
    'exits only when killed, applies every good order once, and leaves every bad message MANUAL_REQUIRED naming its cause',
    async () => {
      const unexpectedExits: string[] = [];
      const watch = (instance: { child: ChildApp; killed: boolean }) =>
        void instance.child.exited.then((exit: ChildExit) => {
          if (!instance.killed) unexpectedExits.push(`${instance.child.name} exited (${JSON.stringify(exit)})${instance.child.diagnostics()}`);
        });
      instances.forEach(watch);
      const startAndWatch = async (work: () => Promise<void>) => {
        const before = instances.length;
        await work();
        instances.slice(before).forEach(watch);
      };

      const outbox = writer.get(OutboxService);
      const dataSource = writer.get(DataSource);
      const refused: number[] = [];
      const publishOrder = async (order: number) => {
        const event: FixtureEvent = { orderId: order, ...(failsFirst(order) ? { failTimes: 1 } : {}) };
        const message: OutboxMessage = {
          type: isOversized(order) ? '€'.repeat(100) : 'order.paid',
          exchange: isMissingExchange(order) ? `${PREFIX}.missing` : inbox.exchange,
          routingKey: inbox.routingKey,
          bizKey: `order-${order}:paid`,
          payload: event,
        };
        for (let tries = 1; ; tries++) {
          try {
            await dataSource.transaction((manager) => outbox.publish(message, { manager }));
            return;
          } catch (error) {
            if (error instanceof OutboxMessageInvalidError) return void refused.push(order);
            // SQLite has one writer at a time, and an inbox handler holds the write lock while it
            // runs (the held orders, 3 s each): a publisher there waits, and may have to try again.
            if (!(database.kind === 'sqlite' && /database is locked/.test(String(error)) && tries < 5)) throw error;
          }
        }
      };

      const publishing = (async () => {
        for (let order = 1; order <= ORDERS; order++) {
          await publishOrder(order);
          await sleep(PUBLISH_INTERVAL_MS);
        }
      })();
      const chaos = (async () => {
        await sleep(6_000);
        await startAndWatch(replaceAnInstance);
        await restartBroker(3_000);
        await sleep(3_000);
        await startAndWatch(replaceAnInstance);
        // Deliveries being handled, and failed ones held for their backoff, when the connection closes.
        for (let n = 1; n <= HELD_ORDERS; n++) {
          const held: FixtureEvent = { orderId: ORDERS + n, holdMs: HOLD_MS, ...(n % 2 === 0 ? { failTimes: 1 } : {}) };
          broker.channel.publish(inbox.exchange, inbox.routingKey, Buffer.from(JSON.stringify(held)), { messageId: randomUUID(), type: 'order.paid' });
        }
        await sleep(HOLD_MS / 2);
        await restartBroker(500);
        await sleep(3_000);
        await restartBroker(3_000);
        await startAndWatch(replaceAnInstance);
      })();
      await Promise.all([publishing, chaos]);

      // Deliveries no inbox can process: an id PostgreSQL cannot store, a body that is not JSON.
      const hostile = [
        { messageId: `nul\u0000id-${randomUUID()}`, content: Buffer.from(JSON.stringify({ orderId: -1 })), cause: /messageId/ },
        { messageId: randomUUID(), content: Buffer.from('{not json'), cause: /JSON/ },
      ];
      for (const delivery of hostile)
        broker.channel.publish(inbox.exchange, inbox.routingKey, delivery.content, { messageId: delivery.messageId, type: 'order.paid' });

      const goodOrders = [
        ...Array.from({ length: ORDERS }, (_, i) => i + 1).filter((o) => !isMissingExchange(o) && !isOversized(o)),
        ...Array.from({ length: HELD_ORDERS }, (_, n) => ORDERS + n + 1),
      ];
      const effectsPerOrder = async () =>
        new Map(
          (await database.sql(`SELECT order_id, count(*) AS n FROM {test_effect} GROUP BY order_id`)).map((row) => [Number(row.order_id), Number(row.n)]),
        );
      await waitUntil(async () => (await effectsPerOrder()).size >= goodOrders.length, 'every good order is handled', 3 * WAIT_TIMEOUT_MS);
      const unsettled = async () =>
        Number((await database.sql(`SELECT count(*) AS n FROM {outbox_message} WHERE status NOT IN ('DONE', 'MANUAL_REQUIRED')`))[0].n);
      await waitUntil(async () => (await unsettled()) === 0, 'every outbox row is settled', 2 * WAIT_TIMEOUT_MS);
      await waitUntil(async () => dead.messages.length >= hostile.length, 'the hostile deliveries are dead-lettered');

      expect(unexpectedExits).toEqual([]);
      expect(instances.filter((instance) => instance.killed)).toHaveLength(3);
      expect(instances.filter((instance) => instance.child.isRunning)).toHaveLength(2);

      // Every good order's effect exactly once, and nothing for the others.
      const effects = await effectsPerOrder();
      expect([...effects.entries()].filter(([, n]) => n !== 1)).toEqual([]);
      expect([...effects.keys()].sort((a, b) => a - b)).toEqual(goodOrders);

      // The oversized ones were refused by publish(), inside their transaction: nothing stored.
      expect(refused).toEqual(Array.from({ length: ORDERS }, (_, i) => i + 1).filter(isOversized));
      const refusedRows = await database.sql(`SELECT count(*) AS n FROM {outbox_message} WHERE biz_key IN (?)`, [
        refused.map((order) => `order-${order}:paid`),
      ]);
      expect(Number(refusedRows[0].n)).toBe(0);

      // The ones to a missing exchange: MANUAL_REQUIRED, saying so.
      const missing = await database.sql(`SELECT status, last_error FROM {outbox_message} WHERE exchange = ?`, [`${PREFIX}.missing`]);
      expect(missing).toHaveLength(ORDERS / 100);
      for (const row of missing) {
        expect(row.status).toBe('MANUAL_REQUIRED');
        expect(row.last_error).toMatch(/ExchangeNotFoundError.*does not exist/);
      }
      // Every other outbox row was sent: the orders, and the two messages each handled order publishes.
      const notDone = await database.sql(`SELECT count(*) AS n FROM {outbox_message} WHERE status <> 'DONE' AND exchange <> ?`, [`${PREFIX}.missing`]);
      expect(Number(notDone[0].n)).toBe(0);
      await outgoing.flush();
      expect(new Set(outgoing.messages.map((m) => m.properties.messageId)).size).toBe(2 * goodOrders.length);

      // The hostile deliveries: recorded MANUAL_REQUIRED with their cause, and dead-lettered.
      const rejected = await database.sql(`SELECT status, last_error FROM {inbox_message} WHERE status = 'MANUAL_REQUIRED'`);
      for (const delivery of hostile) expect(rejected.some((row) => delivery.cause.test(row.last_error ?? ''))).toBe(true);
      expect(rejected.length).toBe(hostile.length);
    },
    timeoutFor(STARTUP_TIMEOUT_MS, STARTUP_TIMEOUT_MS, STARTUP_TIMEOUT_MS, 3 * WAIT_TIMEOUT_MS, 2 * WAIT_TIMEOUT_MS, WAIT_TIMEOUT_MS, 60_000),
  );
});
