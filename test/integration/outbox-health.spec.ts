import { INestApplicationContext } from '@nestjs/common';
import { HealthIndicatorService } from '@nestjs/terminus';
import { getDataSourceToken } from '@nestjs/typeorm';
import { randomUUID } from 'node:crypto';
import { DataSource, DataSourceOptions, QueryRunner } from 'typeorm';
import { OUTBOX_TRANSPORT, OUTBOX_TRANSPORTS } from '../../lib/entries/transports';
import { OutboxHealthIndicator } from '../../lib/health';
import { CapturingOutboxTransport } from '../../lib/testing';
import { DATABASE_KIND, describeOn, testDatabase } from '../support/database';
import { POSTGRES_URL } from '../support/environment';
import { MysqlTestDatabase } from '../support/databases/mysql-test-database';
import { TcpProxy } from '../support/tcp-proxy';
import { createTestApp, OrderPayments } from '../support/test-app';
import { STARTUP_TIMEOUT_MS, timeoutFor, waitUntil } from '../support/wait';

const database = testDatabase('it_outbox_health');

const NOTHING = { lagMs: 0, due: 0, inFlight: 0, manualRequired: 0 };

describeOn(['postgres', 'mariadb'], 'OutboxHealthIndicator', () => {
  let app: INestApplicationContext;
  let proxy: TcpProxy;
  let health: OutboxHealthIndicator;
  let transport: CapturingOutboxTransport;
  let messageIds: string[];

  /** The test database's server, reached through a proxy the test can cut. */
  async function proxiedDataSource(): Promise<Partial<DataSourceOptions>> {
    if (DATABASE_KIND === 'postgres') {
      const url = new URL(POSTGRES_URL);
      proxy = await TcpProxy.start(url.hostname, Number(url.port || 5432));
      return { url: proxy.rewrite(POSTGRES_URL) };
    }
    const { host, port } = (database as MysqlTestDatabase).server;
    proxy = await TcpProxy.start(host, port);
    return { host: '127.0.0.1', port: proxy.port };
  }

  beforeAll(async () => {
    await database.reset();
    app = await createTestApp({
      database,
      dataSource: await proxiedDataSource(),
      outbox: { dispatcherEnabled: false },
      statics: { transport: CapturingOutboxTransport },
      providers: [HealthIndicatorService, OutboxHealthIndicator],
      logger: false,
    });
    health = app.get(OutboxHealthIndicator);
    transport = app.get(OUTBOX_TRANSPORT);
    const payments = app.get(OrderPayments);
    messageIds = [];
    for (let i = 0; i < 3; i++) messageIds.push((await payments.pay('health.exchange')).messageId);
  }, timeoutFor(STARTUP_TIMEOUT_MS));

  afterAll(async () => {
    proxy?.restore();
    await app?.close();
    await proxy?.close();
  });

  const setOutboxRow = (messageId: string, status: string, nextAttemptAgoMs: number) =>
    database.sql(`UPDATE {outbox_message} SET status = ?, next_attempt_at = ${database.timeAgo(nextAttemptAgoMs)} WHERE message_id = ?`, [status, messageId]);

  it('is up, with the figures of both tables, when nothing passes a threshold', async () => {
    const result = await health.isHealthy('outbox', { maxLagMs: 60_000, maxManualRequired: 0, maxInboxLagMs: 60_000 });
    expect(result).toEqual({
      outbox: {
        status: 'up',
        database: 'reachable',
        transport: 'available',
        outbox: { lagMs: expect.any(Number), due: 3, inFlight: 0, manualRequired: 0 },
        inbox: NOTHING,
      },
    });
  });

  it('reports under the key it is given', async () => {
    expect(Object.keys(await health.isHealthy('messaging'))).toEqual(['messaging']);
  });

  it('is down when the outbox lag passes maxLagMs', async () => {
    await setOutboxRow(messageIds[0], 'PENDING', 120_000);
    const down = await health.isHealthy('outbox', { maxLagMs: 60_000 });
    expect(down.outbox).toMatchObject({ status: 'down', problems: [expect.stringMatching(/^outbox lag \d+ ms is over maxLagMs 60000$/)] });
    expect(down.outbox.outbox.lagMs).toBeGreaterThanOrEqual(120_000 - 1);
    expect((await health.isHealthy('outbox', { maxLagMs: 600_000 })).outbox.status).toBe('up');
    await setOutboxRow(messageIds[0], 'PENDING', 0);
  });

  it('is down when the MANUAL_REQUIRED rows pass maxManualRequired', async () => {
    await setOutboxRow(messageIds[1], 'MANUAL_REQUIRED', 0);
    const down = await health.isHealthy('outbox', { maxManualRequired: 0 });
    expect(down.outbox).toMatchObject({ status: 'down', outbox: { manualRequired: 1 }, problems: ['1 MANUAL_REQUIRED rows are over maxManualRequired 0'] });
    expect((await health.isHealthy('outbox', { maxManualRequired: 1 })).outbox.status).toBe('up');
    await setOutboxRow(messageIds[1], 'PENDING', 0);
  });

  it('is down when the inbox lag passes maxInboxLagMs', async () => {
    await database.sql(
      `INSERT INTO {inbox_message} (consumer, message_id, exchange, routing_key, payload, headers, status, max_attempts, next_attempt_at)
       VALUES ('billing', ?, 'x', 'k', '{}', '{}', 'FAILED', 3, ${database.timeAgo(90_000)})`,
      [randomUUID()],
    );
    const down = await health.isHealthy('outbox', { maxLagMs: 60_000, maxInboxLagMs: 60_000 });
    expect(down.outbox).toMatchObject({
      status: 'down',
      inbox: { due: 1 },
      problems: [expect.stringMatching(/^inbox lag \d+ ms is over maxInboxLagMs 60000$/)],
    });
    await database.sql(`DELETE FROM {inbox_message}`);
  });

  it('is down while the transport is unavailable, and up again when it returns', async () => {
    transport.setAvailable(false);
    try {
      const down = await health.isHealthy();
      expect(down.outbox).toMatchObject({ status: 'down', database: 'reachable', transport: 'unavailable', problems: ['the transport is unavailable'] });
    } finally {
      transport.setAvailable(true);
    }
    expect((await health.isHealthy()).outbox).toMatchObject({ status: 'up', transport: 'available' });
  });

  it(
    'names each transport when there are several, and counts only those it is told to',
    async () => {
      const other = await createTestApp({
        database,
        outbox: { dispatcherEnabled: false },
        statics: { transports: { default: CapturingOutboxTransport, partner: CapturingOutboxTransport } },
        providers: [HealthIndicatorService, OutboxHealthIndicator],
        logger: false,
      });
      try {
        const partner = other.get(OUTBOX_TRANSPORTS).get('partner') as CapturingOutboxTransport;
        partner.setAvailable(false);
        const check = other.get(OutboxHealthIndicator);
        expect((await check.isHealthy()).outbox).toMatchObject({
          status: 'down',
          transport: 'unavailable',
          transports: { default: 'available', partner: 'unavailable' },
          problems: ['the transport "partner" is unavailable'],
        });
        // A partner's outage, which its lane waits out, need not fail the service's readiness.
        expect((await check.isHealthy('outbox', { transports: ['default'] })).outbox).toMatchObject({
          status: 'up',
          transport: 'available',
          transports: { default: 'available', partner: 'unavailable' },
        });
      } finally {
        await other.close();
      }
    },
    timeoutFor(STARTUP_TIMEOUT_MS),
  );

  it('is down, within its timeout, when the database does not answer', async () => {
    const dataSource = app.get<DataSource>(getDataSourceToken());
    const runner = dataSource.createQueryRunner();
    await lockOutboxTable(runner);
    try {
      const started = Date.now();
      const down = await health.isHealthy('outbox', { timeoutMs: 300 });
      expect(Date.now() - started).toBeLessThan(2_000);
      expect(down.outbox).toEqual({ status: 'down', database: 'unreachable', error: 'the database did not answer within 300 ms', transport: 'available' });
    } finally {
      await unlockOutboxTable(runner);
    }
  });

  it('is down when the database is unreachable, and up once it is back', async () => {
    proxy.cut();
    try {
      const started = Date.now();
      const down = await health.isHealthy('outbox', { timeoutMs: 2_000 });
      expect(Date.now() - started).toBeLessThan(4_000);
      expect(down.outbox).toMatchObject({ status: 'down', database: 'unreachable', error: expect.any(String), transport: 'available' });
    } finally {
      proxy.restore();
    }
    await waitUntil(async () => (await health.isHealthy()).outbox.status === 'up', 'the health check to be up once the database is back', 30_000);
  });
});

/** Holds a lock under which no statement can read the outbox table, on `runner`'s connection. */
async function lockOutboxTable(runner: QueryRunner): Promise<void> {
  if (DATABASE_KIND === 'postgres') {
    await runner.startTransaction();
    await database.sqlOn(runner.manager, 'LOCK TABLE {outbox_message} IN ACCESS EXCLUSIVE MODE');
  } else {
    await database.sqlOn(runner.manager, 'LOCK TABLES {outbox_message} WRITE');
  }
}

async function unlockOutboxTable(runner: QueryRunner): Promise<void> {
  try {
    if (DATABASE_KIND === 'postgres') await runner.rollbackTransaction();
    else await runner.query('UNLOCK TABLES');
  } finally {
    await runner.release();
  }
}
