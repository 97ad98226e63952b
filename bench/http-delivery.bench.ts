import { INestApplicationContext } from '@nestjs/common';
import { Pool } from 'pg';
import { Worker } from 'node:worker_threads';
import { HttpOutboxTransport } from '../lib/entries/transports';
import { testDatabase } from '../test/support/database';
import { POSTGRES_URL } from '../test/support/environment';
import { runExclusively } from '../test/support/exclusive-run';
import { createTestApp } from '../test/support/test-app';
import { PostgresBacklog } from './support/postgres-backlog';
import { formatRate, summarise } from './support/stats';
import { mainThreadCpuMicros } from './support/thread-cpu';

/** The library's table lives in one schema, the hand-written relay's copy of it in another: neither drains the other's backlog. */
const LIBRARY_SCHEMA = 'bench_http_delivery';
const BY_HAND_SCHEMA = 'bench_http_delivery_by_hand';
/** The endpoint every message names (its `destination`). */
const ENDPOINT = 'sink';
const MESSAGES = Number(process.env.BENCH_HTTP_MESSAGES ?? 10_000);
const WARMUP_MESSAGES = 1_000;
const RUNS = Number(process.env.BENCH_RUNS ?? 3);
/** The library's defaults, which the hand-written relay copies: 4 loops, each with a batch of 500 in flight. */
const BATCH_SIZE = 500;
const CONCURRENCY = 4;
/** The library's worker pool by default: dispatchConcurrency + 2 connections, commits without waiting for the WAL flush. */
const POOL_SIZE = CONCURRENCY + 2;
const TIMEOUT_MS = 5_000;
const DRAIN_TIMEOUT_MS = 120_000;

export interface HttpDeliveryRow {
  variant: string;
  backlog: string;
  messagesPerSecond: string;
  ratio: string;
  /** Median of each run's ratio against the hand-written run beside it. */
  pairedRatio: string;
  /** Keep-alive connections to the receiver at the end of a drain, and how many it accepted during it (fetch's pool has no per-origin limit). */
  receiverConnections: string;
  /** CPU time of the main thread (dispatcher or relay; the receiver's thread excluded) per message. */
  cpuPerMessage: string;
}

type Variant = 'library' | 'byHand';

interface Drain {
  rate: number;
  openConnections: number;
  acceptedConnections: number;
  cpuMicrosPerMessage: number;
}

const LABELS: Record<Variant, string> = {
  library: 'HttpOutboxTransport, 1 instance, defaults (batchSize 500, dispatchConcurrency 4)',
  byHand: 'hand-written relay: claim 500 SKIP LOCKED × 4 loops, keep-alive fetch, one UPDATE to DONE',
};

/**
 * A PENDING backlog on PostgreSQL POSTed to a local receiver answering 200, drained by the
 * library's dispatcher with `HttpOutboxTransport` against the relay a team would write by hand:
 * claim a batch with `FOR UPDATE SKIP LOCKED`, POST each message with Node's keep-alive `fetch`,
 * mark the batch DONE; with the same batch size, loops, pool and commit settings. Timed from the
 * backlog's COMMIT until every row is DONE. The receiver runs on a worker thread, so that it does
 * not compete with the dispatcher for the main thread's event loop (it still shares the machine's
 * two cores with the dispatcher and PostgreSQL). Runs alternate (order flipped each run) after a
 * warm-up drain of each.
 */
export async function benchHttpDelivery(): Promise<HttpDeliveryRow[]> {
  const library = testDatabase(LIBRARY_SCHEMA, 'postgres');
  const byHandDatabase = testDatabase(BY_HAND_SCHEMA, 'postgres');
  const release = await runExclusively(library, 120_000);
  const receiver = await Receiver.start();
  let app: INestApplicationContext | undefined;
  let pool: Pool | undefined;
  const backlogs: PostgresBacklog[] = [];
  try {
    await library.reset();
    await byHandDatabase.reset();
    const url = `${receiver.url}/hooks`;
    const transport = HttpOutboxTransport.for({ endpoints: { [ENDPOINT]: { url, timeoutMs: TIMEOUT_MS } } });
    // The hand-written relay's table, created as the library creates it (same columns and partial indexes).
    await (await createTestApp({ schema: BY_HAND_SCHEMA, statics: { transport }, outbox: { dispatcherEnabled: false } })).close();
    app = await createTestApp({ schema: LIBRARY_SCHEMA, statics: { transport }, outbox: {} });
    pool = new Pool({ connectionString: POSTGRES_URL, max: POOL_SIZE, options: '-c synchronous_commit=off', application_name: 'bench-http-by-hand' });
    const libraryBacklog = await PostgresBacklog.open(LIBRARY_SCHEMA, 'bench-http-library');
    const byHandBacklog = await PostgresBacklog.open(BY_HAND_SCHEMA, 'bench-http-by-hand-seed');
    backlogs.push(libraryBacklog, byHandBacklog);
    const relay = handWrittenRelay(pool, `"${BY_HAND_SCHEMA}".outbox_message`, url);

    const measure = (variant: Variant, messages: number): Promise<Drain> =>
      variant === 'library'
        ? drainOnce(libraryBacklog, receiver, messages, () => waitUntilDrained(libraryBacklog))
        : drainOnce(byHandBacklog, receiver, messages, relay);

    await measure('library', WARMUP_MESSAGES);
    await measure('byHand', WARMUP_MESSAGES);
    const results: Record<Variant, Drain[]> = { library: [], byHand: [] };
    for (let run = 0; run < RUNS; run++) {
      const order: Variant[] = run % 2 === 0 ? ['byHand', 'library'] : ['library', 'byHand'];
      for (const variant of order) results[variant].push(await measure(variant, MESSAGES));
    }

    const baseline = summarise(results.byHand.map((d) => d.rate)).median;
    return (['byHand', 'library'] as const).map((variant) => {
      const rates = summarise(results[variant].map((d) => d.rate));
      return {
        variant: LABELS[variant],
        backlog: MESSAGES.toLocaleString('en-US'),
        messagesPerSecond: formatRate(rates),
        ratio: (rates.median / baseline).toFixed(2),
        pairedRatio: summarise(results[variant].map((d, run) => d.rate / results.byHand[run].rate)).median.toFixed(2),
        receiverConnections: `${median(results[variant].map((d) => d.openConnections))} open (${median(results[variant].map((d) => d.acceptedConnections))} opened)`,
        cpuPerMessage: `${Math.round(summarise(results[variant].map((d) => d.cpuMicrosPerMessage)).median)} µs`,
      };
    });
  } finally {
    await app?.close();
    await pool?.end();
    for (const backlog of backlogs) {
      await backlog.clear().catch(() => undefined);
      await backlog.close();
    }
    await receiver.close();
    await release();
  }
}

/**
 * Seeds the backlog (its COMMIT wakes the library's dispatcher by NOTIFY), runs `drain` until
 * every row is DONE, and checks that the receiver got each message once and nothing else.
 */
async function drainOnce(backlog: PostgresBacklog, receiver: Receiver, messages: number, drain: () => Promise<void>): Promise<Drain> {
  await backlog.clear();
  await receiver.take();
  const cpuBefore = mainThreadCpuMicros();
  const started = await backlog.seed(ENDPOINT, messages);
  await drain();
  const elapsedMs = performance.now() - started;
  const cpu = (mainThreadCpuMicros() ?? NaN) - (cpuBefore ?? NaN);
  const outcome = await backlog.outcome();
  if (outcome.done !== messages) throw new Error(`expected ${messages} DONE rows, found ${outcome.done} of ${outcome.total}`);
  const received = await receiver.take();
  if (received.requests !== messages || received.distinctIds !== messages) {
    throw new Error(`expected ${messages} requests with as many webhook-ids, the receiver counted ${received.requests} with ${received.distinctIds}`);
  }
  return {
    rate: messages / (elapsedMs / 1000),
    openConnections: received.openConnections,
    acceptedConnections: received.acceptedConnections,
    cpuMicrosPerMessage: cpu / messages,
  };
}

const median = (values: number[]) => Math.round(summarise(values).median);

async function waitUntilDrained(backlog: PostgresBacklog): Promise<void> {
  const deadline = performance.now() + DRAIN_TIMEOUT_MS;
  while (await backlog.busy()) {
    if (performance.now() > deadline) throw new Error(`backlog not drained within ${DRAIN_TIMEOUT_MS} ms`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/**
 * The relay by hand: each loop claims a batch in one statement, POSTs every message of it at
 * once (the headers the library sends, no signature), and marks the batch DONE in one UPDATE
 * (FAILED, with a retry in a second, for what did not get a 2xx); loops end when a claim comes
 * back empty. A loop whose claim came back full starts the next loop, up to 4, so that claims,
 * POSTs and settles overlap as the library's loops do (4 loops started at once move in step:
 * all claim, then all POST, then all settle).
 */
function handWrittenRelay(pool: Pool, table: string, url: string): () => Promise<void> {
  const post = async (row: { message_id: string; payload: string }): Promise<void> => {
    const response = await fetch(url, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        'webhook-id': row.message_id,
        'idempotency-key': row.message_id,
        'webhook-timestamp': String(Math.floor(Date.now() / 1000)),
      },
      body: row.payload,
      redirect: 'manual',
      signal: AbortSignal.timeout(TIMEOUT_MS),
    });
    await response.arrayBuffer();
    if (!response.ok) throw new Error(`HTTP ${response.status}`);
  };
  return async () => {
    const loops: Promise<void>[] = [];
    const spawn = () => {
      if (loops.length < CONCURRENCY) loops.push(loop(spawn));
    };
    spawn();
    // A loop started while others were awaited is awaited too.
    for (let awaited = 0; awaited < loops.length; awaited++) await loops[awaited];
  };

  async function loop(spawn: () => void): Promise<void> {
    for (;;) {
      const { rows } = await pool.query(
        `UPDATE ${table} SET status = 'PROCESSING', claimed_at = now()
         WHERE id IN (SELECT id FROM ${table} WHERE status IN ('PENDING', 'FAILED') AND next_attempt_at <= now()
                      ORDER BY id LIMIT $1 FOR UPDATE SKIP LOCKED)
         RETURNING id, message_id, payload::text AS payload`,
        [BATCH_SIZE],
      );
      if (rows.length === 0) return;
      if (rows.length === BATCH_SIZE) spawn();
      const results = await Promise.allSettled(rows.map(post));
      const done = rows.filter((_, i) => results[i].status === 'fulfilled').map((row) => row.id);
      const failed = rows.filter((_, i) => results[i].status === 'rejected').map((row) => row.id);
      await pool.query(`UPDATE ${table} SET status = 'DONE', processed_at = now() WHERE id = ANY($1::bigint[])`, [done]);
      if (failed.length > 0) {
        await pool.query(
          `UPDATE ${table} SET status = 'FAILED', attempts = attempts + 1, next_attempt_at = now() + interval '1 second' WHERE id = ANY($1::bigint[])`,
          [failed],
        );
      }
    }
  }
}

/** What the receiver counted since it was last asked. */
interface Received {
  requests: number;
  distinctIds: number;
  /** Connections accepted since last asked. */
  acceptedConnections: number;
  /** Connections open now. */
  openConnections: number;
}

/** The receiving thread: node:http, keep-alive, 200 to every POST once its body has arrived. */
const RECEIVER_SOURCE = `
const { parentPort } = require('node:worker_threads');
const { createServer } = require('node:http');
let requests = 0, accepted = 0, ids = new Set();
const server = createServer((request, response) => {
  request.on('data', () => undefined);
  request.on('end', () => {
    requests++;
    ids.add(request.headers['webhook-id']);
    response.writeHead(200, { 'content-type': 'text/plain', 'content-length': '2' });
    response.end('ok');
  });
});
server.keepAliveTimeout = 30000;
server.on('connection', () => accepted++);
server.listen(0, '127.0.0.1', () => parentPort.postMessage({ port: server.address().port }));
parentPort.on('message', (command) => {
  if (command === 'take') {
    server.getConnections((error, open) => {
      parentPort.postMessage({ requests, distinctIds: ids.size, acceptedConnections: accepted, openConnections: open });
      requests = 0; accepted = 0; ids = new Set();
    });
  } else if (command === 'close') {
    server.closeAllConnections();
    server.close(() => parentPort.postMessage({ closed: true }));
  }
});
`;

class Receiver {
  private constructor(
    private readonly worker: Worker,
    readonly url: string,
  ) {}

  static async start(): Promise<Receiver> {
    const worker = new Worker(RECEIVER_SOURCE, { eval: true });
    const { port } = await new Promise<{ port: number }>((resolve, reject) => {
      worker.once('message', resolve);
      worker.once('error', reject);
    });
    return new Receiver(worker, `http://127.0.0.1:${port}`);
  }

  /** The counts since the last call, then zeroed. */
  take(): Promise<Received> {
    return this.ask('take');
  }

  async close(): Promise<void> {
    await this.ask('close');
    await this.worker.terminate();
  }

  private ask<T>(command: string): Promise<T> {
    return new Promise((resolve) => {
      this.worker.once('message', resolve);
      this.worker.postMessage(command);
    });
  }
}
