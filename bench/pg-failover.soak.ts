/**
 * PostgreSQL failover soak (`npm run soak:pg-failover`): a primary and a streaming standby of its
 * own (scripts/pg-pair), one application process (outbox dispatcher, a publisher at a steady rate,
 * a deferred `@InboxHandler` consuming what it publishes) connected through a stable address (a
 * TCP proxy re-pointed at the promoted standby). Mid-stream the primary is killed -9 and the
 * standby promoted. Three set-ups: synchronous replication; asynchronous with a lagging standby;
 * the same with `awaitStandby`. Then the cost of `awaitStandby` on a healthy pair: commit → confirm
 * latency at a steady rate, and the drain rate of a backlog. Writes bench/results/pg-failover.md.
 *
 * Settings (environment): SOAK_SECONDS_BEFORE / SOAK_SECONDS_AFTER (publishing before and after
 * the failover, default 10 / 15), SOAK_RATE (messages per second, default 100), SOAK_LAG_MS (how
 * long the asynchronous standby is cut off before the kill, default 2000), BENCH_BACKLOG (default
 * 3000), SOAK_PARTS=cost (only the cost figures, printed as JSON), plus the test suite's AMQP_URL
 * and TEST_NAMESPACE_PREFIX.
 */
import { connect } from 'amqplib';
import { writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { ChildApp, killAllChildren } from '../test/support/child-app';
import { AMQP_URL } from '../test/support/environment';
import { prepareInboxBroker, type InboxFixtureConfig } from '../test/support/inbox-fixture';
import { PgPair, pgPairUnavailable } from '../test/support/pg-pair';

const PREFIX = process.env.TEST_NAMESPACE_PREFIX ?? '';
const SECONDS_BEFORE = Number(process.env.SOAK_SECONDS_BEFORE ?? 10);
const SECONDS_AFTER = Number(process.env.SOAK_SECONDS_AFTER ?? 15);
const RATE = Number(process.env.SOAK_RATE ?? 100);
const LAG_MS = Number(process.env.SOAK_LAG_MS ?? 2_000);
const BACKLOG = Number(process.env.BENCH_BACKLOG ?? 3_000);
const LEASE_MS = 30_000;
const AWAIT_STANDBY = { standbys: ['standby1'], timeoutMs: 2_000 };
const SCHEMA = 'soak_pg_failover';
const TYPE = 'soak.order';

interface FailoverRun {
  setUp: string;
  published: number;
  rows: number;
  delivered: number;
  lostAcknowledged: number;
  undelivered: number;
  /** Outbox rows not DONE at the end, by status. */
  outboxNotDone: string;
  phantoms: number;
  duplicates: number;
  inboxDone: number;
  /** Inbox rows not DONE at the end, by status. */
  inboxNotDone: string;
  duplicateEffects: number;
  manualRequired: number;
  exits: number;
  recoveryMs: number | null;
}

/** Arrivals on an exchange, with their arrival times and the library's publish time header. */
class Arrivals {
  readonly ids: string[] = [];
  readonly latencies: number[] = [];
  readonly times: number[] = [];
  private close?: () => Promise<void>;

  static async bind(exchange: string, routingKey: string): Promise<Arrivals> {
    const arrivals = new Arrivals();
    const connection = await connect(AMQP_URL);
    const channel = await connection.createChannel();
    await channel.assertExchange(exchange, 'topic', { durable: false });
    const { queue } = await channel.assertQueue('', { exclusive: true });
    await channel.bindQueue(queue, exchange, routingKey);
    await channel.consume(
      queue,
      (message) => {
        if (!message) return;
        const now = Date.now();
        arrivals.ids.push(message.properties.messageId as string);
        arrivals.times.push(now);
        const publishedAt = message.properties.headers?.['outbox-published-at'];
        if (typeof publishedAt === 'string') arrivals.latencies.push(now - Date.parse(publishedAt));
      },
      { noAck: true },
    );
    arrivals.close = async () => connection.close().catch(() => undefined);
    return arrivals;
  }

  async stop(): Promise<void> {
    await this.close?.();
  }
}

function inboxConfig(run: string): InboxFixtureConfig {
  return {
    exchange: `${PREFIX}soak.${run}.orders`,
    routingKey: TYPE,
    outExchange: `${PREFIX}soak.${run}.inventory`,
    deadLetterExchange: `${PREFIX}soak.${run}.dead`,
    consumers: [{ name: 'soak-inventory', queue: `${PREFIX}soak.${run}.inventory-in` }],
    mode: 'deferred',
  };
}

async function startApp(pair: PgPair, name: string, outbox: object, extra: object = {}): Promise<ChildApp> {
  const shared = process.env.DATABASE_URL;
  process.env.DATABASE_URL = pair.url();
  try {
    return await ChildApp.start(name, { database: { kind: 'postgres', name: SCHEMA }, outbox: { pollIntervalMs: 200, ...outbox }, ...extra });
  } finally {
    process.env.DATABASE_URL = shared;
  }
}

/** Publishes at `RATE` until `until`, in commands of 5; a failed command is retried after 100 ms. */
async function publishUntil(app: ChildApp, until: number, published: string[], firstAfter?: { at: number; id?: string }): Promise<void> {
  const perCommand = 5;
  while (Date.now() < until) {
    const started = Date.now();
    const ids = await app.publish(perCommand, 10_000).catch(() => [] as string[]);
    if (ids.length === 0) {
      await sleep(100);
      continue;
    }
    if (firstAfter && firstAfter.id === undefined && started >= firstAfter.at) firstAfter.id = ids[0];
    published.push(...ids);
    await sleep(Math.max(0, (perCommand * 1000) / RATE - (Date.now() - started)));
  }
}

async function failoverRun(setUp: string, sync: boolean, lag: boolean, awaitStandby: boolean): Promise<FailoverRun> {
  const run = setUp.replace(/\W+/g, '-');
  const pair = await PgPair.start(`soak-${run}`, { sync });
  const inbox = inboxConfig(run);
  const connection = await connect(AMQP_URL);
  await prepareInboxBroker(await connection.createChannel(), inbox);
  await connection.close();
  const orders = await Arrivals.bind(inbox.exchange, TYPE);
  const inventory = await Arrivals.bind(inbox.outExchange, '#');
  try {
    await pair.sql(`CREATE SCHEMA "${PREFIX}${SCHEMA}"`);
    // As docs/operations.md advises for a failover pair: rows whose claim or DONE the promoted
    // server lacks come back after a 30 s lease, and with synchronous replication the
    // dispatcher's bookkeeping waits for the standby too.
    const outbox = { claimLeaseMs: LEASE_MS, workerSynchronousCommit: sync, ...(awaitStandby ? { awaitStandby: AWAIT_STANDBY } : {}) };
    const app = await startApp(pair, `soak-${run}`, outbox, {
      publisher: { exchange: inbox.exchange, type: TYPE },
      inbox,
    });
    const published: string[] = [];
    await publishUntil(app, Date.now() + SECONDS_BEFORE * 1000, published);
    if (lag) {
      pair.replication.blackHole();
      await publishUntil(app, Date.now() + LAG_MS, published);
    }
    const firstAfter: { at: number; id?: string } = { at: 0 };
    const publishing = (async () => {
      // Keeps publishing through the failover.
      await publishUntil(app, Date.now() + 1_000, published);
    })();
    await sleep(500);
    firstAfter.at = await pair.failover();
    await publishing;
    await publishUntil(app, firstAfter.at + SECONDS_AFTER * 1000, published, firstAfter);
    // With awaitStandby a standby must hold the rows: one rejoins, as a failover manager re-clones the old primary.
    if (awaitStandby) await pair.rejoin();
    const quietBy = Date.now() + 3 * LEASE_MS;
    let counts: Record<string, number> = {};
    while (Date.now() < quietBy) {
      counts = await statusCounts(pair, 'outbox_message');
      const inboxCounts = await statusCounts(pair, 'inbox_message');
      if (!counts.PENDING && !counts.PROCESSING && !counts.FAILED && !inboxCounts.PENDING && !inboxCounts.PROCESSING && !inboxCounts.FAILED) break;
      await sleep(250);
    }
    await sleep(1_000);
    const rows = new Set(
      (await pair.sql<{ message_id: string }>(`SELECT message_id FROM "${PREFIX}${SCHEMA}".outbox_message WHERE message_type = $1`, [TYPE])).map(
        (r) => r.message_id,
      ),
    );
    const delivered = new Set(orders.ids);
    const inboxCounts = await statusCounts(pair, 'inbox_message');
    const [effects] = await pair.sql<{ all: string; distinct: string }>(
      `SELECT count(*) AS all, count(DISTINCT message_id) AS distinct FROM "${PREFIX}${SCHEMA}".test_effect`,
    );
    const recoveredAt = firstAfter.id ? orders.times[orders.ids.indexOf(firstAfter.id)] : undefined;
    const result: FailoverRun = {
      setUp,
      published: published.length,
      rows: rows.size,
      delivered: delivered.size,
      lostAcknowledged: published.filter((id) => !rows.has(id)).length,
      undelivered: [...rows].filter((id) => !delivered.has(id)).length,
      outboxNotDone: notDone(counts),
      phantoms: [...delivered].filter((id) => !rows.has(id)).length,
      duplicates: orders.ids.length - delivered.size,
      inboxDone: inboxCounts.DONE ?? 0,
      inboxNotDone: notDone(inboxCounts),
      duplicateEffects: Number(effects.all) - Number(effects.distinct),
      manualRequired: (counts.MANUAL_REQUIRED ?? 0) + (inboxCounts.MANUAL_REQUIRED ?? 0),
      exits: app.isRunning ? 0 : 1,
      recoveryMs: recoveredAt ? recoveredAt - firstAfter.at : null,
    };
    await app.stop();
    // The application's warnings and errors, for whoever reads the figures.
    writeFileSync(join(tmpdir(), `${PREFIX}soak-${run}-app.log`), `${app.stdout}\n${app.stderr}`);
    return result;
  } finally {
    await killAllChildren();
    await Promise.all([orders.stop(), inventory.stop()]);
    await pair.stop();
  }
}

/** `0`, or the counts of rows not DONE by status, e.g. `PROCESSING 5`. */
function notDone(counts: Record<string, number>): string {
  const left = Object.entries(counts).filter(([status]) => status !== 'DONE');
  return left.length === 0 ? '0' : left.map(([status, count]) => `${status} ${count}`).join(', ');
}

async function statusCounts(pair: PgPair, table: string): Promise<Record<string, number>> {
  const rows = await pair.sql<{ status: string; n: string }>(`SELECT status, count(*) AS n FROM "${PREFIX}${SCHEMA}".${table} GROUP BY status`);
  return Object.fromEntries(rows.map((r) => [r.status, Number(r.n)]));
}

interface CostRun {
  mode: string;
  latencyP50: number;
  latencyP99: number;
  drainPerSecond: number;
}

/** On a healthy asynchronous pair: latency at `RATE` and the drain of a backlog, with `awaitStandby` off and on. */
async function costRuns(): Promise<CostRun[]> {
  const pair = await PgPair.start('soak-cost', { sync: false });
  const exchange = `${PREFIX}soak.cost`;
  const arrivals = await Arrivals.bind(exchange, TYPE);
  const results: CostRun[] = [];
  try {
    await pair.sql(`CREATE SCHEMA "${PREFIX}${SCHEMA}"`);
    const writer = await startApp(pair, 'soak-cost-writer', { dispatcherEnabled: false }, { publisher: { exchange, type: TYPE } });
    for (const [mode, outbox] of [
      ['off', {}],
      ['on', { awaitStandby: AWAIT_STANDBY }],
    ] as const) {
      // The backlog first, while no dispatcher runs.
      const backlog: string[] = [];
      while (backlog.length < BACKLOG) backlog.push(...(await writer.publish(Math.min(500, BACKLOG - backlog.length), 120_000)));
      const from = arrivals.ids.length;
      const app = await startApp(pair, `soak-cost-${mode}`, outbox, { publisher: { exchange, type: TYPE } });
      while (arrivals.ids.length - from < BACKLOG) await sleep(100);
      const times = arrivals.times.slice(from, from + BACKLOG);
      const drainPerSecond = Math.round(((BACKLOG - 1) * 1000) / Math.max(1, times[times.length - 1] - times[0]));
      // Then a steady stream, published by the dispatching process (sent from memory on commit).
      const latencyFrom = arrivals.latencies.length;
      const stream: string[] = [];
      await publishUntil(app, Date.now() + 10_000, stream);
      while (arrivals.ids.length - from < BACKLOG + stream.length) await sleep(100);
      const latencies = arrivals.latencies.slice(latencyFrom + 0).sort((a, b) => a - b);
      results.push({ mode, latencyP50: percentile(latencies, 0.5), latencyP99: percentile(latencies, 0.99), drainPerSecond });
      await app.stop();
    }
    await writer.stop();
    return results;
  } finally {
    await killAllChildren();
    await arrivals.stop();
    await pair.stop();
  }
}

function percentile(sorted: number[], p: number): number {
  return sorted.length === 0 ? NaN : sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))];
}

function report(failovers: FailoverRun[], costs: CostRun[]): string {
  const row = (cells: unknown[]) => `| ${cells.join(' | ')} |`;
  return [
    '# PostgreSQL failover (`npm run soak:pg-failover`)',
    '',
    `${new Date().toISOString().slice(0, 10)}, this machine (2 shared cores). One application process (dispatcher, publisher at ${RATE} msg/s in`,
    'transactions of one message, a deferred `@InboxHandler` consuming the published messages) connected through a',
    'stable address (a TCP proxy). After ' + `${SECONDS_BEFORE} s the primary is killed -9 while publishing, the standby promoted`,
    `and the address re-pointed; publishing goes on for ${SECONDS_AFTER} s. Asynchronous runs cut the standby off`,
    `${LAG_MS} ms before the kill (a lagging standby). With \`awaitStandby\`, the old primary rejoins as a standby afterwards.`,
    `Settings as docs/operations.md advises: \`claimLeaseMs: ${LEASE_MS}\`, \`workerSynchronousCommit\` true with synchronous replication.`,
    'Counts are taken once nothing is left to send or process, or after three leases.',
    '',
    row([
      'set-up',
      'published (acknowledged)',
      'acknowledged, then gone',
      'rows after',
      'delivered',
      'undelivered rows (not DONE)',
      'phantoms',
      'duplicate deliveries',
      'inbox DONE / not DONE',
      'duplicate effects',
      'MANUAL_REQUIRED',
      'exits',
      'address moved → first new message delivered',
    ]),
    row(Array(13).fill('---')),
    ...failovers.map((r) =>
      row([
        r.setUp,
        r.published,
        r.lostAcknowledged,
        r.rows,
        r.delivered,
        `${r.undelivered} (${r.outboxNotDone})`,
        r.phantoms,
        r.duplicates,
        `${r.inboxDone} / ${r.inboxNotDone}`,
        r.duplicateEffects,
        r.manualRequired,
        r.exits,
        r.recoveryMs === null ? 'n/a' : `${r.recoveryMs} ms`,
      ]),
    ),
    '',
    'Phantoms: messages delivered whose row (and so whose transaction) the promoted server does not have.',
    '"Acknowledged, then gone": publishing transactions that committed on the old primary and were lost with it',
    '(asynchronous replication loses them whatever the library does; with `awaitStandby` none of them was sent).',
    '',
    `## Cost of \`awaitStandby\` on a healthy asynchronous pair (backlog ${BACKLOG}, stream ${RATE} msg/s for 10 s)`,
    '',
    row(['awaitStandby', 'commit → confirm p50', 'p99', 'drain msg/s']),
    row(Array(4).fill('---')),
    ...costs.map((c) => row([c.mode, `${c.latencyP50} ms`, `${c.latencyP99} ms`, c.drainPerSecond])),
    '',
  ].join('\n');
}

async function main(): Promise<void> {
  const unavailable = pgPairUnavailable();
  if (unavailable) throw new Error(`soak:pg-failover needs PostgreSQL 15's binaries: ${unavailable}`);
  // SOAK_PARTS=cost repeats only the cost measurement, printed and not written.
  if (process.env.SOAK_PARTS === 'cost') {
    process.stdout.write(`${JSON.stringify(await costRuns())}\n`);
    return;
  }
  const failovers = [
    await failoverRun('synchronous', true, false, false),
    await failoverRun('asynchronous, lagging standby', false, true, false),
    await failoverRun('asynchronous, lagging standby, awaitStandby', false, true, true),
  ];
  const costs = await costRuns();
  const text = report(failovers, costs);
  writeFileSync(join(__dirname, 'results/pg-failover.md'), text);
  process.stdout.write(text);
}

main().then(
  () => process.exit(0),
  (error) => {
    process.stderr.write(`${(error as Error).stack ?? String(error)}\n`);
    process.exit(1);
  },
);
