import { Client } from 'pg';
import type { OutboxModuleOptionsInput } from '../lib';
import { ChildApp } from '../test/support/child-app';
import { freshSchema } from '../test/support/database';
import { POSTGRES_URL } from '../test/support/environment';
import { BENCH_BODY, BenchQueue, publishConfirmWindow } from './support/broker';
import { formatRate, summarise } from './support/stats';

const SCHEMA = 'bench_dispatch';
const TABLE = `"${SCHEMA}".outbox_message`;
const EXCHANGE = 'bench_dispatch';
const QUEUE = 'bench_dispatch';
const MESSAGES = Number(process.env.BENCH_DISPATCH_MESSAGES ?? 50_000);
const RUNS = Number(process.env.BENCH_RUNS ?? 3);
const WINDOW = 1_000;
/**
 * batchSize/dispatchConcurrency of the tuned row: the best of 200/4 (default), 500/4, 1000/4,
 * 500/8, 1000/2 and 100/8 tried on the 2-core machine (500/8 was within noise of it).
 */
const TUNED = (process.env.BENCH_DISPATCH_TUNED ?? '1000/4').split('/').map(Number) as [number, number];
/** Wake-up channel of the library's defaults: the seeding transaction signals it on commit. */
const NOTIFY_CHANNEL = 'nestjs_outbox';
const DRAIN_TIMEOUT_MS = 120_000;

export interface DispatchRow {
  variant: string;
  messagesPerSecond: string;
  ratio: string;
}

interface Variant {
  name: string;
  instances: number;
  outbox: OutboxModuleOptionsInput;
}

/**
 * Drains a backlog of PENDING outbox rows to RabbitMQ (durable queue, persistent messages,
 * publisher confirms, `mandatory`) with one and with two dispatcher processes, timed from the
 * commit of the backlog until every row is DONE, against plain amqplib publishing as many
 * messages through a confirm channel with at most 1,000 unconfirmed.
 *
 * Dispatchers run as child processes (`test/fixtures/dispatcher-process.ts`): golevelup's
 * connection registry is process-wide. Each variant's processes are started once and drain
 * `RUNS` backlogs; a baseline run precedes each variant's block so drift hits them alike, and
 * ratios are against the median of those baseline runs. The default backlog is 50,000: three
 * runs of three variants of 100,000 (`BENCH_DISPATCH_MESSAGES`) take over 2.5 minutes on 2 cores.
 */
export async function benchDispatch(): Promise<DispatchRow[]> {
  const [tunedBatch, tunedConcurrency] = TUNED;
  const variants: Variant[] = [
    { name: '1 instance, defaults (batchSize 200, dispatchConcurrency 4)', instances: 1, outbox: {} },
    {
      name: `1 instance, batchSize ${tunedBatch}, dispatchConcurrency ${tunedConcurrency}`,
      instances: 1,
      outbox: { batchSize: tunedBatch, dispatchConcurrency: tunedConcurrency },
    },
    { name: '2 instances, defaults', instances: 2, outbox: {} },
  ];
  const baselineName = `plain amqplib, confirm window ${WINDOW.toLocaleString('en-US')}`;
  const results: Record<string, number[]> = { [baselineName]: [] };

  await freshSchema(SCHEMA);
  const queue = await BenchQueue.declare(EXCHANGE, QUEUE);
  const db = new Client({ connectionString: POSTGRES_URL, application_name: 'bench-dispatch' });
  await db.connect();
  let children: ChildApp[] = [];
  try {
    for (const variant of variants) {
      await queue.purge();
      results[baselineName].push(await publishConfirmWindow(EXCHANGE, MESSAGES, WINDOW));
      // One at a time: the first creates the table (synchronize), the next find it.
      children = [];
      for (let i = 0; i < variant.instances; i++) {
        children.push(await ChildApp.start(`bench-dispatch-${i + 1}`, { database: { kind: 'postgres', name: SCHEMA }, outbox: variant.outbox }));
      }
      for (let run = 0; run < RUNS; run++) {
        (results[variant.name] ??= []).push(await drainOnce(db, queue, children));
      }
      await Promise.all(children.map((child) => child.stop()));
      children = [];
    }
  } finally {
    await Promise.all(children.map((child) => child.kill('SIGKILL')));
    await db.query(`TRUNCATE ${TABLE}`).catch(() => undefined);
    await db.end();
    await queue.close();
  }

  const baseline = summarise(results[baselineName]).median;
  const label = `${MESSAGES.toLocaleString('en-US')} backlog`;
  return Object.entries(results).map(([name, values]) => {
    const summary = summarise(values);
    return { variant: `${name} (${label})`, messagesPerSecond: formatRate(summary), ratio: (summary.median / baseline).toFixed(2) };
  });
}

/**
 * Seeds `MESSAGES` PENDING rows in one transaction that signals the dispatchers on commit, and
 * returns messages/s from that commit until no row is PENDING, FAILED or PROCESSING.
 */
async function drainOnce(db: Client, queue: BenchQueue, children: ChildApp[]): Promise<number> {
  await db.query(`TRUNCATE ${TABLE}`);
  await queue.purge();
  await db.query('BEGIN');
  // The columns the library's insert writes, with what publish() would put there.
  await db.query(
    `INSERT INTO ${TABLE} (message_id, message_type, biz_key, ordering_key, exchange, routing_key, payload, headers, status, max_attempts)
     SELECT gen_random_uuid(), 'bench.dispatched', 'bench-' || g, NULL, $1, 'bench.dispatched',
            json_build_object('n', g, 'blob', $2::text), '{}', 'PENDING', 10
     FROM generate_series(1, $3::int) AS g`,
    [EXCHANGE, BENCH_BODY.blob, MESSAGES],
  );
  // Inside the transaction, so the planner knows the backlog from the first claim on.
  await db.query(`ANALYZE ${TABLE}`);
  await db.query(`SELECT pg_notify($1, '')`, [NOTIFY_CHANNEL]);
  const started = performance.now();
  await db.query('COMMIT');
  const deadline = started + DRAIN_TIMEOUT_MS;
  for (;;) {
    // Both probes are served by the library's partial indexes.
    const { rows } = await db.query(
      `SELECT EXISTS (SELECT 1 FROM ${TABLE} WHERE status IN ('PENDING', 'FAILED'))
           OR EXISTS (SELECT 1 FROM ${TABLE} WHERE status = 'PROCESSING') AS busy`,
    );
    if (!rows[0].busy) break;
    if (performance.now() > deadline) {
      throw new Error(`backlog not drained within ${DRAIN_TIMEOUT_MS} ms${children.map((c) => c.diagnostics()).join('')}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  const rate = MESSAGES / ((performance.now() - started) / 1000);

  const { rows } = await db.query(`SELECT count(*) FILTER (WHERE status = 'DONE')::int AS done, count(*)::int AS total FROM ${TABLE}`);
  if (rows[0].done !== MESSAGES) throw new Error(`expected ${MESSAGES} DONE rows, found ${rows[0].done} of ${rows[0].total}`);
  const queued = await queue.messageCount();
  if (queued < MESSAGES) throw new Error(`expected ${MESSAGES} messages on ${QUEUE}, found ${queued}`);
  return rate;
}
