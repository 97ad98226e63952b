import { INestApplicationContext } from '@nestjs/common';
import { randomUUID } from 'node:crypto';
import { OutboxModuleOptionsInput } from '../../lib';
import { brokerName } from '../support/broker-names';
import { ChildApp, killAllChildren, STOP_TIMEOUT_MS } from '../support/child-app';
import { testDatabase } from '../support/database';
import { sessionsOf } from '../support/database-sessions';
import { runExclusively } from '../support/exclusive-run';
import { publishMany } from '../support/publish-many';
import { duplicatesOf } from '../support/repeated-ids';
import { assertExchange, QueueProbe } from '../support/queue-probe';
import { createTestApp } from '../support/test-app';
import { STARTUP_TIMEOUT_MS, timeoutFor, WAIT_TIMEOUT_MS, waitUntil } from '../support/wait';

const database = testDatabase('it_crash');
const EXCHANGE = brokerName('it.crash');
const HOUR = 3_600_000;
/** Longest to wait for another run of this file to end. */
const EXCLUSIVE_RUN_WAIT_MS = 45_000;
/** Dispatching a few thousand messages, which takes seconds on a quiet machine. */
const BACKLOG_TIMEOUT_MS = 2 * WAIT_TIMEOUT_MS;

/**
 * A dispatcher that reclaims expired claims within seconds (reclaim must exceed the send timeout).
 * The send timeout stays well above what a confirm takes on a loaded machine: a timed-out send
 * would count an attempt, and the tests count attempts exactly.
 */
const RESCUER_OPTIONS: Omit<OutboxModuleOptionsInput, 'isFatalError'> = {
  stuckReclaimAfterMs: 6_000,
  sendTimeoutMs: 5_000,
  stuckWarnAfterMs: 1_000,
  stuckCheckIntervalMs: 500,
  backoffBaseMs: 50,
  backoffMaxMs: 200,
  pollIntervalMs: 100,
  batchSize: 100,
};

/** Processes `killDispatcherMidBatch` starts at most, and the longest it can take. */
const KILL_TRIES = 3;
const KILL_MID_BATCH_TIMEOUT_MS = KILL_TRIES * (STARTUP_TIMEOUT_MS + 2 * WAIT_TIMEOUT_MS);

interface Row {
  message_id: string;
  status: string;
  attempts: number;
  claimed_by: string | null;
  claim_token: string | null;
  last_error: string | null;
}

const ROW_COLUMNS = 'message_id, status, attempts, claimed_by, claim_token, last_error';
const asRow = (row: Row): Row => ({ ...row, attempts: Number(row.attempts) });
const rowsOfType = async (type: string) =>
  (await database.sql<Row>(`SELECT ${ROW_COLUMNS} FROM {outbox_message} WHERE message_type = ? ORDER BY id`, [type])).map(asRow);

/**
 * A dispatcher process that dies without warning (SIGKILL) leaves claimed rows behind;
 * another instance reclaims them once the claim expires and sends them, so no committed
 * message is lost. Messages the dead process sent but did not settle may arrive twice,
 * always under the same messageId.
 */
describe('Crash recovery (real processes)', () => {
  let publisher: INestApplicationContext;
  let probe: QueueProbe;
  let endExclusiveRun: (() => Promise<void>) | undefined;

  beforeAll(
    async () => {
      // Another run of this file (another developer's) would drop our database and probe queue.
      endExclusiveRun = await runExclusively(database, EXCLUSIVE_RUN_WAIT_MS);
      await database.reset();
      await assertExchange(EXCHANGE);
      // Creates the tables (synchronize) and only publishes: dispatching happens in child processes.
      publisher = await createTestApp({ database, outbox: { dispatcherEnabled: false } });
    },
    timeoutFor(EXCLUSIVE_RUN_WAIT_MS, STARTUP_TIMEOUT_MS),
  );

  beforeEach(async () => {
    probe = await QueueProbe.bind(EXCHANGE, '#', `${EXCHANGE}.probe`);
  });

  afterEach(async () => {
    await killAllChildren();
    await probe?.close();
  });

  afterAll(async () => {
    await publisher?.close();
    await endExclusiveRun?.();
  });

  it(
    'a dispatcher killed with SIGKILL mid-batch loses no committed message',
    async () => {
      const type = 'it.crash.kill';
      const published = await publishMany(
        publisher,
        3_000,
        (n) => ({ type, exchange: EXCHANGE, routingKey: 'crash.kill', bizKey: `crash-${n}:sent`, payload: { n } }),
        { perTransaction: 100, parallel: 2 },
      );

      const crash = await killDispatcherMidBatch(published.length);
      expect(crash.countsAtKill.DONE).toBeGreaterThan(0);
      expect(published.length - crash.countsAtKill.DONE).toBeGreaterThan(0);
      expect(crash.processingAtKill.length).toBeGreaterThan(0);
      expect(new Set(crash.processingAtKill.map((r) => r.claimed_by))).toEqual(new Set([crash.victim]));

      const rescuer = await ChildApp.start('it-crash-rescuer', { database, outbox: { ...RESCUER_OPTIONS, instanceId: 'it-crash-rescuer' } });
      await waitUntil(async () => (await database.statusCounts()).DONE === published.length, 'every row is DONE', BACKLOG_TIMEOUT_MS).catch((error) => {
        throw new Error(`${(error as Error).message}${rescuer.diagnostics()}`);
      });
      await noLateDuplicates(rescuer);

      // Every committed message arrived; anything that arrived twice kept its messageId.
      const arrived = probe.messageIds;
      expect(new Set(arrived)).toEqual(new Set(published));
      expect(arrived.length).toBeGreaterThanOrEqual(published.length);

      const rows = await rowsOfType(type);
      expect(await database.statusCounts()).toEqual({ DONE: published.length });
      expect(rows.filter((r) => r.claim_token !== null)).toEqual([]);

      // Only a message with a lost or failed attempt is ever sent again.
      const retried = new Set(rows.filter((r) => r.attempts > 0).map((r) => r.message_id));
      expect(duplicatesOf(arrived).filter((id) => !retried.has(id))).toEqual([]);

      // The dead process's claims were reclaimed as a failed attempt and sent by the rescuer.
      const byId = new Map(rows.map((r) => [r.message_id, r]));
      for (const claim of crash.processingAtKill) {
        expect(byId.get(claim.message_id)).toMatchObject({ status: 'DONE', claimed_by: 'it-crash-rescuer', attempts: claim.attempts + 1 });
      }
      expect(reclaimedAccordingToLog(rescuer)).toBe(crash.processingAtKill.length);
      expect(rescuer.stderr).toBe('');
    },
    timeoutFor(KILL_MID_BATCH_TIMEOUT_MS, STARTUP_TIMEOUT_MS, BACKLOG_TIMEOUT_MS, STOP_TIMEOUT_MS, WAIT_TIMEOUT_MS),
  );

  it(
    'reclaims the rows a dead claimant left PROCESSING, and delivers them',
    async () => {
      const type = 'it.crash.dead-claimant';
      // Written and claimed in one transaction, so no dispatcher ever saw them PENDING: exactly
      // what a claimant that died an hour ago leaves behind. Five have a single attempt allowed.
      const published = await publishMany(
        publisher,
        40,
        (n) => ({
          type,
          exchange: EXCHANGE,
          routingKey: 'crash.dead-claimant',
          bizKey: `dead-${n}:sent`,
          payload: { n },
          ...(n < 5 ? { maxAttempts: 1 } : {}),
        }),
        {
          perTransaction: 40,
          beforeCommit: async (manager, ids) => {
            await database.sqlOn(
              manager,
              `UPDATE {outbox_message} SET status = 'PROCESSING', claim_token = ?,
               claimed_at = ${database.timeAgo(HOUR)}, claimed_by = 'dead-instance'
             WHERE message_id IN (?)`,
              [randomUUID(), ids],
            );
          },
        },
      );
      const lastChance = new Set(published.slice(0, 5));
      const deliverable = published.slice(5);
      expect((await rowsOfType(type)).map((r) => r.status)).toEqual(Array(40).fill('PROCESSING'));

      const rescuer = await ChildApp.start('it-crash-restarted', { database, outbox: { ...RESCUER_OPTIONS, instanceId: 'it-crash-restarted' } });
      await probe.waitFor(deliverable.length);
      await waitUntil(async () => (await rowsOfType(type)).every((r) => r.status === 'DONE' || r.status === 'MANUAL_REQUIRED'), 'every row is settled');
      await noLateDuplicates(rescuer);

      expect(probe.messageIds.sort()).toEqual([...deliverable].sort());

      const rows = await rowsOfType(type);
      for (const row of rows) {
        if (lastChance.has(row.message_id)) {
          // The expired claim counted as their one allowed attempt: parked for an operator, with the reason.
          expect(row).toMatchObject({ status: 'MANUAL_REQUIRED', attempts: 1, claim_token: null, claimed_by: null });
          expect(row.last_error).toMatch(/claim by dead-instance expired after 6000 ms without a settle/);
        } else {
          expect(row).toMatchObject({ status: 'DONE', attempts: 1, claim_token: null, claimed_by: 'it-crash-restarted', last_error: null });
        }
      }
      expect(reclaimedAccordingToLog(rescuer)).toBe(published.length);
      expect(rescuer.stderr).toBe('');
    },
    timeoutFor(STARTUP_TIMEOUT_MS, 2 * WAIT_TIMEOUT_MS, STOP_TIMEOUT_MS, WAIT_TIMEOUT_MS),
  );

  /**
   * Returns once nothing more can arrive: the rescuer is stopped (it sends nothing after it
   * exited, and its last sends were confirmed or given up before it did), the victim is long dead
   * (killed before the rescuer started), so whatever they sent is already in the probe's queue,
   * ahead of the marker that `flush` waits for.
   */
  async function noLateDuplicates(rescuer: ChildApp): Promise<void> {
    expect(await rescuer.stop()).toEqual({ code: 0, signal: null });
    await probe.flush();
  }

  /**
   * Starts a dispatcher with small batches, SIGKILLs it while it holds claims, and waits until
   * the database server has ended its sessions (a statement it had sent may still commit until then).
   * The kill may land between two batches; then it tries again with a new process.
   */
  async function killDispatcherMidBatch(total: number, tries = KILL_TRIES) {
    for (let attempt = 1; ; attempt++) {
      const victim = `it-crash-victim-${attempt}`;
      const child = await ChildApp.start(victim, { database, outbox: { instanceId: victim, batchSize: 20 } });
      await waitUntil(async () => {
        const counts = await database.statusCounts();
        if ((counts.DONE ?? 0) === total) throw new Error(`${victim} sent everything before it could be killed`);
        return (counts.DONE ?? 0) >= 100 && (counts.PROCESSING ?? 0) > 0;
      }, `${victim} has sent some messages and holds claims`);
      expect(await child.kill('SIGKILL')).toEqual({ code: null, signal: 'SIGKILL' });
      await waitUntil(async () => (await sessionsOf(database, victim)) === 0, `the server ended the sessions of ${victim}`);

      const countsAtKill = await database.statusCounts();
      const processingAtKill = (await database.sql<Row>(`SELECT ${ROW_COLUMNS} FROM {outbox_message} WHERE status = 'PROCESSING'`)).map(asRow);
      if (processingAtKill.length > 0 || attempt === tries) return { victim, countsAtKill: { DONE: 0, ...countsAtKill }, processingAtKill };
    }
  }
});

/** Sums what the StuckDetector logged as reclaimed. */
function reclaimedAccordingToLog(child: ChildApp): number {
  return [...child.stdout.matchAll(/Reclaimed (\d+) outbox message\(s\) whose claim expired/g)].reduce((sum, m) => sum + Number(m[1]), 0);
}
