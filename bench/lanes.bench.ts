import { INestApplicationContext } from '@nestjs/common';
import { RabbitMqOutboxTransport } from '../lib/entries/transports';
import { testDatabase } from '../test/support/database';
import { runExclusively } from '../test/support/exclusive-run';
import { createTestApp } from '../test/support/test-app';
import { BenchQueue, publishConfirmWindow } from './support/broker';
import { HUNG_MESSAGES, ISOLATION_VARIANTS, IsolationVariant, measureLaneIsolation } from './support/lane-isolation';
import { RunResult } from './support/open-loop-latency';
import { PostgresBacklog } from './support/postgres-backlog';
import { rotate } from './support/rotate';
import { formatRate, summarise } from './support/stats';

const RUNS = Number(process.env.BENCH_RUNS ?? 3);

/** Two drains: the default single-transport app, and an app with two RabbitMQ lanes; each on a schema of its own. */
const ONE_LANE_SCHEMA = 'bench_lanes_one';
const TWO_LANES_SCHEMA = 'bench_lanes_two';
/** The second lane's transport name (the first is the default one). */
const SECOND_LANE = 'second';
const FIRST_EXCHANGE = 'bench_lanes_first';
const SECOND_EXCHANGE = 'bench_lanes_second';
const MESSAGES = Number(process.env.BENCH_LANES_MESSAGES ?? 100_000);
const WARMUP_MESSAGES = 5_000;
const WINDOW = 1_000;
/**
 * `BENCH_LANES_RAW_TWO_QUEUES=1` adds plain amqplib publishing the two halves at once over two
 * connections, each to its own queue: the broker's ceiling for two queues. Off by default: three
 * more runs do not fit the section's time budget on a loaded 2-core machine.
 */
const RAW_TWO_QUEUES = process.env.BENCH_LANES_RAW_TWO_QUEUES === '1';
const DRAIN_TIMEOUT_MS = 120_000;

/** Latency: the rate and run length of the latency section. */
const RATE = 200;
/** Each variant is offered load for RUNS × RUN_MS. */
const RUN_MS = Number(process.env.BENCH_LANES_RUN_MS ?? 2_500);
const WARMUP_MS = 1_000;

export interface LanesRow {
  measure: string;
  variant: string;
  result: string;
  ratio: string;
  detail: string;
}

/**
 * Lanes on PostgreSQL. Throughput: a PENDING backlog drained to RabbitMQ by one app with two
 * RabbitMQ lanes (half the backlog each, each lane to its own exchange and queue), by the default
 * single-transport app (all of it in its one lane), and by plain amqplib (the dispatch section's
 * baseline), in rotated order run by run, after a warm-up drain of each app. Isolation
 * (`lane-isolation.ts`): commit → consumed latency of messages for the default transport, in the
 * default single-transport app and beside a partner lane that is idle or hung, against the
 * latency section's hand-written pipeline.
 */
export async function benchLanes(): Promise<LanesRow[]> {
  const release = await runExclusively(testDatabase(ONE_LANE_SCHEMA, 'postgres'), 120_000);
  try {
    const drains = drainRows(await measureDrains());
    return [...drains, ...isolationRows(await measureLaneIsolation({ rate: RATE, runMs: RUN_MS, warmupMs: WARMUP_MS, runs: RUNS }))];
  } finally {
    await release();
  }
}

/** One drain of a backlog, or one raw publishing run. */
interface Drain {
  rate: number;
  /** Per transport, ms from the backlog's commit until its last row was DONE. */
  finishedMs?: Record<string, number>;
}

type DrainVariant = 'raw' | 'rawTwoQueues' | 'oneLane' | 'twoLanes';

async function measureDrains(): Promise<Record<DrainVariant, Drain[]>> {
  const first = await BenchQueue.declare(FIRST_EXCHANGE, FIRST_EXCHANGE);
  const second = await BenchQueue.declare(SECOND_EXCHANGE, SECOND_EXCHANGE);
  const apps: INestApplicationContext[] = [];
  const backlogs: PostgresBacklog[] = [];
  try {
    for (const schema of [ONE_LANE_SCHEMA, TWO_LANES_SCHEMA]) await testDatabase(schema, 'postgres').reset();
    apps.push(await createTestApp({ schema: ONE_LANE_SCHEMA }));
    apps.push(
      await createTestApp({ schema: TWO_LANES_SCHEMA, statics: { transports: { default: RabbitMqOutboxTransport, [SECOND_LANE]: RabbitMqOutboxTransport } } }),
    );
    const oneLane = await PostgresBacklog.open(ONE_LANE_SCHEMA, 'bench-lanes-one');
    const twoLanes = await PostgresBacklog.open(TWO_LANES_SCHEMA, 'bench-lanes-two');
    backlogs.push(oneLane, twoLanes);

    const halves = (n: number) => [Math.ceil(n / 2), Math.floor(n / 2)];
    const measure: Record<DrainVariant, (messages: number) => Promise<Drain>> = {
      raw: async (n) => {
        await first.purge();
        return { rate: await publishConfirmWindow(FIRST_EXCHANGE, n, WINDOW) };
      },
      rawTwoQueues: async (n) => {
        await Promise.all([first.purge(), second.purge()]);
        const [a, b] = halves(n);
        const [rateA, rateB] = await Promise.all([publishConfirmWindow(FIRST_EXCHANGE, a, WINDOW), publishConfirmWindow(SECOND_EXCHANGE, b, WINDOW)]);
        // Both start together: the pair is done when the slower one is.
        return { rate: n / Math.max(a / rateA, b / rateB) };
      },
      oneLane: (n) => drainOnce(oneLane, [{ transport: 'default', queue: first, count: n }]),
      twoLanes: (n) => {
        const [a, b] = halves(n);
        return drainOnce(twoLanes, [
          { transport: 'default', queue: first, count: a },
          { transport: SECOND_LANE, queue: second, count: b },
        ]);
      },
    };

    await measure.oneLane(WARMUP_MESSAGES);
    await measure.twoLanes(WARMUP_MESSAGES);
    const variants: DrainVariant[] = ['raw', 'oneLane', 'twoLanes', ...(RAW_TWO_QUEUES ? (['rawTwoQueues'] as const) : [])];
    const results: Record<DrainVariant, Drain[]> = { raw: [], rawTwoQueues: [], oneLane: [], twoLanes: [] };
    for (let run = 0; run < RUNS; run++) {
      for (const variant of rotate(variants, run)) results[variant].push(await measure[variant](MESSAGES));
    }
    await Promise.all(backlogs.map((backlog) => backlog.clear()));
    return results;
  } finally {
    for (const app of apps) await app.close();
    for (const backlog of backlogs) await backlog.close();
    await first.close();
    await second.close();
  }
}

function drainRows(results: Record<DrainVariant, Drain[]>): LanesRow[] {
  const median = (variant: DrainVariant) => summarise(results[variant].map((d) => d.rate)).median;
  const baseline = median('raw');
  const [a, b] = [Math.ceil(MESSAGES / 2), Math.floor(MESSAGES / 2)].map((n) => n.toLocaleString('en-US'));
  const finished = (variant: DrainVariant) => {
    const lanes = Object.keys(results[variant][0].finishedMs ?? {}).sort();
    return lanes.map((lane) => `${lane} done at ${(summarise(results[variant].map((d) => d.finishedMs![lane])).median / 1000).toFixed(1)} s`).join(', ');
  };
  const labels: Record<DrainVariant, [string, string]> = {
    raw: ['plain amqplib, one confirm channel (window 1,000), one queue', "the dispatch section's baseline"],
    rawTwoQueues: ['plain amqplib, two connections at once, each to its own queue', `${a} + ${b}`],
    oneLane: ['1 lane: the default single-transport app (batchSize 500, dispatchConcurrency 4, worker pool 6)', finished('oneLane')],
    twoLanes: [
      `2 RabbitMQ lanes, ${a} + ${b}, each to its own queue (each lane 500 × 4, worker pool 10)`,
      `${finished('twoLanes')}; ${(median('twoLanes') / median('oneLane')).toFixed(2)}× 1 lane`,
    ],
  };
  const shown = (['raw', 'rawTwoQueues', 'oneLane', 'twoLanes'] as const).filter((variant) => results[variant].length > 0);
  return shown.map((variant) => ({
    measure: `drain of ${MESSAGES.toLocaleString('en-US')}, msg/s`,
    variant: labels[variant][0],
    result: formatRate(summarise(results[variant].map((d) => d.rate))),
    ratio: (median(variant) / baseline).toFixed(2),
    detail: labels[variant][1],
  }));
}

/** One lane's share of a backlog and the queue its exchange routes to. */
interface LaneShare {
  transport: string;
  queue: BenchQueue;
  count: number;
}

/** Seeds every share in one transaction and returns messages/s from its COMMIT until every row is DONE. */
async function drainOnce(backlog: PostgresBacklog, shares: LaneShare[]): Promise<Drain> {
  await backlog.clear();
  for (const share of shares) await share.queue.purge();
  const total = shares.reduce((sum, share) => sum + share.count, 0);
  const started = await backlog.seedParts(shares.map(({ transport, queue, count }) => ({ transport, exchange: queue.exchange, count })));
  await backlog.untilSettled(DRAIN_TIMEOUT_MS);
  const elapsedMs = performance.now() - started;
  const outcome = await backlog.outcome();
  if (outcome.done !== total) throw new Error(`expected ${total} DONE rows, found ${outcome.done} of ${outcome.total}`);
  for (const share of shares) {
    const queued = await share.queue.messageCount();
    if (queued < share.count) throw new Error(`expected ${share.count} messages on ${share.queue.queue}, found ${queued}`);
  }
  return { rate: total / (elapsedMs / 1000), finishedMs: await backlog.finishedByTransport() };
}

function isolationRows(results: Record<IsolationVariant, RunResult[]>): LanesRow[] {
  const median = (variant: IsolationVariant, key: 'p50' | 'p99') => summarise(results[variant].map((r) => r[key])).median;
  const ms = (variant: IsolationVariant, key: 'p50' | 'p99') => {
    const s = summarise(results[variant].map((r) => r[key]));
    return `${s.median.toFixed(1)} (${s.min.toFixed(1)}–${s.max.toFixed(1)})`;
  };
  const signed = (value: number) => `${value >= 0 ? '+' : '−'}${Math.abs(value).toFixed(1)}`;
  const labels: Record<IsolationVariant, [string, string]> = {
    raw: ['raw: INSERT tx, then amqplib publish + confirm', "the latency section's baseline"],
    oneLane: ['1 lane: the default single-transport app', '–'],
    idle: [
      'default lane (RabbitMQ); partner lane (HTTP) idle',
      `vs 1 lane: p50 ${signed(median('idle', 'p50') - median('oneLane', 'p50'))} ms, p99 ${signed(median('idle', 'p99') - median('oneLane', 'p99'))} ms`,
    ],
    hung: [
      `default lane (RabbitMQ); partner lane with all ${HUNG_MESSAGES.toLocaleString('en-US')} sends (4 × 500) hung`,
      `vs partner idle: p50 ${signed(median('hung', 'p50') - median('idle', 'p50'))} ms, p99 ${signed(median('hung', 'p99') - median('idle', 'p99'))} ms`,
    ],
  };
  return ISOLATION_VARIANTS.map((variant) => ({
    measure: `commit → consumed at ${RATE} msg/s, ms`,
    variant: labels[variant][0],
    result: `p50 ${ms(variant, 'p50')}, p99 ${ms(variant, 'p99')}, max ${Math.max(...results[variant].map((r) => r.max)).toFixed(1)}`,
    ratio: `${(median(variant, 'p50') / median('raw', 'p50')).toFixed(2)} / ${(median(variant, 'p99') / median('raw', 'p99')).toFixed(2)}`,
    detail: labels[variant][1],
  }));
}
