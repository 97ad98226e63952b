import { INestApplicationContext } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { OutboxModuleOptionsInput, OutboxService } from '../lib';
import { freshSchema, namespaced } from '../test/support/database';
import { createTestApp } from '../test/support/test-app';
import { BENCH_BODY, BenchQueue } from './support/broker';
import { offer, Publish, RunResult, startConsumer, Timings } from './support/open-loop-latency';
import { startRawPipeline } from './support/raw-latency-pipeline';
import { summarise, Summary } from './support/stats';

/** Prefixed as the test app prefixes it (`TEST_NAMESPACE_PREFIX`), so the raw SQL and the app meet. */
const SCHEMA = namespaced('bench_latency');
const EXCHANGE = 'bench_latency';
const QUEUE = 'bench_latency';
/** The rates the figures are asked for; e.g. `BENCH_LATENCY_RATES=200,1000,2000` adds a point between. */
const RATES = (process.env.BENCH_LATENCY_RATES ?? '200,2000').split(',').map(Number);
/** Each (rate, variant) is offered load for RUNS × RUN_MS, about 10 s by default. */
const RUN_MS = Number(process.env.BENCH_LATENCY_RUN_MS ?? 2_500);
const RUNS = Number(process.env.BENCH_RUNS ?? 3);
const WARMUP_MS = 1_000;
/** Optional tuned library row, as JSON options, e.g. '{"dispatchConcurrency":1}'. */
const TUNED: OutboxModuleOptionsInput | undefined = process.env.BENCH_LATENCY_TUNED ? JSON.parse(process.env.BENCH_LATENCY_TUNED) : undefined;
const RAW_NAME = 'raw: INSERT tx, then amqplib publish + confirm';
const TYPEORM_NAME = 'raw through TypeORM: the same INSERT in dataSource.transaction(), then amqplib publish + confirm';

export interface LatencyRow {
  offered: string;
  variant: string;
  achieved: string;
  p50: string;
  p99: string;
  max: string;
  ratio: string;
  /** Median CPU time of the bench process (publisher, dispatcher and consumer alike) per message. */
  nodeCpuPerMessage: string;
}

/**
 * Commit → consumed latency under an open-loop offered rate: a timer starts one publishing
 * transaction per 1/rate s whatever the previous ones are doing, and a plain amqplib consumer
 * on a bound durable queue stamps each message when it arrives. Measured from just after the
 * transaction's COMMIT resolved until the consumer received the message (consumption stands
 * in for the broker confirm, which the dispatcher awaits before settling). The raw pipeline
 * is the same transaction with a hand-written INSERT, then an amqplib publish on a confirm
 * channel right after COMMIT (and a batched DONE update after the confirm).
 */
export async function benchLatency(): Promise<LatencyRow[]> {
  await freshSchema(SCHEMA);
  const queue = await BenchQueue.declare(EXCHANGE, QUEUE);
  const timings: Timings = new Map();
  const consumer = await startConsumer(QUEUE, timings);
  const apps: INestApplicationContext[] = [];
  const raw = await startRawPipeline(SCHEMA, EXCHANGE);
  try {
    const variants: Record<string, Publish> = {};
    const libraryVariants: [string, OutboxModuleOptionsInput, string | undefined][] = [
      ['OutboxService.publish(), defaults', {}, undefined],
      ...(TUNED ? ([[`OutboxService.publish(), ${describeOptions(TUNED)}`, TUNED, 'outbox_tuned']] as [string, OutboxModuleOptionsInput, string][]) : []),
    ];
    for (const [name, outbox, tableName] of libraryVariants) {
      // Each app dispatches its own table, so an idle app never takes another's rows.
      const app = await createTestApp({ schema: SCHEMA, outbox, statics: tableName ? { tableName } : undefined });
      apps.push(app);
      const dataSource = app.get(DataSource);
      const service = app.get(OutboxService);
      variants[name] = (messageId) =>
        dataSource.transaction(async (manager) => {
          await service.publish({ messageId, type: 'bench.latency', exchange: EXCHANGE, routingKey: 'bench.latency', payload: BENCH_BODY }, { manager });
        });
    }
    await raw.createTable();
    variants[RAW_NAME] = raw.publish;
    // The first app's DataSource: the same pool settings an application has.
    variants[TYPEORM_NAME] = raw.publishThrough(apps[0].get(DataSource));

    const rows: LatencyRow[] = [];
    // BENCH_LATENCY_LIBRARY_ONLY=1: the library's rows alone, e.g. for a CPU profile of its path (no ratios).
    if (process.env.BENCH_LATENCY_LIBRARY_ONLY === '1') for (const name of [RAW_NAME, TYPEORM_NAME]) delete variants[name];
    for (const rate of RATES) {
      const results: Record<string, RunResult[]> = {};
      for (const publish of Object.values(variants)) await offer(rate, WARMUP_MS, publish, timings);
      // Interleaved run by run, so drift on a shared machine hits every variant alike.
      for (let run = 0; run < RUNS; run++) {
        for (const [name, publish] of Object.entries(variants)) (results[name] ??= []).push(await offer(rate, RUN_MS, publish, timings));
      }
      await queue.purge();
      const baselineOf = (key: 'p50' | 'p99') => (results[RAW_NAME] ? summarise(results[RAW_NAME].map((r) => r[key])).median : NaN);
      const baseline = { p50: baselineOf('p50'), p99: baselineOf('p99') };
      for (const [name, runs] of Object.entries(results)) {
        const p50 = summarise(runs.map((r) => r.p50));
        const p99 = summarise(runs.map((r) => r.p99));
        const achieved = summarise(runs.map((r) => r.committedPerSecond));
        rows.push({
          offered: `${rate.toLocaleString('en-US')} msg/s`,
          variant: name,
          achieved: `${Math.round(achieved.median).toLocaleString('en-US')} (${Math.round(achieved.min)}–${Math.round(achieved.max)})`,
          p50: formatMs(p50),
          p99: formatMs(p99),
          max: Math.max(...runs.map((r) => r.max)).toFixed(1),
          ratio: `${(p50.median / baseline.p50).toFixed(2)} / ${(p99.median / baseline.p99).toFixed(2)}`,
          nodeCpuPerMessage: `${Math.round(summarise(runs.map((r) => r.cpuPerMessage)).median)} µs`,
        });
      }
    }
    return rows;
  } finally {
    for (const app of apps) await app.close();
    await raw.close();
    await consumer.close();
    await queue.close();
  }
}

function describeOptions(options: OutboxModuleOptionsInput): string {
  return Object.entries(options)
    .map(([key, value]) => `${key} ${String(value)}`)
    .join(', ');
}

const formatMs = (s: Summary) => `${s.median.toFixed(1)} (${s.min.toFixed(1)}–${s.max.toFixed(1)})`;
