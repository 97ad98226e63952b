import { INestApplicationContext } from '@nestjs/common';
import { randomUUID } from 'node:crypto';
import { MessageStatus } from '../../lib';
import { OutboxAdmin, OutboxStats, TableStats } from '../../lib/entries/admin';
import { CapturingOutboxTransport } from '../../lib/testing';
import { testDatabase } from '../support/database';
import { createTestApp, OrderPayments } from '../support/test-app';
import { STARTUP_TIMEOUT_MS, timeoutFor } from '../support/wait';

const database = testDatabase('it_outbox_stats');
const HOUR = 3_600_000;
/** A Date keeps milliseconds; PostgreSQL and MariaDB keep microseconds, so a lag may read 1 ms short. */
const ROUNDING_MS = 1;

const { PENDING, PROCESSING, DONE, FAILED, MANUAL_REQUIRED, ABANDONED } = MessageStatus;

/** Every status at 0 but those given. */
function counts(some: Partial<Record<MessageStatus, number>>): Record<MessageStatus, number> {
  return { PENDING: 0, PROCESSING: 0, DONE: 0, FAILED: 0, MANUAL_REQUIRED: 0, ABANDONED: 0, ...some };
}

const NOTHING_DUE = { due: 0, oldestDueAt: null, lagMs: 0 };

describe('OutboxAdmin.stats()', () => {
  let app: INestApplicationContext;
  let admin: OutboxAdmin;

  beforeAll(async () => {
    await database.reset();
    app = await createTestApp({ database, outbox: { dispatcherEnabled: false }, statics: { transport: CapturingOutboxTransport } });
    admin = app.get(OutboxAdmin);
  }, timeoutFor(STARTUP_TIMEOUT_MS));

  afterAll(() => app?.close());

  /** Gives an outbox row a status and a next attempt time `nextAttemptAgoMs` ago (negative: ahead). */
  async function setOutboxRow(messageId: string, status: MessageStatus, nextAttemptAgoMs = 0): Promise<void> {
    await database.sql(`UPDATE {outbox_message} SET status = ?, next_attempt_at = ${database.timeAgo(nextAttemptAgoMs)} WHERE message_id = ?`, [
      status,
      messageId,
    ]);
  }

  async function insertInboxRow(consumer: string, status: MessageStatus, nextAttemptAgoMs = 0): Promise<void> {
    await database.sql(
      `INSERT INTO {inbox_message} (consumer, message_id, exchange, routing_key, payload, headers, status, max_attempts, next_attempt_at)
       VALUES (?, ?, 'x', 'k', '{}', '{}', ?, 3, ${database.timeAgo(nextAttemptAgoMs)})`,
      [consumer, randomUUID(), status],
    );
  }

  /** The lag of a row due `agoMs` ago, read by stats() within `elapsedMs` of making it so. */
  function expectLag(stats: TableStats, agoMs: number, elapsedMs: number): void {
    expect(stats.lagMs).toBeGreaterThanOrEqual(agoMs - ROUNDING_MS);
    expect(stats.lagMs).toBeLessThanOrEqual(agoMs + elapsedMs + ROUNDING_MS);
    expect(stats.oldestDueAt).toBeInstanceOf(Date);
  }

  it('reports empty tables as all zeros, with the database clock', async () => {
    const before = Date.now();
    const stats = await admin.stats();
    const empty = { counts: counts({}), ...NOTHING_DUE, inFlight: 0 };
    expect(stats).toEqual({ outbox: { ...empty, byTransport: {} }, inbox: { ...empty, byConsumer: {} }, at: expect.any(Date) });
    // The local databases share this host's clock.
    expect(Math.abs(stats.at.getTime() - before)).toBeLessThan(5_000);
  });

  describe('with rows in every status', () => {
    let stats: OutboxStats;
    let elapsedMs: number;

    beforeAll(async () => {
      const payments = app.get(OrderPayments);
      const ids: string[] = [];
      for (let i = 0; i < 12; i++) ids.push((await payments.pay('stats.exchange')).messageId);
      const started = Date.now();
      const outbox: [MessageStatus, number][] = [
        [PENDING, 60_000], // the oldest due row
        [PENDING, 30_000],
        [PENDING, -HOUR], // not due yet
        [FAILED, 45_000],
        [FAILED, -HOUR], // waiting for its retry
        [PROCESSING, 120_000], // older times, but in flight, finished or given up: never due
        [PROCESSING, 120_000],
        [PROCESSING, 120_000],
        [DONE, 120_000],
        [DONE, 120_000],
        [MANUAL_REQUIRED, 120_000],
        [ABANDONED, 120_000],
      ];
      for (const [i, [status, ago]] of outbox.entries()) await setOutboxRow(ids[i], status, ago);

      await insertInboxRow('billing', PENDING, 20_000);
      await insertInboxRow('billing', FAILED, 90_000); // the inbox's oldest due row
      await insertInboxRow('billing', DONE, 300_000);
      await insertInboxRow('billing', MANUAL_REQUIRED, 300_000);
      await insertInboxRow('shipping', PROCESSING, 300_000);
      await insertInboxRow('shipping', PENDING, -HOUR);
      await insertInboxRow('shipping', DONE, 300_000);
      await insertInboxRow('shipping', DONE, 300_000);
      stats = await admin.stats();
      elapsedMs = Date.now() - started;
    });

    it('counts the outbox rows of every status, and PROCESSING as in flight', () => {
      expect(stats.outbox).toMatchObject({
        counts: counts({ PENDING: 3, FAILED: 2, PROCESSING: 3, DONE: 2, MANUAL_REQUIRED: 1, ABANDONED: 1 }),
        inFlight: 3,
      });
    });

    it('counts as due only PENDING and FAILED rows whose next attempt time has passed', () => {
      expect(stats.outbox.due).toBe(3);
    });

    it('has the same figures per transport: all of them the default one here', () => {
      const { byTransport, ...total } = stats.outbox;
      expect(byTransport).toEqual({ default: total });
    });

    it('measures the outbox lag from the oldest due row, by the database clock', () => {
      expectLag(stats.outbox, 60_000, elapsedMs);
      // `at` is the clock of the outbox's statement; the inbox's is read a moment later.
      expect(stats.outbox.lagMs).toBe(stats.at.getTime() - stats.outbox.oldestDueAt!.getTime());
    });

    it('reports the inbox per consumer', () => {
      expect(Object.keys(stats.inbox.byConsumer)).toEqual(['billing', 'shipping']);
      const { billing, shipping } = stats.inbox.byConsumer;
      expect(billing).toMatchObject({ counts: counts({ PENDING: 1, FAILED: 1, DONE: 1, MANUAL_REQUIRED: 1 }), due: 2, inFlight: 0 });
      expectLag(billing, 90_000, elapsedMs);
      expect(shipping).toEqual({ counts: counts({ PROCESSING: 1, PENDING: 1, DONE: 2 }), ...NOTHING_DUE, inFlight: 1 });
    });

    it('reports the inbox totals over all consumers', () => {
      expect(stats.inbox).toMatchObject({
        counts: counts({ PENDING: 2, FAILED: 1, PROCESSING: 1, DONE: 3, MANUAL_REQUIRED: 1 }),
        due: 2,
        inFlight: 1,
        oldestDueAt: stats.inbox.byConsumer.billing.oldestDueAt,
        lagMs: stats.inbox.byConsumer.billing.lagMs,
      });
    });

    it('reads the same counts again without changing any row', async () => {
      const again = await admin.stats();
      expect(again.outbox.counts).toEqual(stats.outbox.counts);
      expect(again.inbox.byConsumer.shipping.counts).toEqual(stats.inbox.byConsumer.shipping.counts);
      expect(again.at.getTime()).toBeGreaterThanOrEqual(stats.at.getTime());
      expect(again.outbox.lagMs).toBeGreaterThanOrEqual(stats.outbox.lagMs - ROUNDING_MS);
    });
  });
});
