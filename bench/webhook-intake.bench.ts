import { BadRequestException, Body, Controller, HttpCode, Inject, INestApplication, Post, RawBodyRequest, Req } from '@nestjs/common';
import type { IncomingHttpHeaders } from 'node:http';
import { performance } from 'node:perf_hooks';
import { DataSource } from 'typeorm';
import { WebhookInbox } from '../lib/entries/webhooks';
import { TestDatabase, testDatabase } from '../test/support/database';
import { runExclusively } from '../test/support/exclusive-run';
import { createTestHttpApp } from '../test/support/test-app';
import { benchDatabases, databaseLabel } from './support/bench-databases';
import { HttpLoad } from './support/http-load';
import { formatRate, summarise } from './support/stats';
import { mainThreadCpuMicros } from './support/thread-cpu';
import { WebhookIntakeStatements, webhookIntakeStatements } from './support/webhook-intake-statements';

const NAMESPACE = 'bench_webhook_intake';
/** Many short runs rather than a few long ones: on a shared machine, load from elsewhere comes in bursts of seconds. */
const RUNS = Number(process.env.BENCH_WEBHOOK_RUNS ?? process.env.BENCH_RUNS ?? 5);
const RUN_MS = Number(process.env.BENCH_WEBHOOK_RUN_MS ?? 1_500);
const WARMUP_MS = 300;
/** Once per application, each route: JIT, connections of the pool. */
const PRIME_MS = 1_500;
const CONCURRENCIES = (process.env.BENCH_WEBHOOK_CONCURRENCY ?? '16,64').split(',').map(Number);
/** Connections of the application's pool (the test databases' default, set here so the report can say it). */
const POOL_SIZE = 10;
/**
 * Adds a diagnostic route: the hand-written INSERT as one auto-commit statement, as the library
 * sends it, separating what the transaction's BEGIN/COMMIT cost the baseline from what the
 * library's path costs. Off by default to keep the run short.
 */
const DIAGNOSE = process.env.BENCH_WEBHOOK_DIAGNOSE === '1';

const TYPE = 'payment.succeeded';
const MAX_ATTEMPTS = 10;
/** What `@WebhookInbox()` keeps by default, and the hand-written route stores alike. */
const KEPT_HEADERS = ['content-type', 'webhook-id', 'webhook-timestamp', 'webhook-signature'];
const STATEMENTS = Symbol('WebhookIntakeStatements');

type Variant = 'library' | 'byHand' | 'byHandAutoCommit';

const ROUTES: Record<Variant, { path: string; consumer: string; label: string }> = {
  library: { path: 'library', consumer: 'bench-webhooks', label: '@WebhookInbox() (one auto-commit INSERT)' },
  byHand: { path: 'by-hand', consumer: 'bench-webhooks-by-hand', label: 'hand-written controller, INSERT … dedupe in dataSource.transaction()' },
  byHandAutoCommit: {
    path: 'by-hand-auto-commit',
    consumer: 'bench-webhooks-auto-commit',
    label: 'diagnostic: hand-written controller, one auto-commit INSERT',
  },
};

interface HandledRequest {
  method: string;
  path: string;
  headers: IncomingHttpHeaders;
}

/** Both routes in one controller of one application: same process, HTTP stack, pool and table. */
@Controller('hooks')
class BenchWebhooks {
  constructor(
    @Inject(DataSource) private readonly dataSource: DataSource,
    @Inject(STATEMENTS) private readonly statements: WebhookIntakeStatements,
  ) {}

  /** Stored and answered by the library; the method itself never runs here (the inbox worker is off). */
  @Post(ROUTES.library.path)
  @WebhookInbox({ consumer: ROUTES.library.consumer, type: TYPE, maxAttempts: MAX_ATTEMPTS })
  async onLibrary(@Body() _event: unknown): Promise<void> {}

  /** The baseline a team writes by hand: the same row, deduped, in a transaction; then 200. */
  @Post(ROUTES.byHand.path)
  @HttpCode(200)
  async onByHand(@Req() request: RawBodyRequest<HandledRequest>): Promise<{ received: true }> {
    const params = this.row(ROUTES.byHand.consumer, request);
    await this.dataSource.transaction((manager) => manager.query(this.statements.insertPending, params));
    return { received: true };
  }

  @Post(ROUTES.byHandAutoCommit.path)
  @HttpCode(200)
  async onByHandAutoCommit(@Req() request: RawBodyRequest<HandledRequest>): Promise<{ received: true }> {
    await this.dataSource.query(this.statements.insertPending, this.row(ROUTES.byHandAutoCommit.consumer, request));
    return { received: true };
  }

  private row(consumer: string, request: RawBodyRequest<HandledRequest>): unknown[] {
    const id = request.headers['webhook-id'];
    if (typeof id !== 'string' || id === '') throw new BadRequestException('the webhook-id header is missing');
    if (!request.rawBody) throw new BadRequestException('no raw body: create the application with rawBody: true');
    const headers: Record<string, string> = {};
    for (const name of KEPT_HEADERS) {
      const value = request.headers[name];
      if (typeof value === 'string') headers[name] = value;
    }
    return [consumer, id, TYPE, null, null, request.method, request.path, request.rawBody.toString('utf8'), JSON.stringify(headers), MAX_ATTEMPTS];
  }
}

export interface WebhookIntakeRow {
  database: string;
  runs: string;
  concurrency: number;
  variant: string;
  requestsPerSecond: string;
  ratio: string;
  /** Median of each run's ratio against the baseline run beside it. */
  pairedRatio: string;
  /** Median share of the run the server's event loop was busy. */
  serverLoopBusy: string;
  /** Median CPU time of the server's thread per answered request. */
  serverCpuPerRequest: string;
}

interface RunResult {
  rate: number;
  loopBusy: number;
  /** NaN where the thread's CPU time cannot be read. */
  cpuMicrosPerRequest: number;
}

/**
 * Requests/s of 1 KB JSON webhooks, each with a webhook-id of its own, answered 200 by a
 * `@WebhookInbox()` route against a hand-written route of the same application storing the same
 * inbox row in a transaction. Closed loop at each concurrency from a keep-alive client on a
 * thread of its own; runs alternate between the routes (order flipped each run), each on an
 * emptied inbox table after a warm-up. The inbox worker is off (`dispatcherEnabled: false`):
 * intake only.
 */
export async function benchWebhookIntake(): Promise<WebhookIntakeRow[]> {
  const load = HttpLoad.start();
  const rows: WebhookIntakeRow[] = [];
  try {
    for (const kind of benchDatabases()) rows.push(...(await measureDatabase(testDatabase(NAMESPACE, kind), load)));
  } finally {
    await load.close();
  }
  return rows;
}

async function measureDatabase(database: TestDatabase, load: HttpLoad): Promise<WebhookIntakeRow[]> {
  const release = await runExclusively(database, 120_000);
  let app: INestApplication | undefined;
  try {
    await database.reset();
    const statements = webhookIntakeStatements(database);
    const started = await createTestHttpApp({
      database,
      dataSource: { poolSize: POOL_SIZE },
      // pg reads its pool size from `extra`, where the test database already sets one.
      driverOptions: database.kind === 'postgres' ? { max: POOL_SIZE } : undefined,
      outbox: { dispatcherEnabled: false },
      controllers: [BenchWebhooks],
      providers: [{ provide: STATEMENTS, useValue: statements }],
    });
    app = started.app;
    const dataSource = app.get(DataSource);
    const variants: Variant[] = DIAGNOSE ? ['library', 'byHand', 'byHandAutoCommit'] : ['library', 'byHand'];
    let runId = 0;

    const measure = async (variant: Variant, concurrency: number, durationMs: number): Promise<RunResult> => {
      const { path, consumer } = ROUTES[variant];
      const url = `${started.url}/hooks/${path}`;
      await dataSource.query(statements.truncate);
      const warm = await load.run({ url, concurrency, durationMs: WARMUP_MS, idPrefix: `msg_${++runId}` });
      const before = performance.eventLoopUtilization();
      const cpuBefore = mainThreadCpuMicros();
      const result = await load.run({ url, concurrency, durationMs, idPrefix: `msg_${++runId}` });
      const cpu = (mainThreadCpuMicros() ?? NaN) - (cpuBefore ?? NaN);
      const busy = performance.eventLoopUtilization(before);
      const failures = warm.failures + result.failures;
      if (failures > 0)
        throw new Error(
          `${databaseLabel(database.kind)} ${variant} c${concurrency}: ${failures} request(s) not answered 200, first: ${warm.firstFailure ?? result.firstFailure}`,
        );
      // Every 200 stored its row, and only those.
      const [{ n }] = await dataSource.query(statements.countStored, [consumer]);
      if (Number(n) !== warm.completed + result.completed)
        throw new Error(`${variant} c${concurrency}: ${n} rows stored for ${warm.completed + result.completed} requests answered 200`);
      return { rate: result.requestsPerSecond, loopBusy: busy.utilization, cpuMicrosPerRequest: cpu / result.completed };
    };

    for (const variant of variants) await measure(variant, Math.max(...CONCURRENCIES), PRIME_MS);
    const rows: WebhookIntakeRow[] = [];
    for (const concurrency of CONCURRENCIES) {
      const results: Record<Variant, RunResult[]> = { library: [], byHand: [], byHandAutoCommit: [] };
      for (let run = 0; run < RUNS; run++) {
        // Order flipped every run, so drift on a shared machine hits the routes alike.
        for (const variant of run % 2 === 0 ? variants : [...variants].reverse()) results[variant].push(await measure(variant, concurrency, RUN_MS));
      }
      const baseline = summarise(results.byHand.map((r) => r.rate)).median;
      for (const variant of variants) {
        const rates = summarise(results[variant].map((r) => r.rate));
        rows.push({
          database: databaseLabel(database.kind),
          runs: `${RUNS} × ${RUN_MS / 1000} s`,
          concurrency,
          variant: ROUTES[variant].label,
          requestsPerSecond: formatRate(rates),
          ratio: (rates.median / baseline).toFixed(2),
          pairedRatio: summarise(results[variant].map((r, run) => r.rate / results.byHand[run].rate)).median.toFixed(2),
          serverLoopBusy: `${Math.round(summarise(results[variant].map((r) => r.loopBusy)).median * 100)} %`,
          serverCpuPerRequest: `${Math.round(summarise(results[variant].map((r) => r.cpuMicrosPerRequest)).median)} µs`,
        });
      }
    }
    return rows;
  } finally {
    await app?.close();
    await release();
  }
}
