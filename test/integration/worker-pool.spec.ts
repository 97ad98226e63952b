import { INestApplicationContext } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { OUTBOX_WORKER_DATA_SOURCE } from '../../lib/naming/injection-tokens';
import { describeOn, testDatabase } from '../support/database';
import { createTestApp } from '../support/test-app';
import { STARTUP_TIMEOUT_MS, timeoutFor } from '../support/wait';

const database = testDatabase('it_worker_pool', 'postgres');

async function setting(dataSource: DataSource, name: string): Promise<string> {
  const [row] = await dataSource.query(`SELECT current_setting($1) AS value`, [name]);
  return row.value;
}

describeOn(['postgres'], "The dispatcher's own pool (PostgreSQL)", () => {
  let app: INestApplicationContext | undefined;

  beforeAll(() => database.reset());
  afterEach(async () => {
    await app?.close();
    app = undefined;
  });

  it(
    "commits its bookkeeping without waiting for the WAL flush, keeping the application's driver options",
    async () => {
      app = await createTestApp({ database, driverOptions: { options: '-c statement_timeout=12345' } });
      const worker = app.get<DataSource>(OUTBOX_WORKER_DATA_SOURCE);
      const application = app.get(DataSource);
      expect(worker).not.toBe(application);
      expect(await setting(worker, 'synchronous_commit')).toBe('off');
      expect(await setting(worker, 'statement_timeout')).toBe('12345ms');
      // The application's own transactions keep the server's durable default.
      expect(await setting(application, 'synchronous_commit')).toBe('on');
    },
    timeoutFor(STARTUP_TIMEOUT_MS),
  );

  it(
    'waits for the flush like any session with workerSynchronousCommit',
    async () => {
      app = await createTestApp({ database, outbox: { workerSynchronousCommit: true } });
      expect(await setting(app.get<DataSource>(OUTBOX_WORKER_DATA_SOURCE), 'synchronous_commit')).toBe('on');
    },
    timeoutFor(STARTUP_TIMEOUT_MS),
  );

  it(
    'leaves a shared pool (workerPoolSize 0) as the application configured it',
    async () => {
      app = await createTestApp({ database, outbox: { workerPoolSize: 0 } });
      const worker = app.get<DataSource>(OUTBOX_WORKER_DATA_SOURCE);
      expect(worker).toBe(app.get(DataSource));
      expect(await setting(worker, 'synchronous_commit')).toBe('on');
    },
    timeoutFor(STARTUP_TIMEOUT_MS),
  );
});
