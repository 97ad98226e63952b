import { INestApplicationContext } from '@nestjs/common';
import fc from 'fast-check';
import { randomUUID } from 'node:crypto';
import { DataSource } from 'typeorm';
import { MessageStatus } from '../../lib';
import { ListedOutboxMessage, OutboxAdmin, OutboxAdminFilterError, OutboxMessageFilter } from '../../lib/entries/admin';
import { OutboxDialect } from '../../lib/dialects/outbox-dialect';
import { OUTBOX_DIALECT } from '../../lib/naming/injection-tokens';
import { OutboxWakeup } from '../../lib/outbox/outbox-wakeup';
import { CapturingOutboxTransport, OutboxTestKit } from '../../lib/testing';
import { testDatabase } from '../support/database';
import { storedTime, toDate } from '../support/sql-values';
import { createTestApp } from '../support/test-app';
import { STARTUP_TIMEOUT_MS, timeoutFor, waitUntil, WAIT_TIMEOUT_MS } from '../support/wait';

const database = testDatabase('it_admin_filters');
const HOUR = 3_600_000;
const { PENDING, PROCESSING, DONE, FAILED, MANUAL_REQUIRED, ABANDONED } = MessageStatus;
const ALL_STATUSES = [PENDING, PROCESSING, DONE, FAILED, MANUAL_REQUIRED, ABANDONED];
/** The instant seeded rows are created at unless a test says otherwise: whole milliseconds, as every database keeps them. */
const T0 = new Date('2024-03-01T12:00:00.000Z');
const at = (offsetMs: number) => new Date(T0.getTime() + offsetMs);

/** An outbox row as a test seeds it. */
interface OutboxSeed {
  status: MessageStatus;
  /** An explicit row id, for tests about how ids compare; otherwise the table's next. */
  id?: number;
  type?: string;
  bizKey?: string | null;
  orderingKey?: string | null;
  transport?: string;
  attempts?: number;
  lastError?: string | null;
  createdAt?: Date;
}

/** An inbox row as a test seeds it. */
interface InboxSeed {
  status: MessageStatus;
  consumer?: string;
  type?: string;
  lastError?: string | null;
  createdAt?: Date;
}

describe('OutboxAdmin operations by filter', () => {
  let app: INestApplicationContext;
  let admin: OutboxAdmin;
  let dataSource: DataSource;

  beforeAll(async () => {
    await database.reset();
    app = await createTestApp({ database, outbox: { dispatcherEnabled: false }, statics: { transport: CapturingOutboxTransport } });
    admin = app.get(OutboxAdmin);
    dataSource = app.get(DataSource);
  }, timeoutFor(STARTUP_TIMEOUT_MS));

  afterAll(() => app?.close());

  beforeEach(async () => {
    await database.sql('DELETE FROM {outbox_message}');
    await database.sql('DELETE FROM {inbox_message}');
  });

  /** Inserts the rows in order (so ids follow it); returns their message ids. */
  async function seedOutbox(seeds: OutboxSeed[]): Promise<string[]> {
    const ids: string[] = [];
    for (const seed of seeds) {
      const messageId = randomUUID();
      const finished = seed.status === DONE || seed.status === ABANDONED;
      await database.sql(
        `INSERT INTO {outbox_message}
           (${seed.id === undefined ? '' : 'id, '}message_id, message_type, biz_key, ordering_key, transport, exchange, routing_key, destination, payload, headers,
            status, attempts, max_attempts, next_attempt_at, last_error, created_at, processed_at)
         VALUES (${seed.id === undefined ? '' : `${seed.id}, `}?, ?, ?, ?, ?, 'x', 'k', 'dest', '{}', '{}', ?, ?, 5, ${database.timeAgo(1_000)}, ?, ?, ${finished ? database.timeAgo(0) : 'NULL'})`,
        [
          messageId,
          seed.type ?? 'order.paid',
          seed.bizKey ?? null,
          seed.orderingKey ?? null,
          seed.transport ?? 'default',
          seed.status,
          seed.attempts ?? 0,
          seed.lastError ?? null,
          storedTime(database.kind, seed.createdAt ?? T0),
        ],
      );
      ids.push(messageId);
    }
    return ids;
  }

  async function seedInbox(seeds: InboxSeed[]): Promise<string[]> {
    const ids: string[] = [];
    for (const seed of seeds) {
      const messageId = randomUUID();
      const finished = seed.status === DONE || seed.status === ABANDONED;
      await database.sql(
        `INSERT INTO {inbox_message}
           (consumer, message_id, message_type, exchange, routing_key, payload, headers, status, attempts, max_attempts, next_attempt_at, last_error, created_at, processed_at)
         VALUES (?, ?, ?, 'x', 'k', '{}', '{}', ?, 2, 5, ${database.timeAgo(-HOUR)}, ?, ?, ${finished ? database.timeAgo(0) : 'NULL'})`,
        [seed.consumer ?? 'Billing.handle', messageId, seed.type ?? '', seed.status, seed.lastError ?? null, storedTime(database.kind, seed.createdAt ?? T0)],
      );
      ids.push(messageId);
    }
    return ids;
  }

  /** One seeded row per status, with the type given. */
  const everyStatus = (type: string, extra: Partial<OutboxSeed> = {}): OutboxSeed[] =>
    ALL_STATUSES.map((status) => ({ status, type, attempts: 3, lastError: status === FAILED || status === MANUAL_REQUIRED ? 'boom' : null, ...extra }));

  interface StoredRow {
    status: MessageStatus;
    attempts: number;
    processedAt: Date | null;
    nextAttemptAt: Date;
  }

  async function outboxRows(): Promise<Map<string, StoredRow>> {
    const rows = await database.sql(`SELECT message_id, status, attempts, processed_at, next_attempt_at FROM {outbox_message}`);
    return new Map(
      rows.map((r) => [
        r.message_id,
        { status: r.status, attempts: Number(r.attempts), processedAt: toDate(r.processed_at), nextAttemptAt: toDate(r.next_attempt_at)! },
      ]),
    );
  }

  async function statusOf(messageId: string): Promise<MessageStatus | undefined> {
    return (await outboxRows()).get(messageId)?.status;
  }

  /** Every row of a listing, page by page. */
  async function listAll(filter: OutboxMessageFilter, limit: number, order: 'newest' | 'oldest'): Promise<ListedOutboxMessage[]> {
    const rows: ListedOutboxMessage[] = [];
    let after: string | undefined;
    for (let pages = 0; pages < 1_000; pages++) {
      const page = await admin.listMessages(filter, { after, limit, order });
      rows.push(...page.messages);
      if (page.next === null) return rows;
      expect(page.messages).toHaveLength(limit);
      after = page.next;
    }
    throw new Error('the listing never ended');
  }

  const messageIds = (rows: readonly { messageId: string }[]) => rows.map((row) => row.messageId);

  describe('listMessages()', () => {
    it('lists newest first by default, with what an operator needs of each row', async () => {
      const [first, second] = await seedOutbox([
        {
          status: FAILED,
          type: 'order.paid',
          bizKey: 'order-1',
          orderingKey: 'key-1',
          transport: 'partner',
          attempts: 2,
          lastError: 'refused',
          createdAt: at(0),
        },
        { status: DONE, type: 'order.shipped', createdAt: at(1_000) },
      ]);
      const page = await admin.listMessages();
      expect(messageIds(page.messages)).toEqual([second, first]);
      expect(page.next).toBeNull();
      expect(page.messages[1]).toEqual({
        id: expect.stringMatching(/^[0-9]+$/),
        messageId: first,
        type: 'order.paid',
        bizKey: 'order-1',
        orderingKey: 'key-1',
        status: FAILED,
        attempts: 2,
        lastError: 'refused',
        createdAt: at(0),
        processedAt: null,
        nextAttemptAt: expect.any(Date),
        transport: 'partner',
        destination: 'dest',
      });
      expect(page.messages[0].processedAt).toBeInstanceOf(Date);
      expect(messageIds((await admin.listMessages({}, { order: 'oldest' })).messages)).toEqual([first, second]);
    });

    it('filters by each field, the fields ANDed', async () => {
      const ids = await seedOutbox([
        { status: FAILED, type: 'a', bizKey: 'k1', transport: 'default', lastError: 'timeout after 5s', createdAt: at(0) },
        { status: MANUAL_REQUIRED, type: 'a', bizKey: 'k2', transport: 'partner', lastError: 'unroutable', createdAt: at(1_000) },
        { status: DONE, type: 'b', bizKey: null, transport: 'partner', createdAt: at(2_000) },
        { status: PENDING, type: 'b', bizKey: 'k1', transport: 'default', createdAt: at(3_000) },
      ]);
      const listed = async (filter: OutboxMessageFilter) => messageIds((await admin.listMessages(filter, { order: 'oldest' })).messages);
      expect(await listed({ status: FAILED })).toEqual([ids[0]]);
      expect(await listed({ status: [FAILED, DONE] })).toEqual([ids[0], ids[2]]);
      expect(await listed({ type: 'a' })).toEqual([ids[0], ids[1]]);
      expect(await listed({ bizKey: 'k1' })).toEqual([ids[0], ids[3]]);
      expect(await listed({ transport: 'partner' })).toEqual([ids[1], ids[2]]);
      expect(await listed({ errorContains: 'timeout' })).toEqual([ids[0]]);
      // createdAfter is inclusive, createdBefore exclusive: consecutive windows neither overlap nor leave a gap.
      expect(await listed({ createdAfter: at(1_000) })).toEqual([ids[1], ids[2], ids[3]]);
      expect(await listed({ createdBefore: at(1_000) })).toEqual([ids[0]]);
      expect(await listed({ createdAfter: at(1_000), createdBefore: at(3_000) })).toEqual([ids[1], ids[2]]);
      expect(await listed({ type: 'b', transport: 'default' })).toEqual([ids[3]]);
      expect(await listed({ type: 'a', status: DONE })).toEqual([]);
    });

    it('compares creation times to the millisecond', async () => {
      const [early, late] = await seedOutbox([
        { status: DONE, createdAt: at(0) },
        { status: DONE, createdAt: at(1) },
      ]);
      expect(messageIds((await admin.listMessages({ createdBefore: at(1) })).messages)).toEqual([early]);
      expect(messageIds((await admin.listMessages({ createdAfter: at(1) })).messages)).toEqual([late]);
    });

    it('matches errorContains literally: LIKE wildcards, the escape character and case are plain text', async () => {
      const errors = ['disk 100% full', 'disk 1000 full', 'bad_name', 'badXname', 'a!b', 'a!!b', 'Timeout', 'timeout', 'back\\slash'];
      const ids = await seedOutbox(errors.map((lastError) => ({ status: FAILED, lastError })));
      const matching = async (errorContains: string) => messageIds((await admin.listMessages({ errorContains }, { order: 'oldest' })).messages);
      expect(await matching('100%')).toEqual([ids[0]]);
      expect(await matching('%')).toEqual([ids[0]]);
      expect(await matching('d_n')).toEqual([ids[2]]);
      expect(await matching('!')).toEqual([ids[4], ids[5]]);
      expect(await matching('!!')).toEqual([ids[5]]);
      expect(await matching('Time')).toEqual([ids[6]]);
      expect(await matching('\\s')).toEqual([ids[8]]);
    });

    it('pages by keyset in both orders, each row once', async () => {
      const ids = await seedOutbox(Array.from({ length: 7 }, (_, i) => ({ status: i % 2 ? DONE : FAILED, createdAt: at(i) })));
      expect(messageIds(await listAll({}, 3, 'oldest'))).toEqual(ids);
      expect(messageIds(await listAll({}, 3, 'newest'))).toEqual([...ids].reverse());
      expect(messageIds(await listAll({ status: FAILED }, 2, 'oldest'))).toEqual([ids[0], ids[2], ids[4], ids[6]]);
      // A page exactly as long as what is left is the last one.
      const full = await admin.listMessages({}, { limit: 7 });
      expect(full.messages).toHaveLength(7);
      expect(full.next).toBeNull();
    });

    it('orders and pages ids as numbers, not as text', async () => {
      // High ids of different lengths, above any the table's sequence hands out in this file.
      const ids = await seedOutbox([9_999_999, 10_000_000, 99_999_999, 100_000_000].map((id) => ({ id, status: FAILED })));
      expect(messageIds(await listAll({}, 1, 'newest'))).toEqual([...ids].reverse());
      expect(messageIds(await listAll({}, 3, 'oldest'))).toEqual(ids);
      // The newest row bounds a change: every one of these is reached.
      expect(await admin.requeueMessages({ status: FAILED }, { batchSize: 1 })).toBe(4);
    });

    it('lists inbox deliveries by consumer, with the consumer on each row', async () => {
      const [billing, , shippingFailed] = await seedInbox([
        { status: MANUAL_REQUIRED, consumer: 'Billing.handle', lastError: 'bad amount' },
        { status: DONE, consumer: 'Shipping.handle' },
        { status: FAILED, consumer: 'Shipping.handle', type: 'parcel.lost' },
      ]);
      const page = await admin.listInboxMessages({ consumer: 'Billing.handle' });
      expect(page.messages).toEqual([
        expect.objectContaining({ messageId: billing, consumer: 'Billing.handle', status: MANUAL_REQUIRED, lastError: 'bad amount', type: '' }),
      ]);
      expect(page.messages[0]).not.toHaveProperty('transport');
      expect(messageIds((await admin.listInboxMessages({ consumer: 'Shipping.handle', type: 'parcel.lost' })).messages)).toEqual([shippingFailed]);
    });

    it('refuses a filter field it does not know, or of the wrong type, naming it', async () => {
      await expect(admin.listMessages({ consumer: 'x' } as OutboxMessageFilter)).rejects.toMatchObject({ name: 'OutboxAdminFilterError', field: 'consumer' });
      await expect(admin.listMessages({ status: 'SENT' as MessageStatus })).rejects.toMatchObject({ field: 'status' });
      await expect(admin.listMessages({}, { limit: 1_001 })).rejects.toMatchObject({ field: 'limit' });
    });
  });

  describe('requeueMessages()', () => {
    it('makes FAILED and MANUAL_REQUIRED rows of the filter due now with no attempts, and nothing else', async () => {
      const a = await seedOutbox(everyStatus('a'));
      const b = await seedOutbox(everyStatus('b'));
      const before = Date.now();
      expect(await admin.requeueMessages({ type: 'a' })).toBe(2);
      const rows = await outboxRows();
      for (const [i, status] of ALL_STATUSES.entries()) {
        const requeued = status === FAILED || status === MANUAL_REQUIRED;
        expect(rows.get(a[i])).toMatchObject({ status: requeued ? PENDING : status, attempts: requeued ? 0 : 3 });
        if (requeued) expect(rows.get(a[i])!.nextAttemptAt.getTime()).toBeLessThanOrEqual(Date.now() + 1_000);
        if (requeued) expect(rows.get(a[i])!.nextAttemptAt.getTime()).toBeGreaterThanOrEqual(before - 1_000);
        expect(rows.get(b[i])).toMatchObject({ status, attempts: 3 });
      }
    });

    it('lets the status filter narrow it, never widen it', async () => {
      const ids = await seedOutbox(everyStatus('a'));
      expect(await admin.requeueMessages({ status: [FAILED, DONE, PROCESSING, PENDING] })).toBe(1);
      const rows = await outboxRows();
      expect(ALL_STATUSES.map((_, i) => rows.get(ids[i])!.status)).toEqual([PENDING, PROCESSING, DONE, PENDING, MANUAL_REQUIRED, ABANDONED]);
      await expect(admin.requeueMessages({ status: [DONE, PROCESSING] })).rejects.toMatchObject({ field: 'status' });
    });

    it('requeues inbox deliveries as FAILED with no attempts, for a redelivery or the deferred worker to take', async () => {
      const ids = await seedInbox([
        { status: MANUAL_REQUIRED, consumer: 'Billing.handle' },
        { status: FAILED, consumer: 'Billing.handle' },
        { status: PROCESSING, consumer: 'Billing.handle' },
        { status: MANUAL_REQUIRED, consumer: 'Shipping.handle' },
      ]);
      expect(await admin.requeueInboxMessages({ consumer: 'Billing.handle' })).toBe(2);
      const rows = await database.sql(`SELECT message_id, status, attempts FROM {inbox_message}`);
      const byId = new Map(rows.map((r) => [r.message_id, { status: r.status, attempts: Number(r.attempts) }]));
      expect(ids.map((id) => byId.get(id))).toEqual([
        { status: FAILED, attempts: 0 },
        { status: FAILED, attempts: 0 },
        { status: PROCESSING, attempts: 2 },
        { status: MANUAL_REQUIRED, attempts: 2 },
      ]);
    });

    it('wakes the dispatcher when it requeued rows, and not when it found none', async () => {
      const wake = jest.spyOn(app.get(OutboxWakeup), 'wake');
      try {
        await seedOutbox([{ status: MANUAL_REQUIRED, type: 'a' }]);
        expect(await admin.requeueMessages({ type: 'b' })).toBe(0);
        expect(wake).not.toHaveBeenCalled();
        expect(await admin.requeueMessages({ type: 'a' })).toBe(1);
        expect(wake).toHaveBeenCalled();
      } finally {
        wake.mockRestore();
      }
    });
  });

  describe('abandonMessages()', () => {
    it('gives up on unsent rows of the filter, with a processed time, and leaves PROCESSING and finished rows alone', async () => {
      const a = await seedOutbox(everyStatus('a'));
      const b = await seedOutbox(everyStatus('b'));
      expect(await admin.abandonMessages({ type: 'a' })).toBe(3);
      const rows = await outboxRows();
      for (const [i, status] of ALL_STATUSES.entries()) {
        const abandoned = status === PENDING || status === FAILED || status === MANUAL_REQUIRED;
        expect(rows.get(a[i])!.status).toBe(abandoned ? ABANDONED : status);
        if (abandoned) expect(rows.get(a[i])!.processedAt).toBeInstanceOf(Date);
        expect(rows.get(b[i])!.status).toBe(status);
      }
    });

    it('abandons inbox deliveries of one consumer only', async () => {
      await seedInbox([
        { status: FAILED, consumer: 'Billing.handle' },
        { status: PENDING, consumer: 'Billing.handle' },
        { status: DONE, consumer: 'Billing.handle' },
        { status: FAILED, consumer: 'Shipping.handle' },
      ]);
      expect(await admin.abandonInboxMessages({ consumer: 'Billing.handle' })).toBe(2);
      expect(await database.statusCounts('inbox_message')).toEqual({ ABANDONED: 2, DONE: 1, FAILED: 1 });
    });
  });

  describe('purgeMessages()', () => {
    it('deletes DONE and ABANDONED rows of the filter only, unless MANUAL_REQUIRED is named', async () => {
      await seedOutbox(everyStatus('a', { createdAt: at(0) }));
      await seedOutbox(everyStatus('a', { createdAt: at(HOUR) }));
      expect(await admin.purgeMessages({ createdBefore: at(HOUR) })).toBe(2);
      expect(await database.statusCounts()).toEqual({ PENDING: 2, PROCESSING: 2, DONE: 1, FAILED: 2, MANUAL_REQUIRED: 2, ABANDONED: 1 });
      expect(await admin.purgeMessages({ type: 'a', status: [MANUAL_REQUIRED, PENDING, PROCESSING, FAILED] })).toBe(2);
      expect(await database.statusCounts()).toEqual({ PENDING: 2, PROCESSING: 2, DONE: 1, FAILED: 2, ABANDONED: 1 });
      expect(await admin.purgeMessages({ status: ABANDONED })).toBe(1);
      expect(await database.statusCounts()).toEqual({ PENDING: 2, PROCESSING: 2, DONE: 1, FAILED: 2 });
    });

    it('refuses a filter without a status or a time bound, and statuses it never deletes', async () => {
      await seedOutbox(everyStatus('a'));
      await expect(admin.purgeMessages({ type: 'a' })).rejects.toBeInstanceOf(OutboxAdminFilterError);
      await expect(admin.purgeMessages({ status: [PENDING, PROCESSING, FAILED] })).rejects.toMatchObject({ field: 'status' });
      expect(await database.statusCounts()).toEqual({ PENDING: 1, PROCESSING: 1, DONE: 1, FAILED: 1, MANUAL_REQUIRED: 1, ABANDONED: 1 });
    });

    it('purges inbox deliveries by time', async () => {
      await seedInbox([
        { status: DONE, createdAt: at(0) },
        { status: DONE, createdAt: at(HOUR) },
        { status: FAILED, createdAt: at(0) },
      ]);
      expect(await admin.purgeInboxMessages({ createdBefore: at(HOUR) })).toBe(1);
      expect(await database.statusCounts('inbox_message')).toEqual({ DONE: 1, FAILED: 1 });
    });
  });

  describe('an empty filter', () => {
    const refusals: [string, () => Promise<number>][] = [
      ['requeueMessages', () => admin.requeueMessages({})],
      ['abandonMessages', () => admin.abandonMessages({})],
      ['replayMessages', () => admin.replayMessages({})],
      ['purgeMessages', () => admin.purgeMessages({})],
      ['requeueInboxMessages', () => admin.requeueInboxMessages({})],
      ['abandonInboxMessages', () => admin.abandonInboxMessages({})],
      ['purgeInboxMessages', () => admin.purgeInboxMessages({})],
      ['a filter of undefined fields', () => admin.abandonMessages({ type: undefined })],
    ];

    it.each(refusals)('is refused by %s, which changes nothing', async (_, operation) => {
      await seedOutbox(everyStatus('a'));
      await seedInbox([{ status: FAILED }, { status: DONE }]);
      await expect(operation()).rejects.toThrow(/empty filter|needs a status/);
      expect(await database.statusCounts()).toEqual({ PENDING: 1, PROCESSING: 1, DONE: 1, FAILED: 1, MANUAL_REQUIRED: 1, ABANDONED: 1 });
      expect(await database.statusCounts('inbox_message')).toEqual({ FAILED: 1, DONE: 1 });
    });
  });

  describe('replayMessages()', () => {
    it('makes DONE rows of the filter PENDING again under the same message id, due now, with no attempts', async () => {
      const a = await seedOutbox(everyStatus('a'));
      const b = await seedOutbox(everyStatus('b'));
      expect(await admin.replayMessages({ type: 'a' })).toBe(1);
      const rows = await outboxRows();
      const done = ALL_STATUSES.indexOf(DONE);
      expect(rows.get(a[done])).toMatchObject({ status: PENDING, attempts: 0, processedAt: null });
      for (const [i, status] of ALL_STATUSES.entries()) {
        if (i !== done) expect(rows.get(a[i])!.status).toBe(status);
        expect(rows.get(b[i])!.status).toBe(status);
      }
      const claimed = await dialect().claim(dataSource, 20, randomUUID(), 'test', 'default');
      expect(claimed.find((message) => message.messageId === a[done])).toMatchObject({ attempts: 0 });
    });

    const dialect = () => app.get<OutboxDialect>(OUTBOX_DIALECT);
    const claimIds = async () => messageIds(await dialect().claim(dataSource, 10, randomUUID(), 'test', 'default'));

    it('replays the tail of an ordering key in its order, one message at a time', async () => {
      const keyed = await seedOutbox([0, 1, 2].map((i) => ({ status: DONE, type: 'a', orderingKey: 'order-7', createdAt: at(i) })));
      expect(await admin.replayMessages({ type: 'a' })).toBe(3);
      for (const messageId of keyed) {
        const claims = await dialect().claim(dataSource, 10, randomUUID(), 'test', 'default');
        expect(messageIds(claims)).toEqual([messageId]);
        await dialect().settleDone(dataSource, claims);
      }
      expect(await claimIds()).toEqual([]);
    });

    it('replays a keyed row whose later rows were sent, which it then follows, unless they are replayed too', async () => {
      const [old, newer, alone] = await seedOutbox([
        { status: DONE, type: 'a', orderingKey: 'order-8', createdAt: at(0) },
        { status: DONE, type: 'a', orderingKey: 'order-8', createdAt: at(1_000) },
        { status: DONE, type: 'a', orderingKey: 'order-9', createdAt: at(0) },
      ]);
      expect(await admin.replayMessages({ type: 'a', createdBefore: at(1_000) })).toBe(2);
      expect(await statusOf(old)).toBe(PENDING);
      expect(await statusOf(newer)).toBe(DONE);
      expect((await claimIds()).sort()).toEqual([old, alone].sort());
    });

    it.each([PENDING, PROCESSING, FAILED, MANUAL_REQUIRED])(
      'keeps a keyed row DONE while a later row of its key is %s, and never holds that row back',
      async (later) => {
        const [done, waiting] = await seedOutbox([
          { status: DONE, type: 'a', orderingKey: 'order-10' },
          { status: later, type: 'b', orderingKey: 'order-10' },
        ]);
        expect(await admin.replayMessages({ type: 'a' })).toBe(0);
        expect(await statusOf(done)).toBe(DONE);
        if (later === PENDING || later === FAILED) expect(await claimIds()).toEqual([waiting]);
      },
    );

    it('replays a key past its ABANDONED rows', async () => {
      const [first, abandoned] = await seedOutbox([
        { status: DONE, type: 'a', orderingKey: 'order-11' },
        { status: ABANDONED, type: 'a', orderingKey: 'order-11' },
      ]);
      expect(await admin.replayMessages({ type: 'a' })).toBe(1);
      expect(await statusOf(first)).toBe(PENDING);
      expect(await statusOf(abandoned)).toBe(ABANDONED);
    });

    it('holds a message published after the replay behind the replayed one, then sends it', async () => {
      const [replayed] = await seedOutbox([{ status: DONE, type: 'a', orderingKey: 'order-12' }]);
      expect(await admin.replayMessages({ type: 'a' })).toBe(1);
      const [later] = await seedOutbox([{ status: PENDING, type: 'a', orderingKey: 'order-12' }]);
      const claims = await dialect().claim(dataSource, 10, randomUUID(), 'test', 'default');
      expect(messageIds(claims)).toEqual([replayed]);
      await dialect().settleDone(dataSource, claims);
      expect(await claimIds()).toEqual([later]);
    });

    it('refuses a filter whose status names no DONE row', async () => {
      await expect(admin.replayMessages({ status: [FAILED, PENDING] })).rejects.toMatchObject({ field: 'status' });
    });
  });

  describe('more rows than one batch', () => {
    it('goes through every batch of each operation, counting every row once', async () => {
      await seedOutbox(Array.from({ length: 11 }, () => ({ status: MANUAL_REQUIRED, type: 'many' })));
      await seedOutbox(Array.from({ length: 4 }, () => ({ status: DONE, type: 'other' })));
      expect(await admin.requeueMessages({ type: 'many' }, { batchSize: 3 })).toBe(11);
      expect(await admin.abandonMessages({ type: 'many' }, { batchSize: 4 })).toBe(11);
      expect(await admin.purgeMessages({ status: ABANDONED }, { batchSize: 2 })).toBe(11);
      expect(await database.statusCounts()).toEqual({ DONE: 4 });
    });

    it('requeues inbox rows that stay FAILED without going round them again', async () => {
      await seedInbox(Array.from({ length: 7 }, () => ({ status: FAILED })));
      expect(await admin.requeueInboxMessages({ status: FAILED }, { batchSize: 2 })).toBe(7);
    });

    it('replays a key whose tail spans several batches, in order', async () => {
      const keyed = await seedOutbox(Array.from({ length: 5 }, () => ({ status: DONE, type: 'a', orderingKey: 'order-13' })));
      await seedOutbox(Array.from({ length: 4 }, () => ({ status: DONE, type: 'a' })));
      expect(await admin.replayMessages({ type: 'a' }, { batchSize: 2 })).toBe(9);
      const claimed = await claimIds();
      expect(claimed).toContain(keyed[0]);
      expect(claimed.filter((id) => keyed.includes(id))).toEqual([keyed[0]]);
    });

    const dialect = () => app.get<OutboxDialect>(OUTBOX_DIALECT);
    const claimIds = async () => messageIds(await dialect().claim(dataSource, 20, randomUUID(), 'test', 'default'));
  });

  describe('rows claimed meanwhile', () => {
    it('are PROCESSING and left alone', async () => {
      const ids = await seedOutbox(Array.from({ length: 6 }, () => ({ status: PENDING, type: 'a' })));
      await database.sql(`UPDATE {outbox_message} SET next_attempt_at = ${database.timeAgo(1_000)}`);
      const claimed = await app.get<OutboxDialect>(OUTBOX_DIALECT).claim(dataSource, 2, randomUUID(), 'test', 'default');
      expect(await admin.abandonMessages({ type: 'a' })).toBe(4);
      const rows = await outboxRows();
      for (const id of ids) expect(rows.get(id)!.status).toBe(messageIds(claimed).includes(id) ? PROCESSING : ABANDONED);
    });
  });

  describe('while a dispatcher runs', () => {
    let dispatching: INestApplicationContext;
    let transport: CapturingOutboxTransport;

    beforeAll(async () => {
      // Small claims, one at a time: operations and claims interleave.
      dispatching = await createTestApp({
        database,
        outbox: { pollIntervalMs: 50, batchSize: 5, dispatchConcurrency: 1 },
        statics: { transport: CapturingOutboxTransport },
      });
      transport = OutboxTestKit.from(dispatching).transport;
    }, timeoutFor(STARTUP_TIMEOUT_MS));

    afterAll(() => dispatching?.close());

    beforeEach(() => {
      // Nothing is claimed while a test seeds its rows.
      transport.setAvailable(false);
      transport.clear();
    });

    async function untilSettled(): Promise<void> {
      await waitUntil(async () => {
        const counts = await database.statusCounts();
        return !counts.PENDING && !counts.PROCESSING;
      }, 'no row is left to send');
    }

    it(
      'abandons only rows no dispatcher took: every row ends sent or abandoned, never both',
      async () => {
        const ids = await seedOutbox(Array.from({ length: 120 }, () => ({ status: PENDING, type: 'race' })));
        transport.setAvailable(true);
        const abandoned = await admin.abandonMessages({ type: 'race' }, { batchSize: 7 });
        await untilSettled();
        const rows = await outboxRows();
        const sent = messageIds(transport.messages);
        expect(abandoned).toBeGreaterThan(0);
        expect(new Set(sent).size).toBe(sent.length);
        expect(ids.filter((id) => rows.get(id)!.status === DONE).sort()).toEqual([...sent].sort());
        expect(ids.filter((id) => rows.get(id)!.status === ABANDONED)).toHaveLength(abandoned);
        expect(sent.length + abandoned).toBe(ids.length);
      },
      timeoutFor(WAIT_TIMEOUT_MS),
    );

    it(
      'replays keyed rows in batches while they are sent, each key in its order',
      async () => {
        const keys = ['key-0', 'key-1', 'key-2', 'key-3', 'key-4'];
        const ids = await seedOutbox(Array.from({ length: 50 }, (_, i) => ({ status: DONE, type: 'replayed', orderingKey: keys[i % keys.length] })));
        transport.setAvailable(true);
        expect(await admin.replayMessages({ type: 'replayed' }, { batchSize: 4 })).toBe(ids.length);
        await untilSettled();
        expect(await database.statusCounts()).toEqual({ DONE: ids.length });
        expect(transport.messages).toHaveLength(ids.length);
        for (const k of keys.keys()) {
          const ofKey = ids.filter((_, i) => i % keys.length === k);
          expect(messageIds(transport.messages).filter((id) => ofKey.includes(id))).toEqual(ofKey);
        }
      },
      timeoutFor(WAIT_TIMEOUT_MS),
    );
  });

  describe('listing, property-based', () => {
    const TYPES = ['order.paid', 'order.shipped', 'Order.paid'];
    const KEYS = ['k1', 'k2', 'K1'];
    const TRANSPORTS = ['default', 'partner'];
    const ERRORS = ['timeout after 5s', 'HTTP 503: 100% busy', 'unroutable: no_queue', 'a_b!c'];
    const TIMES = [0, 1, 500, 60_000, HOUR];
    const RUNS = 60;
    const FIELD_NAMES: Record<keyof OutboxMessageFilter, true> = {
      status: true,
      type: true,
      bizKey: true,
      transport: true,
      errorContains: true,
      createdAfter: true,
      createdBefore: true,
    };

    const seedArbitrary = fc.record({
      status: fc.constantFrom(...ALL_STATUSES),
      type: fc.constantFrom(...TYPES),
      bizKey: fc.option(fc.constantFrom(...KEYS), { nil: null }),
      transport: fc.constantFrom(...TRANSPORTS),
      lastError: fc.option(fc.constantFrom(...ERRORS), { nil: null }),
      createdAt: fc.constantFrom(...TIMES).map(at),
    });
    const filterValues = fc.record({
      status: fc.oneof(fc.constantFrom(...ALL_STATUSES), fc.uniqueArray(fc.constantFrom(...ALL_STATUSES), { minLength: 1 })),
      type: fc.constantFrom(...TYPES, 'order'),
      bizKey: fc.constantFrom(...KEYS, 'k3'),
      transport: fc.constantFrom(...TRANSPORTS, 'other'),
      errorContains: fc.constantFrom('timeout', '100%', '%', '_', 'no_q', '!', 'b!c', 'T', '503: 1'),
      createdAfter: fc.constantFrom(...TIMES, 2).map(at),
      createdBefore: fc.constantFrom(...TIMES, 2, 2 * HOUR).map(at),
    });
    /** Up to three fields: more rarely select any of 40 rows. */
    const filterArbitrary = fc
      .tuple(filterValues, fc.uniqueArray(fc.constantFrom(...(Object.keys(FIELD_NAMES) as (keyof OutboxMessageFilter)[])), { maxLength: 3 }))
      .map(([values, fields]) => Object.fromEntries(fields.map((field) => [field, values[field]])) as OutboxMessageFilter);

    function matches(row: Required<OutboxSeed>, filter: OutboxMessageFilter): boolean {
      const statuses = filter.status === undefined ? undefined : ([] as MessageStatus[]).concat(filter.status);
      return (
        (!statuses || statuses.includes(row.status)) &&
        (filter.type === undefined || row.type === filter.type) &&
        (filter.bizKey === undefined || row.bizKey === filter.bizKey) &&
        (filter.transport === undefined || row.transport === filter.transport) &&
        (filter.errorContains === undefined || (row.lastError !== null && row.lastError.includes(filter.errorContains))) &&
        (filter.createdAfter === undefined || row.createdAt >= filter.createdAfter) &&
        (filter.createdBefore === undefined || row.createdAt < filter.createdBefore)
      );
    }

    it('lists exactly the seeded rows a filter selects, in order, across pages', async () => {
      const seeds = fc.sample(fc.array(seedArbitrary, { minLength: 40, maxLength: 40 }), { numRuns: 1, seed: 42 })[0] as Required<OutboxSeed>[];
      // (type, bizKey) is unique: a repeated pair loses its key.
      const pairs = new Set<string>();
      for (const seed of seeds) {
        if (seed.bizKey !== null && pairs.has(`${seed.type} ${seed.bizKey}`)) seed.bizKey = null;
        if (seed.bizKey !== null) pairs.add(`${seed.type} ${seed.bizKey}`);
      }
      const ids = await seedOutbox(seeds);
      let selecting = 0;
      await fc.assert(
        fc.asyncProperty(
          filterArbitrary,
          fc.integer({ min: 1, max: 15 }),
          fc.constantFrom('newest' as const, 'oldest' as const),
          async (filter, limit, order) => {
            if (filter.createdAfter && filter.createdBefore && filter.createdAfter >= filter.createdBefore) {
              await expect(admin.listMessages(filter)).rejects.toMatchObject({ field: 'createdAfter' });
              return;
            }
            const expected = ids.filter((_, i) => matches(seeds[i], filter));
            if (expected.length > 0) selecting++;
            const listed = messageIds(await listAll(filter, limit, order));
            expect(listed).toEqual(order === 'oldest' ? expected : [...expected].reverse());
          },
        ),
        { numRuns: RUNS },
      );
      // Filters that select rows came up often: the property was not vacuous.
      expect(selecting).toBeGreaterThan(RUNS / 4);
    }, 120_000);
  });
});
