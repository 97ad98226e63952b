import { INestApplicationContext } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { OutboxService } from '../../lib';
import { OutboxDispatcher } from '../../lib/entries/admin';
import { HttpOutboxTransport, RabbitMqOutboxTransport } from '../../lib/entries/transports';
import { testDatabase } from '../../test/support/database';
import { createTestApp } from '../../test/support/test-app';
import { BlackHoleEndpoint } from './black-hole-endpoint';
import { BENCH_BODY, BenchQueue } from './broker';
import { offer, Publish, RunResult, startConsumer, Timings } from './open-loop-latency';
import { PostgresBacklog } from './postgres-backlog';
import { startRawPipeline } from './raw-latency-pipeline';
import { rotate } from './rotate';

/** The app with two lanes: the default RabbitMQ one, and a partner lane sending by HTTP to an endpoint that can hang. */
const SCHEMA = 'bench_lanes_latency';
/** The default single-transport app beside it, on a table of its own. */
const ONE_LANE_SCHEMA = 'bench_lanes_latency_one';
const EXCHANGE = 'bench_lanes_latency';
const PARTNER_LANE = 'partner';
const ENDPOINT = 'sink';
/** The partner lane's loops (the module's defaults, spelt out): a backlog of their product keeps every loop waiting. */
const PARTNER_BATCH_SIZE = 500;
const PARTNER_CONCURRENCY = 4;
export const HUNG_MESSAGES = PARTNER_BATCH_SIZE * PARTNER_CONCURRENCY;
/** Each HTTP attempt's timeout: longer than a hung run lasts, so that no attempt ends while it is measured. */
const HANG_TIMEOUT_MS = 30_000;
/** Longest wait for a hang to set in (every send held) or to clear (every row DONE). */
const HANG_CHANGE_TIMEOUT_MS = 30_000;

/**
 * Where the messages measured come from: the hand-written pipeline, the default single-transport
 * app, and the two-lane app with its partner lane idle or hung.
 */
export const ISOLATION_VARIANTS = ['raw', 'oneLane', 'idle', 'hung'] as const;
export type IsolationVariant = (typeof ISOLATION_VARIANTS)[number];

export interface IsolationPlan {
  rate: number;
  runMs: number;
  warmupMs: number;
  runs: number;
}

/**
 * Commit → consumed latency of messages for the default RabbitMQ transport under an open-loop
 * rate, per variant, run by run in rotated order after a warm-up of each. For a `hung` run the
 * endpoint is made to hold requests and the partner lane is given a backlog that fills every one
 * of its loops; the run starts once all of them are held, and ends with the endpoint answering
 * them, so the lane drains without any attempt timing out (a timeout would open the endpoint's
 * circuit, and the lane would stop claiming instead of hanging again).
 */
export async function measureLaneIsolation(plan: IsolationPlan): Promise<Record<IsolationVariant, RunResult[]>> {
  for (const schema of [SCHEMA, ONE_LANE_SCHEMA]) await testDatabase(schema, 'postgres').reset();
  const queue = await BenchQueue.declare(EXCHANGE, EXCHANGE);
  const timings: Timings = new Map();
  const consumer = await startConsumer(EXCHANGE, timings);
  const endpoint = await BlackHoleEndpoint.start();
  const raw = await startRawPipeline(SCHEMA, EXCHANGE);
  const apps: INestApplicationContext[] = [];
  let backlog: PostgresBacklog | undefined;
  try {
    const partner = HttpOutboxTransport.for({ endpoints: { [ENDPOINT]: { url: endpoint.url, timeoutMs: HANG_TIMEOUT_MS } } });
    const twoLanes = await createTestApp({
      schema: SCHEMA,
      statics: {
        transports: {
          default: RabbitMqOutboxTransport,
          [PARTNER_LANE]: { transport: partner, batchSize: PARTNER_BATCH_SIZE, dispatchConcurrency: PARTNER_CONCURRENCY },
        },
      },
      // The module refuses a transport whose own timeout is not below sendTimeoutMs.
      outbox: { sendTimeoutMs: HANG_TIMEOUT_MS + 5_000 },
    });
    apps.push(twoLanes);
    const oneLane = await createTestApp({ schema: ONE_LANE_SCHEMA });
    apps.push(oneLane);
    await raw.createTable();
    const partnerBacklog = (backlog = await PostgresBacklog.open(SCHEMA, 'bench-lanes-partner'));

    const { rate } = plan;
    const measure: Record<IsolationVariant, (durationMs: number) => Promise<RunResult>> = {
      raw: (ms) => offer(rate, ms, raw.publish, timings),
      oneLane: (ms) => offer(rate, ms, publisher(oneLane), timings),
      idle: (ms) => offer(rate, ms, publisher(twoLanes), timings),
      hung: async (ms) => {
        await hang(endpoint, partnerBacklog);
        try {
          const result = await offer(rate, ms, publisher(twoLanes), timings);
          if (endpoint.holding !== HUNG_MESSAGES)
            throw new Error(`the partner lane's hang ended during the run: ${endpoint.holding} of ${HUNG_MESSAGES} requests still held`);
          return result;
        } finally {
          endpoint.answer();
          await partnerBacklog.untilSettled(HANG_CHANGE_TIMEOUT_MS);
        }
      },
    };

    for (const variant of ISOLATION_VARIANTS) await measure[variant](plan.warmupMs);
    const results: Record<IsolationVariant, RunResult[]> = { raw: [], oneLane: [], idle: [], hung: [] };
    for (let run = 0; run < plan.runs; run++) {
      for (const variant of rotate(ISOLATION_VARIANTS, run)) results[variant].push(await measure[variant](plan.runMs));
    }
    const partnerStats = twoLanes.get(OutboxDispatcher).laneStats()[PARTNER_LANE];
    if (partnerStats.failed > 0 || partnerStats.released > 0 || endpoint.abandoned > 0) {
      throw new Error(
        `a held send ended unanswered (failed ${partnerStats.failed}, released ${partnerStats.released}, abandoned ${endpoint.abandoned}): the partner lane did not hang throughout its runs`,
      );
    }
    await queue.purge();
    return results;
  } finally {
    // Answered first, so that the partner lane's loops end and its app closes at once.
    endpoint.answer();
    for (const app of apps) await app.close();
    await backlog?.close();
    await raw.close();
    await consumer.close();
    await queue.close();
    await endpoint.close();
  }
}

/** One publishing transaction of `app`, with a message for its default transport. */
function publisher(app: INestApplicationContext): Publish {
  const dataSource = app.get(DataSource);
  const service = app.get(OutboxService);
  return (messageId) =>
    dataSource.transaction(async (manager) => {
      await service.publish({ messageId, type: 'bench.latency', exchange: EXCHANGE, routingKey: 'bench.latency', payload: BENCH_BODY }, { manager });
    });
}

/** Makes the endpoint hold requests, fills every loop of the partner lane with sends, and waits until it holds them all. */
async function hang(endpoint: BlackHoleEndpoint, backlog: PostgresBacklog): Promise<void> {
  endpoint.hang();
  // The last hang's rows (DONE) would clash with the new ones' business keys.
  await backlog.clear();
  await backlog.seed(ENDPOINT, HUNG_MESSAGES, PARTNER_LANE);
  const deadline = performance.now() + HANG_CHANGE_TIMEOUT_MS;
  while (endpoint.holding < HUNG_MESSAGES) {
    if (performance.now() > deadline) throw new Error(`the endpoint held ${endpoint.holding} of ${HUNG_MESSAGES} requests after ${HANG_CHANGE_TIMEOUT_MS} ms`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}
