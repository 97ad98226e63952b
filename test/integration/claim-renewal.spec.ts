import { randomUUID } from 'node:crypto';
import type { OutboxModuleOptionsInput } from '../../lib';
import { BrokerConnection } from '../support/broker-connection';
import { brokerName } from '../support/broker-names';
import { ChildApp, killAllChildren, STOP_TIMEOUT_MS } from '../support/child-app';
import { DATABASE_KIND, testDatabase } from '../support/database';
import { InboxFixtureConfig } from '../support/inbox-fixture';
import { STARTUP_TIMEOUT_MS, timeoutFor, WAIT_TIMEOUT_MS, waitUntil } from '../support/wait';

const database = testDatabase('it_claim_renewal');
const PREFIX = brokerName('it.claim-renewal');
const CONSUMER = 'renewal-deferred';

const fixture = (queue: string, routingKey: string): InboxFixtureConfig => ({
  exchange: `${PREFIX}.in`,
  routingKey,
  outExchange: `${PREFIX}.out`,
  deadLetterExchange: `${PREFIX}.dlx`,
  consumers: [{ name: CONSUMER, queue }],
  mode: 'deferred',
  announceStarts: true,
});
/** The instance that receives the deliveries. */
const RECEIVER = fixture(`${PREFIX}.receiver`, 'order.paid');
/** A second instance of the same consumer, bound to nothing: it only claims (and reclaims) stored deliveries. */
const PEER = fixture(`${PREFIX}.peer`, 'nothing.routed');

/** The reproducer: a 3 s lease, batches of 5, one loop each, the stuck detector looking often. */
const LEASE_MS = 3_000;
const TIMINGS: Omit<OutboxModuleOptionsInput, 'isFatalError'> = {
  stuckReclaimAfterMs: LEASE_MS,
  stuckWarnAfterMs: LEASE_MS / 2,
  sendTimeoutMs: 1_000,
  stuckCheckIntervalMs: 200,
  inboxBatchSize: 5,
  dispatchConcurrency: 1,
  backoffBaseMs: 50,
  backoffMaxMs: 200,
  pollIntervalMs: 100,
};
const HANDLER_MS = 1_200;
/**
 * Where the library can renew a lease while a handler's transaction is open: on SQLite's one
 * connection it cannot write outside that transaction, so a handler must end within the lease.
 */
const whereRenewedDuringHandlers = DATABASE_KIND === 'sqlite' ? it.skip : it;

/**
 * A deferred consumer's claimed rows run one after another; each has its lease renewed while it
 * waits and while its handler runs, so a live instance never has a row taken over: every handler
 * starts once, and no attempt is charged, whatever a batch or a handler takes beside the lease.
 */
describe('Claim leases renewed while rows wait and run (real processes)', () => {
  let broker: BrokerConnection;

  beforeAll(async () => {
    await database.reset();
    broker = await BrokerConnection.open();
    await broker.prepareInboxes([RECEIVER, PEER], { outExchange: true });
  });

  afterEach(() => killAllChildren());

  afterAll(async () => {
    await broker.close();
  });

  const send = (orderId: number, holdMs: number): string => {
    const messageId = randomUUID();
    broker.channel.publish(RECEIVER.exchange, RECEIVER.routingKey, Buffer.from(JSON.stringify({ orderId, holdMs })), { messageId, type: 'order.paid' });
    return messageId;
  };
  const rowsOf = async (messageIds: string[]) =>
    (await database.sql(`SELECT message_id, status, attempts FROM {inbox_message} WHERE consumer = ?`, [CONSUMER]))
      .filter((row) => messageIds.includes(row.message_id))
      .map((row) => ({ messageId: row.message_id as string, status: row.status as string, attempts: Number(row.attempts) }));
  const allDone = async (messageIds: string[]) => {
    const rows = await rowsOf(messageIds);
    return rows.length === messageIds.length && rows.every((row) => row.status === 'DONE');
  };
  /** How often each message's handler started, in all the given processes together. */
  const startsOf = (children: ChildApp[], messageIds: string[]) => {
    const output = children.map((child) => child.stdout).join('\n');
    return Object.fromEntries(messageIds.map((id) => [id, output.split(`HANDLER_STARTED ${CONSUMER} ${id}`).length - 1]));
  };
  const effectsOf = async (orderIds: number[]) =>
    Number((await database.sql(`SELECT count(*) AS n FROM {test_effect} WHERE consumer = ? AND order_id IN (${orderIds.join(', ')})`, [CONSUMER]))[0].n);

  it(
    'starts every handler of a batch that outlasts the lease once, and charges no attempt, with two instances',
    async () => {
      const receiver = await ChildApp.start('it-claim-renewal-receiver', { database, inbox: RECEIVER, outbox: TIMINGS });
      const peer = await ChildApp.start('it-claim-renewal-peer', { database, inbox: PEER, outbox: TIMINGS });
      // Ten deliveries at once: the two instances take them in batches of five, each of which
      // takes 6 s to run, twice the lease; its fourth and fifth rows wait longer than a lease.
      const orderIds = Array.from({ length: 10 }, (_, i) => 100 + i);
      const messageIds = orderIds.map((orderId) => send(orderId, HANDLER_MS));

      await waitUntil(() => allDone(messageIds), 'every delivery is processed', 2 * WAIT_TIMEOUT_MS);
      await Promise.all([receiver.stop(), peer.stop()]);

      const once = Object.fromEntries(messageIds.map((id) => [id, 1]));
      expect(startsOf([receiver, peer], messageIds)).toEqual(once);
      expect(await rowsOf(messageIds)).toEqual(expect.arrayContaining(messageIds.map((messageId) => ({ messageId, status: 'DONE', attempts: 0 }))));
      expect(await effectsOf(orderIds)).toBe(orderIds.length);
    },
    timeoutFor(2 * STARTUP_TIMEOUT_MS, 2 * WAIT_TIMEOUT_MS, STOP_TIMEOUT_MS),
  );

  whereRenewedDuringHandlers(
    'runs a handler longer than the lease once, on a live instance, without a reclaim',
    async () => {
      const receiver = await ChildApp.start('it-claim-renewal-long-receiver', { database, inbox: RECEIVER, outbox: TIMINGS });
      const peer = await ChildApp.start('it-claim-renewal-long-peer', { database, inbox: PEER, outbox: TIMINGS });
      // Three leases long: the stuck detectors of both instances look every 200 ms meanwhile.
      const messageId = send(200, 3 * LEASE_MS);

      await waitUntil(() => allDone([messageId]), 'the long delivery is processed', 2 * WAIT_TIMEOUT_MS);
      await Promise.all([receiver.stop(), peer.stop()]);

      expect(startsOf([receiver, peer], [messageId])).toEqual({ [messageId]: 1 });
      expect(await rowsOf([messageId])).toEqual([{ messageId, status: 'DONE', attempts: 0 }]);
      expect(await effectsOf([200])).toBe(1);
      expect([receiver, peer].map((child) => child.stdout + child.stderr).join('\n')).not.toMatch(/Reclaimed \d+ inbox/);
    },
    timeoutFor(2 * STARTUP_TIMEOUT_MS, 2 * WAIT_TIMEOUT_MS, STOP_TIMEOUT_MS),
  );
});
