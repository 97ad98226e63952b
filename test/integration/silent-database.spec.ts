import { Controller, INestApplication, Post } from '@nestjs/common';
import { HealthIndicatorService } from '@nestjs/terminus';
import { randomUUID } from 'node:crypto';
import { DataSource, DataSourceOptions } from 'typeorm';
import { DatabaseTimeoutError, OutboxService } from '../../lib';
import { WebhookInbox } from '../../lib/entries/webhooks';
import { OutboxHealthIndicator } from '../../lib/health';
import { CapturingOutboxTransport } from '../../lib/testing';
import { DATABASE_KIND, describeOn, testDatabase } from '../support/database';
import { MysqlTestDatabase } from '../support/databases/mysql-test-database';
import { POSTGRES_URL } from '../support/environment';
import { TcpProxy } from '../support/tcp-proxy';
import { createTestHttpApp } from '../support/test-app';
import { STARTUP_TIMEOUT_MS, timeoutFor, WAIT_TIMEOUT_MS, waitUntil } from '../support/wait';

const database = testDatabase('it_silent_database');
/** Far longer than the bound the app is given: an answer before it is an answer, not a hang. */
const HANG_MS = 20_000;

@Controller('hooks')
class Hooks {
  @Post('payments')
  @WebhookInbox({ consumer: 'payments' })
  async onPayment(): Promise<void> {}
}

describeOn(['postgres', 'mariadb'], 'A database that stops answering, its connections open', () => {
  let app: INestApplication;
  let url: string;
  let proxy: TcpProxy;

  /** The test database's server, reached through a proxy the test can black-hole. */
  async function proxiedDataSource(): Promise<Partial<DataSourceOptions>> {
    if (DATABASE_KIND === 'postgres') {
      const server = new URL(POSTGRES_URL);
      proxy = await TcpProxy.start(server.hostname, Number(server.port || 5432));
      return { url: proxy.rewrite(POSTGRES_URL) };
    }
    const { host, port } = (database as MysqlTestDatabase).server;
    proxy = await TcpProxy.start(host, port);
    return { host: '127.0.0.1', port: proxy.port };
  }

  beforeAll(async () => {
    await database.reset();
    ({ app, url } = await createTestHttpApp({
      database,
      dataSource: await proxiedDataSource(),
      outbox: { dispatcherEnabled: false, statementTimeoutMs: 1_000 },
      statics: { transport: CapturingOutboxTransport },
      controllers: [Hooks],
      providers: [HealthIndicatorService, OutboxHealthIndicator],
      logger: false,
    }));
  }, timeoutFor(STARTUP_TIMEOUT_MS));

  afterEach(() => proxy.restore());

  afterAll(async () => {
    proxy?.restore();
    await app?.close();
    await proxy?.close();
  });

  const pay = (id: string) =>
    fetch(`${url}/hooks/payments`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'webhook-id': id },
      body: JSON.stringify({ orderId: 1 }),
      signal: AbortSignal.timeout(HANG_MS),
    });
  const storedRows = async (id: string) => Number((await database.sql(`SELECT count(*) AS n FROM {inbox_message} WHERE message_id = ?`, [id]))[0].n);
  /** Fails, naming `what`, when `work` has not settled after HANG_MS. */
  const settledBeforeHang = <T>(work: Promise<T>, what: string): Promise<T> =>
    Promise.race([work, new Promise<never>((_, reject) => setTimeout(() => reject(new Error(`${what} hung`)), HANG_MS).unref())]);

  it(
    'answers a webhook 503 with Retry-After instead of hanging, and stores it once the sender retries after the database is back',
    async () => {
      const id = randomUUID();
      await waitUntil(async () => (await pay(randomUUID())).status === 200, 'the intake answers 200 while the database answers');
      proxy.blackHole();
      const refused = await pay(id);
      expect(refused.status).toBe(503);
      expect(refused.headers.get('retry-after')).toBe('5');

      proxy.restore();
      await waitUntil(async () => (await pay(id)).status === 200, 'the retried webhook is stored', WAIT_TIMEOUT_MS);
      expect(await storedRows(id)).toBe(1);
    },
    timeoutFor(HANG_MS, WAIT_TIMEOUT_MS, WAIT_TIMEOUT_MS),
  );

  it(
    'fails publish() with DatabaseTimeoutError instead of hanging, and closes the connection so the pool never hands it out',
    async () => {
      const outbox = app.get(OutboxService);
      const dataSource = app.get(DataSource);
      let published: unknown;
      let socketsBefore = 0;
      const transaction = dataSource.transaction(async (manager) => {
        await manager.query('SELECT 1');
        socketsBefore = proxy.openSockets;
        proxy.blackHole();
        const publishing = outbox.publish({ type: 'order.paid', exchange: 'orders', routingKey: 'order.paid', payload: { orderId: 2 } }, { manager });
        published = await settledBeforeHang(publishing, 'publish()').catch((error: unknown) => error);
        throw new Error('rolled back');
      });
      await expect(settledBeforeHang(transaction, 'the transaction')).rejects.toThrow('rolled back');
      expect(published).toBeInstanceOf(DatabaseTimeoutError);
      // Its connection is gone from the proxy, so from the pool too.
      await waitUntil(() => proxy.openSockets < socketsBefore, "the publishing transaction's connection is closed");
      proxy.restore();
      const publishAgain = () =>
        dataSource
          .transaction((manager) => outbox.publish({ type: 'order.paid', exchange: 'orders', routingKey: 'order.paid', payload: { orderId: 3 } }, { manager }))
          .then(
            () => true,
            () => false,
          );
      await waitUntil(publishAgain, 'publish() works again once the database answers', WAIT_TIMEOUT_MS);
    },
    timeoutFor(HANG_MS, HANG_MS, WAIT_TIMEOUT_MS, WAIT_TIMEOUT_MS),
  );

  it(
    'reports the health check down and closes the connection its statement was stuck on',
    async () => {
      const health = app.get(OutboxHealthIndicator);
      expect(await health.isHealthy('outbox', { timeoutMs: 1_000 })).toMatchObject({ outbox: { status: 'up' } });
      const before = proxy.openSockets;
      proxy.blackHole();
      expect(await settledBeforeHang(health.isHealthy('outbox', { timeoutMs: 1_000 }), 'the health check')).toMatchObject({
        outbox: { status: 'down', database: 'unreachable' },
      });
      await waitUntil(() => proxy.openSockets < before, "the health check's connection is closed");
    },
    timeoutFor(HANG_MS, WAIT_TIMEOUT_MS),
  );
});
