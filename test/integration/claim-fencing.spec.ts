import { INestApplicationContext } from '@nestjs/common';
import { randomUUID } from 'node:crypto';
import { DataSource } from 'typeorm';
import { OutboxService } from '../../lib';
import { StuckDetector } from '../../lib/entries/admin';
import { OutboxDialect } from '../../lib/dialects/outbox-dialect';
import { OUTBOX_DIALECT } from '../../lib/naming/injection-tokens';
import { MessageStatus } from '../../lib/message/message-status';
import { testDatabase } from '../support/database';
import { createTestApp } from '../support/test-app';
import { STARTUP_TIMEOUT_MS, timeoutFor } from '../support/wait';

const database = testDatabase('it_claim_fencing');
const EXCHANGE = 'it.claim-fencing';
const HOUR = 3_600_000;

/**
 * The dialect is driven directly here (no dispatcher running) to place claims and settles in an
 * exact order against the real database.
 */
describe('Claims and settles fenced by the claim token', () => {
  let app: INestApplicationContext;
  let dataSource: DataSource;
  const dialect = () => app.get<OutboxDialect>(OUTBOX_DIALECT);

  beforeAll(async () => {
    await database.reset();
    app = await createTestApp({
      database,
      outbox: { dispatcherEnabled: false, stuckReclaimAfterMs: 1_000, sendTimeoutMs: 500, stuckWarnAfterMs: 500, backoffBaseMs: 100, backoffMaxMs: 100 },
    });
    dataSource = app.get(DataSource);
  }, timeoutFor(STARTUP_TIMEOUT_MS));

  afterAll(() => app.close());

  async function publishOne(bizKey: string): Promise<string> {
    const outbox = app.get(OutboxService);
    const result = await dataSource.transaction((manager) =>
      outbox.publish({ type: 'fence.test', exchange: EXCHANGE, routingKey: 'x', payload: { bizKey }, bizKey }, { manager }),
    );
    return result.messageId;
  }

  const rowOf = async (messageId: string) => {
    const [row] = await database.sql(`SELECT status, attempts, claim_token, last_error FROM {outbox_message} WHERE message_id = ?`, [messageId]);
    return { ...row, attempts: Number(row.attempts) };
  };
  const setColumn = (column: 'claimed_at' | 'next_attempt_at', expression: string, messageId: string) =>
    database.sql(`UPDATE {outbox_message} SET ${column} = ${expression} WHERE message_id = ?`, [messageId]);

  it('ignores a late settle whose claim was reclaimed and claimed again', async () => {
    const messageId = await publishOne('fence-1');
    const oldToken = randomUUID();
    const [claimed] = await dialect().claim(dataSource, 10, oldToken, 'slow-instance');
    expect(claimed).toMatchObject({ messageId, claimToken: oldToken });

    // The slow claimant is presumed dead: its claim expires and is reclaimed.
    await setColumn('claimed_at', database.timeAgo(HOUR), messageId);
    expect((await app.get(StuckDetector).check()).reclaimed).toBe(1);
    await setColumn('next_attempt_at', database.timeAgo(0), messageId);
    const newToken = randomUUID();
    const [reclaimed] = await dialect().claim(dataSource, 10, newToken, 'healthy-instance');
    expect(reclaimed).toMatchObject({ messageId, attempts: 1 });

    // The old claimant wakes up and tries every kind of settle: none changes the row.
    const stale = { id: claimed.id, claimToken: oldToken };
    expect(await dialect().settleDone(dataSource, [stale])).toBe(0);
    expect(await dialect().settleFailed(dataSource, [{ ...stale, status: MessageStatus.MANUAL_REQUIRED, delayMs: 0, error: 'late' }])).toBe(0);
    expect(await dialect().release(dataSource, [stale])).toBe(0);
    expect(await rowOf(messageId)).toMatchObject({ status: 'PROCESSING', claim_token: newToken, attempts: 1 });

    // The current claimant settles.
    expect(await dialect().settleDone(dataSource, [{ id: claimed.id, claimToken: newToken }])).toBe(1);
    expect(await rowOf(messageId)).toMatchObject({ status: 'DONE', claim_token: null });
  });

  it('does not let two claimants take the same row', async () => {
    await publishOne('fence-2');
    await publishOne('fence-3');
    const [a, b] = await Promise.all([dialect().claim(dataSource, 1, randomUUID(), 'a'), dialect().claim(dataSource, 1, randomUUID(), 'b')]);
    const ids = [...a, ...b].map((m) => m.id);
    expect(new Set(ids).size).toBe(ids.length);
    const c = await dialect().claim(dataSource, 10, randomUUID(), 'c');
    expect(c.map((m) => m.id).filter((id) => ids.includes(id))).toEqual([]);
  });

  it('reclaims an expired claim at the attempt limit as MANUAL_REQUIRED', async () => {
    const messageId = await publishOne('fence-4');
    await database.sql(`UPDATE {outbox_message} SET max_attempts = 1 WHERE message_id = ?`, [messageId]);
    await dialect().claim(dataSource, 100, randomUUID(), 'dead-instance');
    await setColumn('claimed_at', database.timeAgo(HOUR), messageId);
    await app.get(StuckDetector).check();
    expect(await rowOf(messageId)).toMatchObject({ status: 'MANUAL_REQUIRED', attempts: 1, claim_token: null });
    expect((await rowOf(messageId)).last_error).toMatch(/dead-instance expired/);
  });

  it('keeps the earlier failure when the last attempt is a reclaimed claim', async () => {
    const messageId = await publishOne('fence-5');
    await database.sql(`UPDATE {outbox_message} SET max_attempts = 2 WHERE message_id = ?`, [messageId]);
    const [first] = await dialect().claim(dataSource, 100, randomUUID(), 'first-instance');
    const cause = 'ExchangeNotFoundError: exchange "gone" does not exist';
    expect(
      await dialect().settleFailed(dataSource, [{ id: first.id, claimToken: first.claimToken, status: MessageStatus.FAILED, delayMs: 0, error: cause }]),
    ).toBe(1);
    await setColumn('next_attempt_at', database.timeAgo(0), messageId);
    // The second and last attempt's claimant dies before it settles.
    await dialect().claim(dataSource, 100, randomUUID(), 'dead-instance');
    await setColumn('claimed_at', database.timeAgo(HOUR), messageId);
    await app.get(StuckDetector).check();
    const row = await rowOf(messageId);
    expect(row).toMatchObject({ status: 'MANUAL_REQUIRED', attempts: 2, claim_token: null });
    expect(row.last_error).toBe(`Error: claim by dead-instance expired after 1000 ms without a settle; the attempt before failed: ${cause}`);
  });
});
