import { INestApplicationContext } from '@nestjs/common';
import { SpanKind, trace } from '@opentelemetry/api';
import { DataSource, EntityManager } from 'typeorm';
import { OutboxModuleOptionsInput, OutboxService } from '../lib';
import { DatabaseKind, TestDatabase, testDatabase } from '../test/support/database';
import { OpenTelemetrySdkOptions, registerOpenTelemetrySdk } from '../test/support/opentelemetry-sdk';
import { createTestApp } from '../test/support/test-app';
import { benchDatabases, databaseLabel } from './support/bench-databases';
import { closedLoopRate } from './support/closed-loop';
import { formatRate, summarise } from './support/stats';
import { writePathStatements } from './support/write-path-statements';

const NAMESPACE = 'bench_write_path';
const PAYLOAD = { blob: 'x'.repeat(1_000) };
const RUNS = Number(process.env.BENCH_RUNS ?? 3);
const WARMUP_MS = 300;
const CONCURRENCIES = [1, 8];
const BASELINE = 'hand-written outbox INSERT';
/** Numbers the business keys of every phase, which share the table. */
let written = 0;

export interface WritePathRow {
  database: string;
  /** What was registered: no OpenTelemetry SDK, or an SDK recording metrics, traces or both. */
  openTelemetry: string;
  runs: string;
  concurrency: number;
  variant: string;
  txPerSecond: string;
  ratio: string;
  /** CPU time of the bench's Node process (all its threads) per transaction, median of the runs. */
  nodeCpuPerTx: string;
}

/** How one phase's transactions run, and how its rows are labelled. */
interface Phase {
  openTelemetry: string;
  /** Runs every transaction, the baseline's too, inside an active span, as an HTTP request's span would hold it. */
  inSpan: boolean;
}

interface SdkPhase extends Phase {
  sdk: OpenTelemetrySdkOptions;
}

const WITHOUT_SDK: Phase = { openTelemetry: 'none', inSpan: false };

/**
 * The phase with an OpenTelemetry SDK registered: metrics and traces by default;
 * `BENCH_WRITE_OPENTELEMETRY=metrics` or `=traces` registers one of them, `=0` leaves the phase out.
 */
function sdkPhase(setting = process.env.BENCH_WRITE_OPENTELEMETRY): SdkPhase | undefined {
  switch (setting) {
    case '0':
      return undefined;
    case 'metrics':
      return { openTelemetry: 'SDK (metrics only)', inSpan: false, sdk: { traces: false } };
    case 'traces':
      return { openTelemetry: 'SDK (traces only), each transaction in a span', inSpan: true, sdk: { metrics: false } };
    default:
      return { openTelemetry: 'SDK (metrics + traces), each transaction in a span', inSpan: true, sdk: {} };
  }
}

/** What is measured on one database. */
interface WritePathPlan {
  runMs: number;
  /** Also measure the business insert alone, for scale (`BENCH_WRITE_BUSINESS_ALONE=1`: not in the time budget). */
  businessAlone: boolean;
  /** The publish() variants: name → options of the outbox module that runs it (the dispatcher is off in all). */
  publishers: Record<string, OutboxModuleOptionsInput>;
  /** The publisher with the default options, measured again with the OpenTelemetry SDK registered. */
  defaultPublisher: string;
}

/**
 * PostgreSQL: wake-up variants show what NOTIFY costs a writing transaction. MariaDB has no
 * NOTIFY, so one publish() variant. The business insert alone is measured only on request, to
 * keep the whole bench within its time budget.
 */
const PLANS: Partial<Record<DatabaseKind, WritePathPlan>> = {
  postgres: {
    runMs: Number(process.env.BENCH_RUN_MS ?? 2_000),
    businessAlone: process.env.BENCH_WRITE_BUSINESS_ALONE === '1',
    publishers: {
      'publish(), NOTIFY off': { notifyEnabled: false },
      'publish(), NOTIFY ≤ 1 per 250 ms (default)': {},
      'publish(), NOTIFY every transaction': { notifyMinIntervalMs: 0 },
    },
    defaultPublisher: 'publish(), NOTIFY ≤ 1 per 250 ms (default)',
  },
  mariadb: {
    runMs: Number(process.env.BENCH_MARIADB_RUN_MS ?? 2_000),
    businessAlone: false,
    publishers: { 'publish() (no NOTIFY on MariaDB)': {} },
    defaultPublisher: 'publish() (no NOTIFY on MariaDB)',
  },
};

/**
 * Transactions/s of "business insert + outbox message" through `OutboxService.publish()` against
 * the same transaction with the outbox row inserted by hand-written SQL, measured in the same run
 * on the same pool size, on each database in turn. Then, on the same database, the default
 * publisher again with an OpenTelemetry SDK registered (test/support/opentelemetry-sdk.ts) before
 * its app starts, each transaction in an active span so that publish() stores the trace context,
 * beside its own baseline run in a span too: only the library's share of the SDK's cost differs.
 * The phases are apart in time and in apps: the library takes its meter at start-up, and with
 * the SDK registered every app in the process would store trace contexts.
 */
export async function benchWritePath(): Promise<WritePathRow[]> {
  const rows: WritePathRow[] = [];
  for (const kind of benchDatabases()) {
    const plan = PLANS[kind];
    if (!plan) continue;
    const database = testDatabase(NAMESPACE, kind);
    await database.reset();
    const phases = [await measurePhase(database, plan, plan.publishers, WITHOUT_SDK)];
    const withSdk = sdkPhase();
    if (withSdk) phases.push(await measureWithSdk(database, plan, withSdk));
    // Each concurrency's rows together, so that the ratio with the SDK stands beside the one without.
    for (const concurrency of CONCURRENCIES) rows.push(...phases.flatMap((phase) => phase.filter((row) => row.concurrency === concurrency)));
  }
  return rows;
}

/** The default publisher with an SDK registered before its app starts, unregistered after it closed. */
async function measureWithSdk(database: TestDatabase, plan: WritePathPlan, phase: SdkPhase): Promise<WritePathRow[]> {
  const sdk = registerOpenTelemetrySdk(phase.sdk);
  let rows: WritePathRow[];
  try {
    rows = await measurePhase(database, plan, { [plan.defaultPublisher]: plan.publishers[plan.defaultPublisher] }, phase);
  } finally {
    await sdk.unregister();
  }
  // Counted after the last export (at shutdown): evidence that the SDK recorded.
  console.log(
    `write-path, ${databaseLabel(database.kind)}: the SDK exported ${sdk.exports.spans.toLocaleString('en-US')} spans and ${sdk.exports.metricExports} metric collections`,
  );
  if (phase.inSpan && sdk.exports.spans === 0) throw new Error('the OpenTelemetry SDK exported no span: the phase did not run traced');
  if (phase.sdk.metrics !== false && sdk.exports.metricExports === 0) throw new Error('the OpenTelemetry SDK exported no metrics');
  return rows;
}

/** One phase: its own apps (one per publisher) and baseline, every variant interleaved run by run. */
async function measurePhase(
  database: TestDatabase,
  plan: WritePathPlan,
  publishers: Record<string, OutboxModuleOptionsInput>,
  phase: Phase,
): Promise<WritePathRow[]> {
  const apps: Record<string, INestApplicationContext> = {};
  try {
    for (const [name, outbox] of Object.entries(publishers)) {
      apps[name] = await createTestApp({ database, outbox: { dispatcherEnabled: false, ...outbox } });
    }
    const statements = writePathStatements(database);
    const dataSource = Object.values(apps)[0].get(DataSource);
    await dataSource.query(statements.createBusinessTable);
    const business = (m: EntityManager) => m.query(...statements.businessInsert(JSON.stringify(PAYLOAD)));
    let lastPublished = '';

    const variants: Record<string, () => Promise<unknown>> = {};
    if (plan.businessAlone && !phase.inSpan) variants['business insert alone'] = () => dataSource.transaction(business);
    variants[BASELINE] = () =>
      dataSource.transaction(async (m) => {
        await business(m);
        await m.query(...statements.outboxInsert(`raw-${++written}`, JSON.stringify(PAYLOAD)));
      });
    for (const [name, app] of Object.entries(apps)) {
      const appDataSource = app.get(DataSource);
      const outbox = app.get(OutboxService);
      variants[name] = () =>
        appDataSource.transaction(async (m) => {
          await business(m);
          const published = await outbox.publish(
            { type: 'bench.written', exchange: 'bench', routingKey: 'x', bizKey: `lib-${++written}`, payload: PAYLOAD },
            { manager: m },
          );
          lastPublished = published.messageId;
        });
    }
    if (phase.inSpan) for (const [name, operation] of Object.entries(variants)) variants[name] = inRequestSpan(operation);

    const rows: WritePathRow[] = [];
    for (const concurrency of CONCURRENCIES) {
      const results: Record<string, number[]> = {};
      const cpuPerTx: Record<string, number[]> = {};
      // Interleave variants run by run so drift on a shared machine hits them alike.
      for (let run = 0; run < RUNS; run++) {
        for (const [name, operation] of Object.entries(variants)) {
          await closedLoopRate(concurrency, WARMUP_MS, operation);
          const cpu = process.cpuUsage();
          const started = performance.now();
          const rate = await closedLoopRate(concurrency, plan.runMs, operation);
          const used = process.cpuUsage(cpu);
          (results[name] ??= []).push(rate);
          (cpuPerTx[name] ??= []).push((used.user + used.system) / (rate * ((performance.now() - started) / 1000)));
        }
      }
      const baseline = summarise(results[BASELINE]).median;
      for (const [name, values] of Object.entries(results)) {
        const summary = summarise(values);
        rows.push({
          database: databaseLabel(database.kind),
          openTelemetry: phase.openTelemetry,
          runs: `${RUNS} × ${plan.runMs / 1000} s`,
          concurrency,
          variant: name,
          txPerSecond: formatRate(summary),
          ratio: (summary.median / baseline).toFixed(2),
          nodeCpuPerTx: `${Math.round(summarise(cpuPerTx[name]).median)} µs`,
        });
      }
    }
    if (phase.inSpan && !(await storesTraceContext(dataSource, database, lastPublished))) {
      throw new Error('publish() in an active span stored no traceparent header: the phase did not measure trace propagation');
    }
    return rows;
  } finally {
    for (const app of Object.values(apps)) await app.close();
  }
}

/** `operation` inside an active server span, as an HTTP request's span from its instrumentation would hold it. */
function inRequestSpan(operation: () => Promise<unknown>): () => Promise<unknown> {
  const tracer = trace.getTracer('bench-write-path');
  return () =>
    tracer.startActiveSpan('POST /orders', { kind: SpanKind.SERVER }, async (span) => {
      try {
        return await operation();
      } finally {
        span.end();
      }
    });
}

/** Whether the message stored under `messageId` carries a W3C trace context in its headers. */
async function storesTraceContext(dataSource: DataSource, database: TestDatabase, messageId: string): Promise<boolean> {
  const sql =
    database.kind === 'postgres'
      ? `SELECT headers FROM "${database.name}".outbox_message WHERE message_id = $1`
      : `SELECT headers FROM \`${database.name}\`.outbox_message WHERE message_id = ?`;
  const rows: { headers: unknown }[] = await dataSource.query(sql, [messageId]);
  const headers = rows[0]?.headers;
  return typeof (typeof headers === 'string' ? JSON.parse(headers) : headers)?.traceparent === 'string';
}
