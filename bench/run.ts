import { mkdirSync, writeFileSync } from 'node:fs';
import { cpus, totalmem } from 'node:os';
import { join } from 'node:path';
import { sql } from '../test/support/database';
import { benchBoardPage } from './board-page.bench';
import { benchClaimCost } from './claim-cost.bench';
import { benchDispatch } from './dispatch.bench';
import { benchDispatchCycle } from './dispatch-cycle.bench';
import { benchHttpDelivery } from './http-delivery.bench';
import { benchInbox } from './inbox.bench';
import { benchLanes } from './lanes.bench';
import { benchLatency } from './latency.bench';
import { benchPeer } from './peer.bench';
import { benchPriceList } from './price-list.bench';
import { benchRowRewrites } from './row-rewrites.bench';
import { benchWebhookIntake } from './webhook-intake.bench';
import { benchWritePath } from './write-path.bench';

/** One measured figure set, printed as a table beside its baseline. */
interface Section {
  key: string;
  title: string;
  note: string;
  run: () => Promise<object[]>;
  /** Left out of the full run: only `BENCH_ONLY` naming it runs it (a design measurement, not a goal's figure). */
  onRequest?: boolean;
}

const SECTIONS: Section[] = [
  {
    key: 'write-path',
    title: 'Write path: business insert + outbox message per transaction (PostgreSQL and MariaDB, 1 KB payload)',
    note: "Transactions/s, median of runs with min–max; ratio against the hand-written outbox INSERT (the dialect's own statement on MariaDB) on the same database in the same run. MariaDB has no NOTIFY. With an OpenTelemetry SDK: the default publisher again, in an app of its own, the SDK (metrics and traces) registered before start-up, both it and its baseline inside an active span; nodeCpuPerTx: the bench process's CPU per transaction.",
    run: benchWritePath,
  },
  {
    key: 'dispatch',
    title: 'Dispatch: a PENDING backlog drained to RabbitMQ, all confirmed',
    note: "Messages/s from the backlog commit until every row is DONE; ratio against plain amqplib publishing the same messages through a confirm channel (window 1,000), measured beside each database's drains. firstClaim: backlog commit → first claim (database clock); MariaDB has no NOTIFY, so dispatchers find a backlog by a look every wakeupProbeIntervalMs (50 ms; before it, at their next poll, pollIntervalMs 1,000). afterFirstClaim: messages/s from the first claim on. The hand-written relay (bench/support/hand-written-relay.ts) polls every 10 ms when idle. The OpenTelemetry row: the PostgreSQL defaults row again with an SDK (metrics and traces) registered in the dispatcher's process, every send a recorded span. cpuPerMessage: CPU time per message (from /proc, medians) of the sending processes (the dispatchers, or the bench process for plain amqplib) / the database server's processes from the backlog's commit on / the broker's; on a machine with cores for all three, the largest share bounds the rate, on two cores their sum does.",
    run: benchDispatch,
  },
  {
    key: 'dispatch-cycle',
    title: 'Dispatch cost per claim cycle, by batch size (PostgreSQL, 1 KB payload)',
    note: "A 6,000-row backlog drained by OutboxDispatcher.drain() in the bench process (4 loops, dispatcherEnabled false so nothing else claims), with the RabbitMQ transport and with the test kit's capturing transport (sends nowhere): the bench process's CPU per row, median of runs with min–max, the variants alternating run by run after a warm-up round; cpuPerClaim: per row × batch size. The difference between batch sizes is each claim → settle cycle's fixed cost, which the small batches of a steady stream pay on few rows (bench/results/steady-rate.md).",
    run: benchDispatchCycle,
  },
  {
    key: 'latency',
    title: 'Latency: commit → consumed, open-loop load',
    note: 'Milliseconds from the publishing COMMIT until a plain consumer receives the message; ratio against a hand-written INSERT + confirm-publish pipeline at the same rate.',
    run: benchLatency,
  },
  {
    key: 'lanes',
    title: 'Lanes: two transports dispatched side by side (PostgreSQL, RabbitMQ and HTTP, 1 KB payload)',
    note: "Drain: messages/s from the backlog commit until every row is DONE, in-process apps woken by NOTIFY; two RabbitMQ lanes with half the backlog each (each to its own exchange and queue) beside the default single-transport app with all of it, against the dispatch section's plain amqplib baseline, runs rotated (BENCH_LANES_RAW_TWO_QUEUES=1 adds plain amqplib publishing the two halves at once, each to its own queue). Isolation: commit → consumed latency of messages for the default RabbitMQ transport, open loop at 200 msg/s, in the default single-transport app and in an app with a second, HTTP lane: idle, or with every loop of it (4 × 500 sends) waiting on a local endpoint that accepts and never answers (answered between runs, so no attempt times out); ratio p50 / p99 against the latency section's hand-written pipeline at the same rate.",
    run: benchLanes,
  },
  {
    key: 'inbox',
    title: 'Inbox: messages/s through a transactional @InboxHandler (handler inserts one row)',
    note: 'A pre-published backlog consumed with the same prefetch and pool size; ratio against a hand-written consume → transaction(dedupe row, business row) → ack loop.',
    run: benchInbox,
  },
  {
    key: 'webhook-intake',
    title: 'Webhook intake: requests/s through a @WebhookInbox() route (1 KB JSON, PostgreSQL and MariaDB)',
    note: "Requests answered 200/s, each a 1 KB JSON webhook with a webhook-id of its own, from a keep-alive node:http client on a thread of its own (closed loop at each concurrency; warm-up before each run; the inbox table emptied between runs), median of runs with min–max. Ratio against a hand-written route of the same application (same process, HTTP stack, pool of 10 and table) storing the same inbox row with its dedupe in dataSource.transaction(); pairedRatio: median of each run's ratio against the baseline run beside it, less moved by load from elsewhere on a shared machine. Intake only: the inbox worker is off (dispatcherEnabled: false), and neither route verifies signatures. serverLoopBusy: share of the run the server's event loop was busy (on a shared machine this counts waits for a core too); serverCpuPerRequest: CPU time of the server's thread (from /proc) per answered request, the load generator's thread excluded.",
    run: benchWebhookIntake,
  },
  {
    key: 'http-delivery',
    title: 'HTTP delivery: a PENDING backlog POSTed by HttpOutboxTransport to a local receiver (PostgreSQL, 1 KB JSON)',
    note: "Messages/s from the backlog commit until every row is DONE, each POST answered 200 by a keep-alive node:http receiver on a worker thread of its own; median of runs with min–max, warm-up drain first, order flipped each run. Ratio against a hand-written relay on a copy of the table: claim 500 with FOR UPDATE SKIP LOCKED in 4 loops, POST each with Node's keep-alive fetch, one UPDATE to DONE, on a pool of 6 with synchronous_commit off (as the library's worker pool). receiverConnections: keep-alive connections open at the end of a drain (fetch's pool has no per-origin limit) and those accepted during it; cpuPerMessage: main-thread CPU (from /proc) per message, the receiver's thread excluded.",
    run: benchHttpDelivery,
  },
  {
    key: 'peer',
    title: 'Peer: pg-transactional-outbox 0.5.7 (polling relay)',
    note: 'Backlog drain and commit → consumed latency at 200 msg/s, configured as its README shows and tuned; ratio against a hand-written relay on the same table.',
    run: benchPeer,
  },
  {
    key: 'price-list',
    title: "Price list: a lean relay, the library's costs added one at a time, and the library (PostgreSQL and MariaDB, 1 KB payload)",
    note: "Each row drains a backlog of BENCH_PRICE_LIST_MESSAGES (20,000) rows committed in one transaction to one durable queue (persistent, publisher confirms), timed from the COMMIT until the last row is DONE, after an unrecorded warm-up drain of a tenth of it; median of BENCH_PRICE_LIST_RUNS (1) drains. The lean relay (bench/support/lean-relay.ts, in the bench process): a minimal table (id, message id, payload, status) with one index on claimable rows (partial on PostgreSQL, (status, id) on MariaDB), window / batch loops each claiming a batch with SKIP LOCKED, publishing it through the default exchange straight to the queue, awaiting the confirms and settling it with one UPDATE. Each '+' row adds one of the library's costs to the lean relay alone; the batch and window rows change only those. The library row: one dispatcher process at the defaults, on its own table (found by NOTIFY on PostgreSQL, by its look on MariaDB). ofLean: msg/s against the first row. cpuPerMessage: sender (the bench process, or the dispatcher process) / database server / broker, from /proc: on a shared machine the servers' figures include other clients' work. Compare rows within one run only.",
    run: benchPriceList,
  },
  {
    key: 'claim-cost',
    title: 'Claim cost as history grows (claim of 100 rows)',
    note: 'Median claim latency with and without 1,000,000 retained DONE rows.',
    run: benchClaimCost,
  },
  {
    key: 'board-page',
    title: 'Board: a page of a million-row outbox table over HTTP (PostgreSQL)',
    note: 'Milliseconds from request to the last byte of a board page (Express, rendering included), median of 30 sequential requests with min–max and p95, after 3 warm-ups; 1,000,000 rows (98% DONE, 1% MANUAL_REQUIRED, 1% FAILED, seven types, one written and sent each second, so 3,600 in the last hour) seeded with generate_series. Pages of 50 rows by keyset: the depth of a page costs nothing; a filter reads rows newest (or oldest) first until a page is full, so a rare match reads many and a filter matching nothing reads them all. The overview and a confirmation count rows, and scale with the table.',
    run: benchBoardPage,
  },
  {
    key: 'row-rewrites',
    title: 'Row rewrites: what a claim and its settle cost PostgreSQL a row, by table shape (1 KB payload)',
    note: "Serial claims of 500 and their settles on one connection until a backlog is DONE, median of runs with min–max; the backend's CPU from /proc, ratio of claim + settle against the library's table; WAL per row from pg_current_wal_lsn(); hotUpdates: the share of the last run's updates that wrote no index entry; heapMiB: the table's heap before → after the last run. The lease row is not the library's state machine: its claim leaves status PENDING and pushes next_attempt_at out, on a table without the index on claimed_at, to measure what a claim that PostgreSQL can make a HOT update would buy; the claims-table row is not either: its claim is a row of a table of its own, and its settle deletes that row and marks the message DONE. BENCH_REWRITES_IN_FLIGHT=<n> holds n claims before settling the oldest (1 by default). Run on request (BENCH_ONLY=row-rewrites); results in bench/results/page-room.md.",
    run: benchRowRewrites,
    onRequest: true,
  },
];

function table(rows: object[]): string {
  if (rows.length === 0) return '(no rows)';
  const headers = Object.keys(rows[0]);
  const line = (cells: string[]) => `| ${cells.join(' | ')} |`;
  return [line(headers), line(headers.map(() => '---')), ...rows.map((row) => line(headers.map((h) => String((row as Record<string, unknown>)[h]))))].join(
    '\n',
  );
}

/**
 * Flushes what earlier sections wrote (the dispatch backlogs, the claim-cost history) before the
 * next one measures, so that no section pays for another's checkpoint. Needs a superuser; without
 * one the sections simply run as they come.
 */
async function checkpoint(): Promise<void> {
  await sql('CHECKPOINT').catch(() => undefined);
}

async function main(): Promise<void> {
  // BENCH_ONLY=dispatch,latency runs a subset.
  const only = process.env.BENCH_ONLY?.split(',').map((s) => s.trim());
  const machine = `${cpus().length} × ${cpus()[0]?.model ?? 'CPU'}, ${Math.round(totalmem() / 2 ** 30)} GiB, Node ${process.version}`;
  const sections: string[] = [`# Benchmark results\n\nMachine: ${machine}. Date: ${new Date().toISOString()}. Command: \`npm run bench\`.`];
  for (const section of SECTIONS.filter((s) => (only ? only.includes(s.key) : !s.onRequest))) {
    await checkpoint();
    const started = Date.now();
    console.log(`${section.key}…`);
    const rows = await section.run();
    console.log(`${section.key}: ${Math.round((Date.now() - started) / 1000)} s`);
    sections.push(`## ${section.title}\n\n${section.note}\n\n${table(rows)}`);
  }
  const report = sections.join('\n\n') + '\n';
  console.log(`\n${report}`);
  if (!only) {
    mkdirSync(join(__dirname, 'results'), { recursive: true });
    writeFileSync(join(__dirname, 'results', 'latest.md'), report);
  }
}

main().then(
  () => process.exit(0),
  (error) => {
    console.error(error);
    process.exit(1);
  },
);
