import { INestApplicationContext } from '@nestjs/common';
import { Client } from 'pg';
import { OutboxMessage } from '../../lib';
import { brokerName } from '../support/broker-names';
import { describeOn, TestDatabase, testDatabase } from '../support/database';
import { prepareSessionIdentity } from '../support/database-sessions';
import { MysqlTestDatabase } from '../support/databases/mysql-test-database';
import { POSTGRES_URL } from '../support/environment';
import { publishMany } from '../support/publish-many';
import { assertExchange, QueueProbe } from '../support/queue-probe';
import { createTestApp } from '../support/test-app';
import { sleep, STARTUP_TIMEOUT_MS, timeoutFor, WAIT_TIMEOUT_MS, waitUntil } from '../support/wait';

const database = testDatabase('it_lost_settles');
const EXCHANGE = brokerName('it.lost-settles');
const SESSION = 'it-lost-settles';
const MESSAGES = 5_000;
/** Rounds of killed connections during the drain. */
const KILLS = 40;

/**
 * Runs `round` on one connection of its own until it returns false, killing every server session
 * of the application `name` (its pool's and the dispatcher's) before each call.
 */
async function killSessionsWhile(db: TestDatabase, name: string, round: () => Promise<boolean>): Promise<number> {
  let kills = 0;
  if (db instanceof MysqlTestDatabase) {
    await db.onServer(async (connection) => {
      do {
        const [sessions] = await connection.query(`SELECT ID AS id FROM information_schema.PROCESSLIST WHERE USER = ?`, [name]);
        // A session may end between the listing and the KILL.
        for (const { id } of sessions as { id: number }[]) await connection.query(`KILL ${Number(id)}`).catch(() => undefined);
        kills++;
      } while (await round());
    });
    return kills;
  }
  const client = new Client({ connectionString: POSTGRES_URL });
  await client.connect();
  try {
    do {
      await client.query(`SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = $1`, [name]);
      kills++;
    } while (await round());
  } finally {
    await client.end();
  }
  return kills;
}

const statusCounts = () => database.statusCounts();

// SQLite has no server sessions to kill.
describeOn(['postgres', 'mariadb', 'mysql'], 'Settles and claims lost with their connection', () => {
  let writer: INestApplicationContext;
  let app: INestApplicationContext | undefined;
  let probe: QueueProbe;

  beforeAll(async () => {
    await database.reset();
    await assertExchange(EXCHANGE);
    await prepareSessionIdentity(database, SESSION);
    probe = await QueueProbe.bind(EXCHANGE, '#', `${EXCHANGE}.probe`);
    // Writes the backlog before any dispatcher runs, so that all of it is worked under the kills.
    writer = await createTestApp({ database, outbox: { dispatcherEnabled: false } });
  }, timeoutFor(STARTUP_TIMEOUT_MS));

  afterAll(async () => {
    await app?.close();
    await writer?.close();
    await probe?.close();
  });

  it(
    'leaves no row PROCESSING after a burst of killed connections, without waiting for the stuck detector',
    async () => {
      const ids = await publishMany(writer, MESSAGES, (n): OutboxMessage => ({ type: 'test.lost', exchange: EXCHANGE, routingKey: 'lost', payload: { n } }), {
        perTransaction: 500,
      });

      app = await createTestApp({
        database,
        sessionName: SESSION,
        // Small batches, so that the backlog takes many claims and settles for the kills to hit.
        outbox: { batchSize: 10, dispatchConcurrency: 2, pollIntervalMs: 100, stuckReclaimAfterMs: 600_000, stuckWarnAfterMs: 600_000 },
      });
      // Kill the dispatcher's connections again and again while the backlog is claimed, sent and settled.
      let rounds = 0;
      const kills = await killSessionsWhile(database, SESSION, async () => {
        await sleep(10);
        return ++rounds < KILLS && ((await statusCounts()).DONE ?? 0) < MESSAGES * 0.9;
      });
      // Enough kills landed while the backlog was being worked for the test to mean something.
      expect(kills).toBeGreaterThanOrEqual(KILLS / 2);

      const finished = async () => ((await statusCounts()).DONE ?? 0) === MESSAGES;
      await waitUntil(finished, 'every message is DONE', WAIT_TIMEOUT_MS).catch(async (error: Error) => {
        throw new Error(`${error.message}; status counts: ${JSON.stringify(await statusCounts())}`);
      });
      await probe.flush();
      // At least once: a message whose settle was lost after its send may have been sent again.
      expect(new Set(probe.messageIds)).toEqual(new Set(ids));
    },
    timeoutFor(STARTUP_TIMEOUT_MS, WAIT_TIMEOUT_MS, WAIT_TIMEOUT_MS),
  );
});
