import { Inject, Injectable, Logger, OnApplicationShutdown } from '@nestjs/common';
import type { LaneSpec } from '../options/transport-lanes';
import { DataSource } from 'typeorm';
import { DatabaseDialect } from './database-dialect';
import { OutboxError } from '../errors';
import { OUTBOX_DATA_SOURCE, OUTBOX_WORKER_DATA_SOURCE } from '../naming/injection-tokens';
import { OutboxModuleOptions } from '../options/outbox-module-options';

/**
 * The DataSource for the library's own statements. Under load the application's transactions can
 * hold every connection of its pool, and a claim or a settle waiting for one adds that wait to
 * every message's latency; a few connections of its own keep the dispatcher's pace independent of
 * the application's. Only where it runs (dispatcherEnabled), and not on SQLite.
 *
 * Unless `workerSynchronousCommit`, its commits do not wait for the log flush (PostgreSQL): they
 * are bookkeeping whose loss in a database crash only sends or processes messages again, and the
 * claim's flush would otherwise sit between every commit and its send.
 */
export async function openWorkerDataSource(
  dataSource: DataSource,
  dialect: DatabaseDialect,
  options: OutboxModuleOptions,
  lanes: readonly Pick<LaneSpec, 'dispatchConcurrency'>[] = [{}],
): Promise<DataSource> {
  // One connection per loop of every lane, so no lane's claims queue behind another's, plus two
  // for the inbox worker, LISTEN and maintenance.
  const size = options.workerPoolSize ?? lanes.reduce((sum, lane) => sum + (lane.dispatchConcurrency ?? options.dispatchConcurrency), 0) + 2;
  if (!options.dispatcherEnabled || size === 0 || !dialect.opensWorkerPool) return dataSource;
  // The pool-size keys of `extra` would override `poolSize` (pg's `max`, mysql2's `connectionLimit`).
  const { max: _max, connectionLimit: _limit, ...poolExtra } = (dataSource.options.extra ?? {}) as Record<string, unknown>;
  const extra = !options.workerSynchronousCommit && dialect.withUnflushedCommits ? dialect.withUnflushedCommits(poolExtra) : poolExtra;
  const worker = new DataSource({
    ...dataSource.options,
    entities: [],
    subscribers: [],
    migrations: [],
    synchronize: false,
    migrationsRun: false,
    dropSchema: false,
    poolSize: size,
    extra,
  } as typeof dataSource.options);
  try {
    await worker.initialize();
  } catch (error) {
    if (extra === poolExtra) throw error;
    throw new OutboxError(
      `Could not open the dispatcher's pool with commits that skip the WAL flush (${(error as Error).message}); ` +
        'if a connection pooler refuses startup options, set workerSynchronousCommit: true',
      { cause: error },
    );
  }
  dialect.guardConnections?.(worker);
  new Logger('OutboxModule').debug(`Dispatcher pool: ${size} connection(s)`);
  return worker;
}

/** Closes the worker pool after the dispatcher and the inbox worker stopped (they stop before application shutdown). */
@Injectable()
export class WorkerDataSourceCloser implements OnApplicationShutdown {
  constructor(
    @Inject(OUTBOX_DATA_SOURCE) private readonly dataSource: DataSource,
    @Inject(OUTBOX_WORKER_DATA_SOURCE) private readonly worker: DataSource,
  ) {}

  async onApplicationShutdown(): Promise<void> {
    if (this.worker !== this.dataSource && this.worker.isInitialized) await this.worker.destroy();
  }
}
