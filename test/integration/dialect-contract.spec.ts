import fc from 'fast-check';
import { randomUUID } from 'node:crypto';
import { archiveTableName, TableKind } from '../../lib/naming/index-names';
import { requeuedStatus } from '../../lib/dialects/message-ref-sql';
import { CHANGEABLE_STATUSES, ClaimRef, MessageChange, MessageFilter } from '../../lib/engine/state-table';
import { CLAIMABLE_STATUSES, MessageStatus, UNFINISHED_STATUSES } from '../../lib/message/message-status';
import { DATABASE_KIND, testDatabase } from '../support/database';
import {
  claim,
  clearTables,
  ContractTables,
  databaseNow,
  LANES,
  openContractTables,
  rawRows,
  readRows,
  rowsById,
  seed,
  stateTable,
  StoredRow,
  TABLE_NAMES,
} from './dialect-contract-fixture';
import { toDate } from '../support/sql-values';
import { STARTUP_TIMEOUT_MS, timeoutFor } from '../support/wait';

const { PENDING, PROCESSING, DONE, FAILED, MANUAL_REQUIRED, ABANDONED } = MessageStatus;
const STATUSES = Object.values(MessageStatus);
const MINUTE = 60_000;
const HOUR = 60 * MINUTE;
const DAY = 24 * HOUR;
/** Each property's runs: enough to mix the cases, few enough for three databases on a shared machine. */
const RUNS = { numRuns: 15 };
/** Properties make many round trips per run. */
const PROPERTY_TIMEOUT = timeoutFor(120_000);

const database = testDatabase('it_dialect_contract');

const isClaimable = (status: MessageStatus) => (CLAIMABLE_STATUSES as readonly MessageStatus[]).includes(status);
const isUnfinished = (status: MessageStatus) => (UNFINISHED_STATUSES as readonly MessageStatus[]).includes(status);
const isFinished = (status: MessageStatus) => status === DONE || status === ABANDONED;
/** Rows of one ordering key: keys are global in the outbox, per consumer in the inbox. */
const sameKey = (kind: TableKind, a: StoredRow, b: StoredRow) =>
  a.orderingKey !== null && a.orderingKey === b.orderingKey && (kind === 'outbox' || a.lane === b.lane);

/** `actual` lies within [from, to], give or take the stored precision (SQLite keeps milliseconds). */
function expectWithin(actual: Date | null, from: Date, to: Date, slackMs = 2): void {
  expect(actual).toBeInstanceOf(Date);
  expect(actual!.getTime()).toBeGreaterThanOrEqual(from.getTime() - slackMs);
  expect(actual!.getTime()).toBeLessThanOrEqual(to.getTime() + slackMs);
}

/**
 * The dialect's state table, the same cases on every database: whatever SQL a dialect writes,
 * these are the transitions the engine relies on. Runs on the database of the jest project.
 */
describe(`Dialect contract (${DATABASE_KIND})`, () => {
  let t: ContractTables;

  beforeAll(async () => {
    t = await openContractTables(database);
  }, timeoutFor(STARTUP_TIMEOUT_MS));

  afterAll(() => t?.dataSource.destroy());

  beforeEach(() => clearTables(t));

  describe.each(['outbox', 'inbox'] as TableKind[])('%s table', (kind) => {
    const table = () => stateTable(t, kind);
    const [lane, otherLane] = LANES[kind];
    const ref = (row: StoredRow) => (kind === 'inbox' ? { messageId: row.messageId, consumer: row.lane } : { messageId: row.messageId });
    const statusArb = fc.constantFrom(...STATUSES);

    describe('claims and fenced settles', () => {
      type Outcome = 'done' | 'failed' | 'manual' | 'release';
      const settle = (outcome: Outcome, refs: ClaimRef[], delayMs = 0, error = 'boom') => {
        switch (outcome) {
          case 'done':
            return table().settleDone(t.dataSource, refs);
          case 'release':
            return table().release(t.dataSource, refs);
          default:
            return table().settleFailed(
              t.dataSource,
              refs.map((r) => ({ ...r, status: outcome === 'failed' ? FAILED : MANUAL_REQUIRED, delayMs, error })),
            );
        }
      };

      it('claims due rows of its lane in id order, once, leaving delayed rows and other lanes', async () => {
        const rows = await seed(t, kind, [{}, { dueInMs: HOUR }, { lane: otherLane }, { status: FAILED, attempts: 2 }, { status: MANUAL_REQUIRED }, {}]);
        const token = randomUUID();
        const claimed = await claim(t, kind, 10, token);
        expect(claimed.map((c) => c.messageId)).toEqual([rows[0], rows[3], rows[5]].map((r) => r.messageId));
        expect(claimed.map((c) => [c.claimToken, c.attempts, c.maxAttempts])).toEqual([
          [token, 0, 5],
          [token, 2, 5],
          [token, 0, 5],
        ]);
        const stored = await rowsById(t, kind);
        for (const c of claimed) expect(stored.get(c.id)).toMatchObject({ status: PROCESSING, claimToken: token, claimedBy: 'contract-instance' });
        // The outbox's claim carries the row's creation time (the published-at header) and its lane.
        if (kind === 'outbox') {
          for (const c of claimed) expect(c).toMatchObject({ createdAt: stored.get(c.id)!.createdAt, transport: lane });
        }
        expect(await claim(t, kind, 10, randomUUID())).toEqual([]);
        expect((await claim(t, kind, 10, randomUUID(), otherLane)).map((c) => c.messageId)).toEqual([rows[2].messageId]);
      });

      it('claims one row of an ordering key at a time, in id order', async () => {
        const rows = await seed(t, kind, [{ orderingKey: 'k1' }, { orderingKey: 'k1' }, { orderingKey: 'k2', status: DONE }, { orderingKey: 'k2' }]);
        const first = await claim(t, kind, 10, randomUUID());
        expect(first.map((c) => c.messageId)).toEqual([rows[0].messageId, rows[3].messageId]);
        expect(await table().settleDone(t.dataSource, [first[0]])).toBe(1);
        expect((await claim(t, kind, 10, randomUUID())).map((c) => c.messageId)).toEqual([rows[1].messageId]);
      });

      it(
        'changes only claims still held by their token, and counts them',
        async () => {
          const outcomes = fc.constantFrom<Outcome>('done', 'failed', 'manual', 'release');
          await fc.assert(
            // One stale token for every stale ref, or one each: a batch whose refs all share a
            // token settles through a shorter statement on some databases than a mixed one.
            fc.asyncProperty(
              fc.array(fc.boolean(), { minLength: 1, maxLength: 5 }),
              outcomes,
              fc.boolean(),
              fc.boolean(),
              async (stale, outcome, attempted, oneStaleToken) => {
                await clearTables(t);
                await seed(
                  t,
                  kind,
                  stale.map(() => (attempted ? { status: FAILED, attempts: 1 } : {})),
                );
                const token = randomUUID();
                const claimed = await claim(t, kind, 100, token);
                expect(claimed).toHaveLength(stale.length);
                const staleToken = randomUUID();
                const refs = claimed.map((c, i) => ({ id: c.id, claimToken: stale[i] ? (oneStaleToken ? staleToken : randomUUID()) : c.claimToken }));
                const held = stale.filter((s) => !s).length;
                expect(await settle(outcome, refs)).toBe(held);
                expect(await settle(outcome, refs)).toBe(0);
                const stored = await rowsById(t, kind);
                claimed.forEach((c, i) => {
                  const row = stored.get(c.id)!;
                  if (stale[i]) {
                    expect(row).toMatchObject({ status: PROCESSING, claimToken: token, attempts: attempted ? 1 : 0 });
                    return;
                  }
                  const expected = {
                    done: { status: DONE, attempts: attempted ? 1 : 0, lastError: null },
                    failed: { status: FAILED, attempts: attempted ? 2 : 1, lastError: 'boom', claimedAt: null, claimedBy: null },
                    manual: { status: MANUAL_REQUIRED, attempts: attempted ? 2 : 1, lastError: 'boom', claimedAt: null, claimedBy: null },
                    release: { status: attempted ? FAILED : PENDING, attempts: attempted ? 1 : 0, claimedAt: null, claimedBy: null },
                  }[outcome];
                  expect(row).toMatchObject({ ...expected, claimToken: null });
                  if (outcome === 'done') expect(row.processedAt).toBeInstanceOf(Date);
                });
              },
            ),
            RUNS,
          );
        },
        PROPERTY_TIMEOUT,
      );

      it(
        'schedules a failed attempt by the database clock, with its error, whatever the delay',
        async () => {
          const settlement = fc.record({
            delayMs: fc.integer({ min: 0, max: 7 * DAY }),
            status: fc.constantFrom<MessageStatus.FAILED | MessageStatus.MANUAL_REQUIRED>(FAILED, MANUAL_REQUIRED),
            error: fc.string({ maxLength: 40 }),
          });
          await fc.assert(
            fc.asyncProperty(fc.array(settlement, { minLength: 1, maxLength: 4 }), async (settlements) => {
              await clearTables(t);
              await seed(
                t,
                kind,
                settlements.map(() => ({})),
              );
              const claimed = await claim(t, kind, 100, randomUUID());
              const before = await databaseNow(t);
              const count = await table().settleFailed(
                t.dataSource,
                claimed.map((c, i) => ({ id: c.id, claimToken: c.claimToken, ...settlements[i] })),
              );
              const after = await databaseNow(t);
              expect(count).toBe(settlements.length);
              const stored = await rowsById(t, kind);
              claimed.forEach((c, i) => {
                const row = stored.get(c.id)!;
                expect(row).toMatchObject({ status: settlements[i].status, attempts: 1, lastError: settlements[i].error, claimToken: null });
                expectWithin(row.nextAttemptAt, new Date(before.getTime() + settlements[i].delayMs), new Date(after.getTime() + settlements[i].delayMs));
              });
            }),
            RUNS,
          );
        },
        PROPERTY_TIMEOUT,
      );

      it('settles in the caller transaction: a rollback undoes the settle', async () => {
        await seed(t, kind, [{}]);
        const [claimed] = await claim(t, kind, 1, randomUUID());
        await expect(
          t.dataSource.transaction(async (manager) => {
            expect(await table().settleDone(manager, [claimed])).toBe(1);
            throw new Error('rolled back');
          }),
        ).rejects.toThrow('rolled back');
        expect((await rowsById(t, kind)).get(claimed.id)).toMatchObject({ status: PROCESSING, claimToken: claimed.claimToken });
        expect(await t.dataSource.transaction((manager) => table().settleDone(manager, [claimed]))).toBe(1);
        expect((await rowsById(t, kind)).get(claimed.id)).toMatchObject({ status: DONE, claimToken: null });
      });

      it('renews the lease of rows still held by their token, and of no other row', async () => {
        const rows = await seed(t, kind, [
          { status: PROCESSING, claimedAgoMs: 5 * MINUTE, claimToken: randomUUID(), claimedBy: 'a' },
          { status: PROCESSING, claimedAgoMs: 5 * MINUTE, claimToken: randomUUID(), claimedBy: 'b' },
          { status: PROCESSING, claimedAgoMs: 5 * MINUTE, claimToken: randomUUID(), claimedBy: 'c' },
        ]);
        const [mine, takenOver, settled] = rows.map((row) => ({ id: row.id, claimToken: row.claimToken! }));
        expect(await table().settleDone(t.dataSource, [settled])).toBe(1);
        const before = await databaseNow(t);
        // The second row's claim was taken over: the renewal comes with the token it had.
        const renewed = await table().renew(t.dataSource, [mine, { ...takenOver, claimToken: randomUUID() }, settled]);
        const after = await databaseNow(t);
        expect(renewed).toBe(1);
        const stored = await rowsById(t, kind);
        expectWithin(stored.get(mine.id)!.claimedAt, before, after);
        expect(stored.get(mine.id)).toMatchObject({ status: PROCESSING, claimToken: mine.claimToken });
        expect(stored.get(takenOver.id)!.claimedAt!.getTime()).toBeLessThan(before.getTime() - 4 * MINUTE);
        expect(stored.get(settled.id)).toMatchObject({ status: DONE });
        // Renewed: no longer expired; the other is.
        expect((await table().findExpiredClaims(t.dataSource, MINUTE, 10)).map((c) => c.id)).toEqual([takenOver.id]);
        expect(await table().renew(t.dataSource, [])).toBe(0);
      });

      it('gives back every row still held under a claim token, due now', async () => {
        await seed(t, kind, [{}, { status: FAILED, attempts: 2 }, {}]);
        const token = randomUUID();
        const held = await claim(t, kind, 2, token);
        const [other] = await claim(t, kind, 1, randomUUID());
        const before = await databaseNow(t);
        expect(await table().releaseClaim(t.dataSource, token)).toBe(2);
        const after = await databaseNow(t);
        expect(await table().releaseClaim(t.dataSource, token)).toBe(0);
        const stored = await rowsById(t, kind);
        expect(stored.get(held[0].id)).toMatchObject({ status: PENDING, attempts: 0, claimToken: null, claimedAt: null, claimedBy: null });
        expect(stored.get(held[1].id)).toMatchObject({ status: FAILED, attempts: 2, claimToken: null, claimedAt: null, claimedBy: null });
        for (const c of held) expectWithin(stored.get(c.id)!.nextAttemptAt, before, after);
        expect(stored.get(other.id)).toMatchObject({ status: PROCESSING, claimToken: other.claimToken });
      });
    });

    describe('stuck claims and health', () => {
      // Ages in odd minutes and thresholds in even ones: no row sits on a boundary.
      const oddMinutes = fc.uniqueArray(fc.integer({ min: 0, max: 120 }), { minLength: 1, maxLength: 6 }).map((ns) => ns.map((n) => (2 * n + 1) * MINUTE));
      const evenMinutes = fc.integer({ min: 0, max: 121 }).map((n) => 2 * n * MINUTE);

      it(
        'finds claims older than a threshold, oldest first, up to a limit',
        async () => {
          await fc.assert(
            fc.asyncProperty(oddMinutes, evenMinutes, fc.integer({ min: 1, max: 4 }), async (ages, threshold, limit) => {
              await clearTables(t);
              const rows = await seed(
                t,
                kind,
                ages.map((age, i) => ({
                  status: PROCESSING,
                  claimedAgoMs: age,
                  claimToken: randomUUID(),
                  claimedBy: `host-${i}`,
                  attempts: i % 3,
                  orderingKey: i % 2 ? `k${i}` : null,
                  lastError: i % 3 ? `attempt ${i % 3} failed` : null,
                })),
              );
              const expected = rows
                .map((row, i) => ({ row, age: ages[i] }))
                .filter(({ age }) => age > threshold)
                .sort((a, b) => b.age - a.age)
                .slice(0, limit)
                .map(({ row }) => ({
                  id: row.id,
                  claimToken: row.claimToken,
                  attempts: row.attempts,
                  maxAttempts: 5,
                  claimedBy: row.claimedBy,
                  orderingKey: row.orderingKey,
                  lastError: row.lastError,
                }));
              expect(await table().findExpiredClaims(t.dataSource, threshold, limit)).toEqual(expected);
            }),
            RUNS,
          );
        },
        PROPERTY_TIMEOUT,
      );

      it(
        'counts the due backlog and the stale claims',
        async () => {
          const row = fc.record({ status: statusArb, due: fc.boolean(), claimedAgo: fc.integer({ min: 0, max: 60 }).map((n) => (2 * n + 1) * MINUTE) });
          await fc.assert(
            fc.asyncProperty(fc.array(row, { maxLength: 8 }), evenMinutes, async (specs, threshold) => {
              await clearTables(t);
              await seed(
                t,
                kind,
                specs.map((s) => ({ status: s.status, dueInMs: s.due ? -MINUTE : HOUR, claimedAgoMs: s.status === PROCESSING ? s.claimedAgo : null })),
              );
              expect(await table().healthCounts(t.dataSource, threshold)).toEqual({
                backlog: specs.filter((s) => isClaimable(s.status) && s.due).length,
                staleProcessing: specs.filter((s) => s.status === PROCESSING && s.claimedAgo > threshold).length,
              });
            }),
            RUNS,
          );
        },
        PROPERTY_TIMEOUT,
      );

      it(
        'summarises rows per lane and status, with the due ones and the oldest due time, by the database clock',
        async () => {
          const row = fc.record({ status: statusArb, other: fc.boolean(), dueMinutes: fc.integer({ min: -30, max: 30 }).map((n) => 2 * n + 1) });
          await fc.assert(
            fc.asyncProperty(fc.array(row, { maxLength: 8 }), async (specs) => {
              await clearTables(t);
              const rows = await seed(
                t,
                kind,
                specs.map((s) => ({ status: s.status, lane: s.other ? otherLane : lane, dueInMs: s.dueMinutes * MINUTE })),
              );
              const before = await databaseNow(t);
              const summary = await table().statusSummary(t.dataSource);
              expectWithin(summary.at, before, await databaseNow(t));
              const groups = new Map<string, { scope: string; status: MessageStatus; count: number; due: number; oldestDueAt: Date | null }>();
              for (const stored of rows) {
                const key = `${stored.lane}/${stored.status}`;
                const group = groups.get(key) ?? { scope: stored.lane, status: stored.status, count: 0, due: 0, oldestDueAt: null };
                group.count++;
                if (isClaimable(stored.status) && stored.nextAttemptAt.getTime() <= before.getTime()) {
                  group.due++;
                  if (!group.oldestDueAt || stored.nextAttemptAt < group.oldestDueAt) group.oldestDueAt = stored.nextAttemptAt;
                }
                groups.set(key, group);
              }
              const byKey = (g: { scope: string | null; status: string }) => `${g.scope}/${g.status}`;
              const actual = [...summary.groups].sort((a, b) => byKey(a).localeCompare(byKey(b)));
              const expected = [...groups.values()].sort((a, b) => byKey(a).localeCompare(byKey(b)));
              expect(actual.map(({ oldestDueAt, ...rest }) => rest)).toEqual(expected.map(({ oldestDueAt, ...rest }) => rest));
              actual.forEach((group, i) => {
                if (expected[i].oldestDueAt === null) expect(group.oldestDueAt).toBeNull();
                else expectWithin(group.oldestDueAt, expected[i].oldestDueAt, expected[i].oldestDueAt, 1);
              });
            }),
            RUNS,
          );
        },
        PROPERTY_TIMEOUT,
      );
    });

    describe('retention', () => {
      const finishedRow = fc.record({ status: statusArb, old: fc.boolean() });
      const seedAged = (specs: { status: MessageStatus; old: boolean }[]) =>
        seed(
          t,
          kind,
          specs.map((s) => ({
            status: s.status,
            processedAgoMs: s.old ? 2 * DAY : DAY / 2,
            lastError: 'kept',
            bizKey: `biz-${randomUUID()}`,
            orderingKey: 'k',
          })),
        );
      const eligible = (rows: StoredRow[], specs: { status: MessageStatus; old: boolean }[], limit: number) =>
        rows
          .filter((_, i) => isFinished(specs[i].status) && specs[i].old)
          .slice(0, limit)
          .map((r) => r.id);

      it(
        'deletes finished rows older than the retention, lowest ids first, up to a limit',
        async () => {
          await fc.assert(
            fc.asyncProperty(fc.array(finishedRow, { maxLength: 8 }), fc.integer({ min: 1, max: 5 }), async (specs, limit) => {
              await clearTables(t);
              const rows = await seedAged(specs);
              const deleted = eligible(rows, specs, limit);
              expect(await table().deleteFinished(t.dataSource, DAY, limit)).toBe(deleted.length);
              expect((await readRows(t, kind)).map((r) => r.id)).toEqual(rows.map((r) => r.id).filter((id) => !deleted.includes(id)));
            }),
            RUNS,
          );
        },
        PROPERTY_TIMEOUT,
      );

      it(
        'moves finished rows older than the retention to the archive, every column as it was',
        async () => {
          await fc.assert(
            fc.asyncProperty(fc.array(finishedRow, { maxLength: 8 }), fc.integer({ min: 1, max: 5 }), async (specs, limit) => {
              await clearTables(t);
              const rows = await seedAged(specs);
              const moved = eligible(rows, specs, limit);
              const before = await rawRows(t, kind);
              const start = await databaseNow(t);
              expect(await table().archiveFinished(t.dataSource, t.archives[kind], DAY, limit)).toBe(moved.length);
              const end = await databaseNow(t);
              expect((await readRows(t, kind)).map((r) => r.id)).toEqual(rows.map((r) => r.id).filter((id) => !moved.includes(id)));
              const archive = archiveTableName(TABLE_NAMES[kind]);
              expect(await rawRows(t, kind, archive)).toEqual(before.filter((r) => moved.includes(String(r.id))));
              const stamps = await t.database.sqlOn(t.dataSource.manager, `SELECT archived_at FROM {${archive}}`);
              for (const { archived_at } of stamps) expectWithin(toDate(archived_at), start, end);
            }),
            RUNS,
          );
        },
        PROPERTY_TIMEOUT,
      );
    });

    describe('operators', () => {
      it(
        'finds the ordering keys whose first unfinished row is MANUAL_REQUIRED, oldest head first',
        async () => {
          const row = fc.record({ status: statusArb, key: fc.constantFrom('k1', 'k2', 'k3', null), other: fc.boolean() });
          await fc.assert(
            fc.asyncProperty(fc.array(row, { maxLength: 10 }), fc.integer({ min: 1, max: 4 }), async (specs, limit) => {
              await clearTables(t);
              const rows = await seed(
                t,
                kind,
                specs.map((s, i) => ({ status: s.status, orderingKey: s.key, lane: s.other ? otherLane : lane, attempts: i, lastError: `e${i}` })),
              );
              const expected = rows
                .filter(
                  (r) =>
                    r.orderingKey !== null &&
                    r.status === MANUAL_REQUIRED &&
                    !rows.some((e) => sameKey(kind, e, r) && BigInt(e.id) < BigInt(r.id) && isUnfinished(e.status)),
                )
                .slice(0, limit)
                .map((r) => ({
                  orderingKey: r.orderingKey,
                  consumer: kind === 'inbox' ? r.lane : null,
                  transport: kind === 'outbox' ? r.lane : null,
                  messageId: r.messageId,
                  type: r.type,
                  attempts: r.attempts,
                  lastError: r.lastError,
                  waiting: rows.filter((w) => sameKey(kind, w, r) && BigInt(w.id) > BigInt(r.id) && isUnfinished(w.status)).length,
                }));
              const parked = await table().findParkedKeys(t.dataSource, limit);
              expect(parked.map((p) => ({ ...p, attempts: Number(p.attempts) }))).toEqual(expected);
            }),
            RUNS,
          );
        },
        PROPERTY_TIMEOUT,
      );

      it.each(STATUSES)('requeues a %s message only when it is FAILED or MANUAL_REQUIRED', async (status) => {
        const [row] = await seed(t, kind, [{ status, attempts: 3, dueInMs: HOUR, processedAgoMs: status === DONE ? MINUTE : null }]);
        const requeuable = status === FAILED || status === MANUAL_REQUIRED;
        if (kind === 'inbox') expect(await table().requeue(t.dataSource, { ...ref(row), consumer: otherLane })).toBe(false);
        expect(await table().requeue(t.dataSource, { ...ref(row), messageId: randomUUID() })).toBe(false);
        const before = await databaseNow(t);
        expect(await table().requeue(t.dataSource, ref(row))).toBe(requeuable);
        const after = await databaseNow(t);
        const [stored] = await readRows(t, kind);
        if (!requeuable) return expect(stored).toEqual(row);
        expect(stored).toMatchObject({ status: requeuedStatus(kind === 'inbox' ? 'consumer' : null), attempts: 0 });
        expectWithin(stored.nextAttemptAt, before, after);
      });

      it.each(STATUSES)('abandons a %s message only when it is PENDING, FAILED or MANUAL_REQUIRED', async (status) => {
        const [row] = await seed(t, kind, [{ status, attempts: 1 }]);
        const abandonable = status === PENDING || status === FAILED || status === MANUAL_REQUIRED;
        if (kind === 'inbox') expect(await table().abandon(t.dataSource, { ...ref(row), consumer: otherLane })).toBe(false);
        const before = await databaseNow(t);
        expect(await table().abandon(t.dataSource, ref(row))).toBe(abandonable);
        const after = await databaseNow(t);
        const [stored] = await readRows(t, kind);
        if (!abandonable) return expect(stored).toEqual(row);
        expect(stored).toMatchObject({ status: ABANDONED, attempts: 1 });
        expectWithin(stored.processedAt, before, after);
      });

      const ERRORS = [null, 'disk full', 'Disk 50% full', 'x_y', 'xay', 'it said "no"'];
      const NEEDLES = ['disk', '50%', '_', 'full', 'x_', '"no"'];
      const listedRow = fc.record({
        status: statusArb,
        type: fc.constantFrom('a.event', 'b.event'),
        withBizKey: fc.boolean(),
        other: fc.boolean(),
        error: fc.constantFrom(...ERRORS),
      });
      /** Which filter fields a case sets, as indexes into what was seeded. */
      interface FilterChoice {
        statuses?: MessageStatus[];
        type?: string;
        bizKeyOf?: number;
        lane?: string;
        errorContains?: string;
        createdAfterMinutes?: number;
        createdBeforeMinutes?: number;
      }
      const filterArb = (createdBounds: number[]): fc.Arbitrary<FilterChoice> =>
        fc.record(
          {
            statuses: fc.uniqueArray(statusArb, { minLength: 1, maxLength: 3 }),
            type: fc.constantFrom('a.event', 'b.event'),
            bizKeyOf: fc.nat(),
            lane: fc.constantFrom(lane, otherLane),
            errorContains: fc.constantFrom(...NEEDLES),
            createdAfterMinutes: fc.constantFrom(...createdBounds),
            createdBeforeMinutes: fc.constantFrom(...createdBounds),
          },
          { requiredKeys: [] },
        );

      /** The filter, and the model of it over stored rows; creation times relative to `seededAt`. */
      function toFilter(choice: FilterChoice, rows: StoredRow[], seededAt: Date): { filter: MessageFilter; matches: (row: StoredRow) => boolean } {
        const bizKeys = rows.map((r) => r.bizKey).filter((k): k is string => k !== null);
        const filter: MessageFilter = {
          statuses: choice.statuses,
          type: choice.type,
          bizKey: choice.bizKeyOf !== undefined ? (bizKeys[choice.bizKeyOf % Math.max(bizKeys.length, 1)] ?? 'none') : undefined,
          errorContains: choice.errorContains,
          createdAfter: choice.createdAfterMinutes !== undefined ? new Date(seededAt.getTime() - choice.createdAfterMinutes * MINUTE) : undefined,
          createdBefore: choice.createdBeforeMinutes !== undefined ? new Date(seededAt.getTime() - choice.createdBeforeMinutes * MINUTE) : undefined,
          ...(choice.lane !== undefined ? (kind === 'outbox' ? { transport: choice.lane } : { consumer: choice.lane }) : {}),
        };
        for (const key of Object.keys(filter) as (keyof MessageFilter)[]) if (filter[key] === undefined) delete filter[key];
        const matches = (r: StoredRow) =>
          (!filter.statuses || filter.statuses.includes(r.status)) &&
          (filter.type === undefined || r.type === filter.type) &&
          (filter.bizKey === undefined || r.bizKey === filter.bizKey) &&
          (choice.lane === undefined || r.lane === choice.lane) &&
          (filter.errorContains === undefined || (r.lastError !== null && r.lastError.includes(filter.errorContains))) &&
          (!filter.createdAfter || r.createdAt >= filter.createdAfter) &&
          (!filter.createdBefore || r.createdAt < filter.createdBefore);
        return { filter, matches };
      }

      // Rows are created 1, 3, 5, ... minutes before seeding; filter bounds fall on even minutes.
      const seedListed = (specs: { status: MessageStatus; type: string; withBizKey: boolean; other: boolean; error: string | null }[]) =>
        seed(
          t,
          kind,
          specs.map((s, i) => ({
            status: s.status,
            type: s.type,
            bizKey: s.withBizKey ? `biz-${i}` : null,
            lane: s.other ? otherLane : lane,
            lastError: s.error,
            createdAgoMs: (2 * (specs.length - i) - 1) * MINUTE,
            processedAgoMs: isFinished(s.status) ? MINUTE : null,
          })),
        );
      const BOUNDS = [0, 2, 4, 6, 8, 10, 20];

      it(
        'lists the rows a filter selects, page by page in either id order',
        async () => {
          const window = fc.record({ limit: fc.integer({ min: 1, max: 4 }), newestFirst: fc.boolean() });
          await fc.assert(
            fc.asyncProperty(fc.array(listedRow, { maxLength: 8 }), filterArb(BOUNDS), window, async (specs, choice, { limit, newestFirst }) => {
              await clearTables(t);
              const seededAt = await databaseNow(t);
              const rows = await seedListed(specs);
              const { filter, matches } = toFilter(choice, rows, seededAt);
              const expected = rows.filter(matches);
              if (newestFirst) expected.reverse();
              const listed = [];
              let after: string | null = null;
              for (;;) {
                const page = await table().listMessages(t.dataSource, filter, { after, limit, newestFirst });
                listed.push(...page);
                if (page.length < limit) break;
                after = page[page.length - 1].id;
              }
              expect(listed).toEqual(
                expected.map((r) => ({
                  id: r.id,
                  messageId: r.messageId,
                  type: r.type,
                  bizKey: r.bizKey,
                  orderingKey: r.orderingKey,
                  status: r.status,
                  attempts: r.attempts,
                  lastError: r.lastError,
                  createdAt: r.createdAt,
                  processedAt: r.processedAt,
                  nextAttemptAt: r.nextAttemptAt,
                  ...(kind === 'outbox' ? { transport: r.lane, destination: '' } : { consumer: r.lane }),
                })),
              );
            }),
            RUNS,
          );
        },
        PROPERTY_TIMEOUT,
      );

      it(
        'changes the rows a filter selects, batch by batch up to the newest id, each only from the statuses its change may touch',
        async () => {
          const changeArb = fc.constantFrom<MessageChange>('requeue', 'abandon', 'replay', 'purge');
          const row = fc.record({ status: statusArb, key: fc.constantFrom('k1', 'k2', null), type: fc.constantFrom('a.event', 'b.event') });
          const filterChoice = fc.record(
            { statuses: fc.uniqueArray(statusArb, { minLength: 1, maxLength: 4 }), type: fc.constantFrom('a.event', 'b.event') },
            { requiredKeys: [] },
          );
          await fc.assert(
            fc.asyncProperty(
              fc.array(row, { minLength: 1, maxLength: 8 }),
              changeArb,
              filterChoice,
              fc.integer({ min: 1, max: 3 }),
              fc.nat(),
              async (specs, change, choice, size, throughAt) => {
                await clearTables(t);
                const rows = await seed(
                  t,
                  kind,
                  specs.map((s) => ({
                    status: s.status,
                    type: s.type,
                    orderingKey: s.key,
                    attempts: 2,
                    processedAgoMs: isFinished(s.status) ? MINUTE : null,
                    claimToken: s.status === PROCESSING || s.status === DONE ? randomUUID() : null,
                    claimedAgoMs: s.status === PROCESSING || s.status === DONE ? MINUTE : null,
                  })),
                );
                const filter: MessageFilter = { ...choice };
                const through = rows[throughAt % rows.length].id;
                const throughIndex = throughAt % rows.length;
                const changeable = CHANGEABLE_STATUSES[change];
                const changed = rows.filter(
                  (r, i) =>
                    i <= throughIndex &&
                    changeable.includes(r.status) &&
                    (!filter.statuses || filter.statuses.includes(r.status)) &&
                    (!filter.type || filter.type === r.type) &&
                    (change !== 'replay' || r.orderingKey === null || !rows.some((u) => sameKey(kind, u, r) && u.id > r.id && isUnfinished(u.status))),
                );
                let after: string | null = null;
                let total = 0;
                const before = await databaseNow(t);
                for (;;) {
                  const outcome = await table().changeMessages(t.dataSource, change, filter, { after, through, size });
                  if (outcome.lastId === null) break;
                  expect(outcome.changed).toBeLessThanOrEqual(size);
                  total += outcome.changed;
                  after = outcome.lastId;
                }
                const end = await databaseNow(t);
                expect(total).toBe(changed.length);
                const stored = await rowsById(t, kind);
                for (const r of rows) {
                  const now = stored.get(r.id);
                  if (!changed.includes(r)) {
                    expect(now).toEqual(r);
                    continue;
                  }
                  switch (change) {
                    case 'purge':
                      expect(now).toBeUndefined();
                      break;
                    case 'requeue':
                      expect(now).toMatchObject({ status: requeuedStatus(kind === 'inbox' ? 'consumer' : null), attempts: 0 });
                      expectWithin(now!.nextAttemptAt, before, end);
                      break;
                    case 'abandon':
                      expect(now).toMatchObject({ status: ABANDONED, attempts: 2 });
                      expectWithin(now!.processedAt, before, end);
                      break;
                    case 'replay':
                      expect(now).toMatchObject({ status: PENDING, attempts: 0, processedAt: null, claimToken: null, claimedAt: null, claimedBy: null });
                      expectWithin(now!.nextAttemptAt, before, end);
                      break;
                  }
                }
              },
            ),
            RUNS,
          );
        },
        PROPERTY_TIMEOUT,
      );
    });
  });
});
