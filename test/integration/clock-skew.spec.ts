import { INestApplicationContext } from '@nestjs/common';
import { randomUUID } from 'node:crypto';
import { OutboxService } from '../../lib';
import { OutboxDialect } from '../../lib/dialects/outbox-dialect';
import { OUTBOX_DIALECT } from '../../lib/naming/injection-tokens';
import { DataSource } from 'typeorm';
import { TransactionHost } from '@nestjs-cls/transactional';
import { ChildApp, killAllChildren, STOP_TIMEOUT_MS } from '../support/child-app';
import { DATABASE_KIND, testDatabase } from '../support/database';
import { assertExchange, QueueProbe } from '../support/queue-probe';
import { createTestApp } from '../support/test-app';
import { STARTUP_TIMEOUT_MS, timeoutFor, WAIT_TIMEOUT_MS, waitUntil } from '../support/wait';

const db = testDatabase('it_clock_skew');
const EXCHANGE = `it.clock-skew.${DATABASE_KIND}`;
const TEN_MINUTES = 10 * 60_000;
/**
 * The skewed instance reclaims claims older than this: less than its skew, so that a check made
 * on its own clock would reclaim a fresh claim, and more than the first test can take (its jest
 * timeout), so that by the database clock the fresh claim never expires, however slowly the
 * machine runs.
 */
const RECLAIM_AFTER_MS = 8 * 60_000;
/** An age past RECLAIM_AFTER_MS by the database clock. */
const EXPIRED_MS = RECLAIM_AFTER_MS + 60_000;

/**
 * Leases, backoff and retention are measured on the database's clock: an instance whose own clock
 * is off must neither reclaim a fresh claim nor strand rows in the future.
 */
describe(`An app whose clock is 10 minutes off (${DATABASE_KIND})`, () => {
  let app: INestApplicationContext;
  let probe: QueueProbe;

  beforeAll(async () => {
    await db.reset();
    await assertExchange(EXCHANGE);
    probe = await QueueProbe.bind(EXCHANGE, '#', `${EXCHANGE}.probe`);
    app = await createTestApp({ database: db, outbox: { dispatcherEnabled: false, notifyEnabled: false } });
  }, timeoutFor(STARTUP_TIMEOUT_MS));

  afterAll(async () => {
    await killAllChildren();
    await probe?.close();
    await app?.close();
  });

  async function publishOne(bizKey: string): Promise<string> {
    return app.get(TransactionHost).withTransaction(async () => {
      const result = await app.get(OutboxService).publish({ type: 'it.skew', exchange: EXCHANGE, routingKey: 'skew', bizKey, payload: {} });
      return result.messageId;
    });
  }

  /** Claims the message as a (live) dispatcher would, outside the skewed app. */
  async function claim(): Promise<string> {
    const token = randomUUID();
    const claimed = await app.get<OutboxDialect>(OUTBOX_DIALECT).claim(app.get(DataSource), 10, token, 'live-claimant');
    expect(claimed).toHaveLength(1);
    return token;
  }

  it(
    'does not reclaim a fresh claim, and does reclaim one that is old by the database clock',
    async () => {
      const fresh = await publishOne('fresh');
      const freshToken = await claim();
      const old = await publishOne('old');
      await claim();
      await db.sql(`UPDATE {outbox_message} SET claimed_at = ${db.timeAgo(EXPIRED_MS)} WHERE message_id = ?`, [old]);
      // Claimed fresh now, aged once the first reclaim was seen: its reclaim proves a later check.
      const later = await publishOne('later');
      await claim();

      const skewed = await ChildApp.start('it-skew-ahead', {
        database: { kind: db.kind, name: db.name },
        clockSkewMs: TEN_MINUTES,
        // Checks every 200 ms; the dispatcher itself sends nothing here.
        outbox: { stuckReclaimAfterMs: RECLAIM_AFTER_MS, stuckWarnAfterMs: 30_000, stuckCheckIntervalMs: 200, pollIntervalMs: 60_000, notifyEnabled: false },
      });
      try {
        // The control: the old claim is reclaimed (and then sent) by the skewed instance.
        const reclaimed = async (messageId: string) => {
          const [row] = await db.sql(`SELECT attempts FROM {outbox_message} WHERE message_id = ?`, [messageId]);
          return Number(row.attempts) >= 1;
        };
        await waitUntil(() => reclaimed(old), 'the old claim was reclaimed');
        // More checks: one that saw the fresh claim after the first reclaim, found by its reclaiming
        // a claim that only became old then.
        await db.sql(`UPDATE {outbox_message} SET claimed_at = ${db.timeAgo(EXPIRED_MS)} WHERE message_id = ?`, [later]);
        await waitUntil(() => reclaimed(later), 'a claim aged after the first reclaim was reclaimed too');
        const [row] = await db.sql(`SELECT status, claim_token, attempts FROM {outbox_message} WHERE message_id = ?`, [fresh]);
        expect({ status: row.status, token: row.claim_token, attempts: Number(row.attempts) }).toEqual({
          status: 'PROCESSING',
          token: freshToken,
          attempts: 0,
        });
      } finally {
        await skewed.stop();
      }
    },
    timeoutFor(STARTUP_TIMEOUT_MS, 2 * WAIT_TIMEOUT_MS, STOP_TIMEOUT_MS),
  );

  it(
    'an app whose clock is behind sends a just-published message at once',
    async () => {
      const behind = await ChildApp.start('it-skew-behind', {
        database: { kind: db.kind, name: db.name },
        clockSkewMs: -TEN_MINUTES,
        outbox: { pollIntervalMs: 200, notifyEnabled: false },
      });
      try {
        const messageId = await publishOne('behind');
        await waitUntil(async () => {
          const [row] = await db.sql(`SELECT status FROM {outbox_message} WHERE message_id = ?`, [messageId]);
          return row.status === 'DONE';
        }, 'the message was sent by the instance whose clock is behind');
      } finally {
        await behind.stop();
      }
    },
    timeoutFor(STARTUP_TIMEOUT_MS, WAIT_TIMEOUT_MS, STOP_TIMEOUT_MS),
  );
});
