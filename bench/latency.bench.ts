import { randomUUID } from 'node:crypto';
import { INestApplicationContext } from '@nestjs/common';
import { Channel, ChannelModel, ConfirmChannel, connect } from 'amqplib';
import { Pool } from 'pg';
import { DataSource } from 'typeorm';
import { OutboxModuleOptionsInput, OutboxService } from '../lib';
import { freshSchema } from '../test/support/database';
import { AMQP_URL, POSTGRES_URL } from '../test/support/environment';
import { createTestApp } from '../test/support/test-app';
import { BENCH_BODY, BENCH_BODY_TEXT, BenchQueue } from './support/broker';
import { summarise, Summary } from './support/stats';

const SCHEMA = 'bench_latency';
const EXCHANGE = 'bench_latency';
const QUEUE = 'bench_latency';
const RAW_TABLE = `"${SCHEMA}".raw_outbox`;
/** The rates the figures are asked for; e.g. `BENCH_LATENCY_RATES=200,1000,2000` adds a point between. */
const RATES = (process.env.BENCH_LATENCY_RATES ?? '200,2000').split(',').map(Number);
/** Each (rate, variant) is offered load for RUNS × RUN_MS, about 10 s by default. */
const RUN_MS = Number(process.env.BENCH_LATENCY_RUN_MS ?? 2_500);
const RUNS = Number(process.env.BENCH_RUNS ?? 3);
const WARMUP_MS = 1_000;
const DELIVERY_TIMEOUT_MS = 30_000;
/** Optional tuned library row, as JSON options, e.g. '{"dispatchConcurrency":1}'. */
const TUNED: OutboxModuleOptionsInput | undefined = process.env.BENCH_LATENCY_TUNED ? JSON.parse(process.env.BENCH_LATENCY_TUNED) : undefined;
const RAW_NAME = 'raw: INSERT tx, then amqplib publish + confirm';

export interface LatencyRow {
  offered: string;
  variant: string;
  achieved: string;
  p50: string;
  p99: string;
  max: string;
  ratio: string;
}

interface RunResult {
  committedPerSecond: number;
  p50: number;
  p99: number;
  max: number;
}

/** Commit and consumption times of one message, by message id. */
type Timings = Map<string, { committedAt?: number; consumedAt?: number }>;

/** One publishing transaction; resolves once COMMIT has. */
type Publish = (messageId: string) => Promise<void>;

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
  const consumer = await startConsumer(timings);
  const apps: INestApplicationContext[] = [];
  const raw = await startRawPipeline();
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

    const rows: LatencyRow[] = [];
    for (const rate of RATES) {
      const results: Record<string, RunResult[]> = {};
      for (const publish of Object.values(variants)) await offer(rate, WARMUP_MS, publish, timings);
      // Interleaved run by run, so drift on a shared machine hits every variant alike.
      for (let run = 0; run < RUNS; run++) {
        for (const [name, publish] of Object.entries(variants)) (results[name] ??= []).push(await offer(rate, RUN_MS, publish, timings));
      }
      await queue.purge();
      const baseline = { p50: summarise(results[RAW_NAME].map((r) => r.p50)).median, p99: summarise(results[RAW_NAME].map((r) => r.p99)).median };
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

/**
 * Offers `rate` publishing transactions per second for `durationMs` (open loop), waits until
 * every message was consumed, and returns the latency percentiles of that run in ms.
 */
async function offer(rate: number, durationMs: number, publish: Publish, timings: Timings): Promise<RunResult> {
  timings.clear();
  const inFlight = new Set<Promise<void>>();
  let failure: unknown;
  let started = 0;
  const begin = performance.now();
  await new Promise<void>((resolve) => {
    const timer = setInterval(() => {
      const elapsed = performance.now() - begin;
      const due = Math.min(Math.floor((elapsed / 1000) * rate), Math.floor((durationMs / 1000) * rate));
      while (started < due) {
        started++;
        const messageId = randomUUID();
        timings.set(messageId, {});
        const transaction = publish(messageId).then(
          () => {
            timings.get(messageId)!.committedAt = performance.now();
          },
          (error) => (failure ??= error),
        );
        inFlight.add(transaction);
        void transaction.finally(() => inFlight.delete(transaction));
      }
      if (elapsed >= durationMs) {
        clearInterval(timer);
        resolve();
      }
    }, 1);
  });
  await Promise.all(inFlight);
  const committedPerSecond = started / ((performance.now() - begin) / 1000);
  if (failure) throw failure;
  const deadline = performance.now() + DELIVERY_TIMEOUT_MS;
  while ([...timings.values()].some((t) => t.consumedAt === undefined)) {
    if (performance.now() > deadline) throw new Error(`messages not consumed within ${DELIVERY_TIMEOUT_MS} ms`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  // A message consumed before its COMMIT's promise settled counts as 0 ms.
  const latencies = [...timings.values()].map((t) => Math.max(0, t.consumedAt! - t.committedAt!)).sort((a, b) => a - b);
  const at = (q: number) => latencies[Math.min(latencies.length - 1, Math.ceil(q * latencies.length) - 1)];
  return { committedPerSecond, p50: at(0.5), p99: at(0.99), max: latencies[latencies.length - 1] };
}

async function startConsumer(timings: Timings): Promise<{ close(): Promise<void> }> {
  const connection: ChannelModel = await connect(AMQP_URL);
  const channel: Channel = await connection.createChannel();
  await channel.consume(
    QUEUE,
    (message) => {
      if (!message) return;
      const timing = timings.get(message.properties.messageId as string);
      if (timing && timing.consumedAt === undefined) timing.consumedAt = performance.now();
    },
    { noAck: true },
  );
  return { close: () => connection.close().catch(() => undefined) };
}

/**
 * The hand-written pipeline: INSERT in a transaction of its own, publish on a confirm channel
 * right after COMMIT, and mark confirmed rows DONE in batches (as a dispatcher would settle).
 */
async function startRawPipeline() {
  const pool = new Pool({ connectionString: POSTGRES_URL, max: 10, application_name: 'bench-latency-raw' });
  const connection = await connect(AMQP_URL);
  const channel: ConfirmChannel = await connection.createConfirmChannel();
  const body = Buffer.from(BENCH_BODY_TEXT);
  let confirmed: string[] = [];
  const settler = setInterval(() => {
    if (confirmed.length === 0) return;
    const ids = confirmed;
    confirmed = [];
    void pool.query(`UPDATE ${RAW_TABLE} SET status = 'DONE', processed_at = now() WHERE id = ANY($1::bigint[])`, [ids]).catch(() => undefined);
  }, 10);
  return {
    async createTable() {
      await pool.query(`CREATE TABLE ${RAW_TABLE} (LIKE "${SCHEMA}".outbox_message INCLUDING ALL)`);
    },
    async publish(messageId: string): Promise<void> {
      const client = await pool.connect();
      let id: string;
      try {
        await client.query('BEGIN');
        const { rows } = await client.query(
          `INSERT INTO ${RAW_TABLE} (message_id, message_type, biz_key, exchange, routing_key, payload, headers, status, max_attempts)
           VALUES ($1, 'bench.latency', NULL, $2, 'bench.latency', $3, '{}', 'PENDING', 10) RETURNING id`,
          [messageId, EXCHANGE, BENCH_BODY_TEXT],
        );
        id = rows[0].id;
        await client.query('COMMIT');
      } finally {
        client.release();
      }
      // Not awaited: the caller stamps COMMIT now; the confirm arrives later.
      channel.publish(
        EXCHANGE,
        'bench.latency',
        body,
        { messageId, type: 'bench.latency', contentType: 'application/json', persistent: true, mandatory: true, headers: {} },
        (error) => {
          if (!error) confirmed.push(id);
        },
      );
    },
    async close() {
      clearInterval(settler);
      await connection.close().catch(() => undefined);
      await pool.end();
    },
  };
}

function describeOptions(options: OutboxModuleOptionsInput): string {
  return Object.entries(options)
    .map(([key, value]) => `${key} ${String(value)}`)
    .join(', ');
}

const formatMs = (s: Summary) => `${s.median.toFixed(1)} (${s.min.toFixed(1)}–${s.max.toFixed(1)})`;
