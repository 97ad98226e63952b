/**
 * Memory soak (`npm run soak:memory`): one application process, as a service runs it for hours —
 * OutboxModule on PostgreSQL, the outbox dispatcher, and a transactional `@InboxHandler`
 * consuming the messages it publishes (it records an effect row and publishes two messages of its
 * own) — taking a steady rate of HTTP requests on `POST /orders`, each a business write and a
 * `publish()` in one transaction. Every sample the process (started with `--expose-gc`) collects
 * its garbage and reports what its heap retains, its RSS and its external memory; at the first
 * snapshot time and at the end, under load both times, it also writes a V8 heap snapshot, and the
 * two are compared by constructor. Then the load stops and, once everything drained, the soak
 * checks that every acknowledged request's message reached the handler and had its effect recorded
 * exactly once. Writes bench/results/memory.md.
 *
 * Retention: the library's default `retentionMs` (7 days) would delete nothing in a run of hours,
 * so the run keeps DONE rows for SOAK_RETENTION_MINUTES instead and leaves `retentionIntervalMs`
 * at its default (1 hour): each purge deletes about an hour of rows, as in a service's steady state.
 *
 * Settings (environment): SOAK_MINUTES (of load, default 120), SOAK_RATE (requests per second,
 * default 100), SOAK_FIRST_SNAPSHOT_MINUTES (default 10), SOAK_SAMPLE_SECONDS (default 60),
 * SOAK_RETENTION_MINUTES (default 10), SOAK_RESULT (the markdown written, default
 * bench/results/memory.md), SOAK_SNAPSHOT_DIR (where the heap snapshots and the application's
 * log go, default a new directory under the system's temporary directory), plus the test suite's
 * DATABASE_URL, AMQP_URL and TEST_NAMESPACE_PREFIX.
 */
import { connect } from 'amqplib';
import { Agent, request as httpRequest } from 'node:http';
import { mkdirSync, mkdtempSync, statSync, writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { ChildApp, killAllChildren, type ChildMemory } from '../test/support/child-app';
import { testDatabase } from '../test/support/database';
import { AMQP_URL } from '../test/support/environment';
import { prepareInboxBroker, type InboxFixtureConfig } from '../test/support/inbox-fixture';
import { HeapSnapshot, type KindGrowth } from './support/heap-snapshot';
import { statCpuMicros } from './support/proc-stat';

const PREFIX = process.env.TEST_NAMESPACE_PREFIX ?? '';
const MINUTES = Number(process.env.SOAK_MINUTES ?? 120);
const RATE = Number(process.env.SOAK_RATE ?? 100);
const FIRST_SNAPSHOT_MINUTES = Math.min(MINUTES, Number(process.env.SOAK_FIRST_SNAPSHOT_MINUTES ?? 10));
const SAMPLE_SECONDS = Number(process.env.SOAK_SAMPLE_SECONDS ?? 60);
const RETENTION_MINUTES = Number(process.env.SOAK_RETENTION_MINUTES ?? 10);
const RESULT = resolve(process.env.SOAK_RESULT ?? join(__dirname, 'results/memory.md'));
/** The goal: what the heap may retain at the end beyond what it retained at the first snapshot. */
const GROWTH_GOAL_MB = 10;
/** Requests in flight beyond which the schedule waits (while the process writes a snapshot, say). */
const MAX_IN_FLIGHT = 500;
/** Writing a heap snapshot stops the process for seconds; on a busy machine, for longer. */
const MEMORY_TIMEOUT_MS = 600_000;
const DRAIN_TIMEOUT_MS = 600_000;
const SCHEMA = 'soak_memory';
const CONSUMER = 'soak-inventory';
const MB = 1_048_576;

interface Sample {
  /** Seconds since the load started. */
  at: number;
  memory: ChildMemory;
  /** Requests acknowledged per second since the previous sample. */
  requestsPerSecond: number;
  failures: number;
  /** Request latency's 99th percentile since the previous sample, ms. */
  p99: number;
  /** Outbox and inbox rows not yet finished (PENDING, FAILED, PROCESSING). */
  outboxBacklog: number;
  inboxBacklog: number;
  /** The application's CPU since the previous sample, % of one core. */
  cpu: number;
  /** The machine's 1-minute load average. */
  load: number;
}

/** Counts of request latencies in 1 ms buckets (the last one: 10 s or more). */
class Latencies {
  private readonly buckets = new Uint32Array(10_001);
  private total = 0;

  add(ms: number): void {
    this.buckets[Math.min(this.buckets.length - 1, Math.floor(ms))]++;
    this.total++;
  }

  percentile(p: number): number {
    let seen = 0;
    for (let ms = 0; ms < this.buckets.length; ms++) {
      seen += this.buckets[ms];
      if (seen > p * this.total) return ms;
    }
    return NaN;
  }

  get max(): number {
    for (let ms = this.buckets.length - 1; ms >= 0; ms--) if (this.buckets[ms] > 0) return ms;
    return NaN;
  }
}

/**
 * `POST /orders` at `RATE` a second over keep-alive connections, paced against the start time (open
 * loop: a slow answer does not slow the schedule; requests due while `MAX_IN_FLIGHT` are out are
 * sent once some come back). `pause()` holds the schedule, for while the process writes a heap
 * snapshot: requests sent then would pile up on connections that the server, when it wakes,
 * closes as idle before it reads them.
 */
class SteadyRequests {
  /** The message ids of the answered requests: their transactions committed. */
  readonly acknowledged = new Set<string>();
  readonly latencies = new Latencies();
  failures = 0;
  firstFailure?: string;
  private readonly agent = new Agent({ keepAlive: true, maxSockets: 32 });
  private readonly target: URL;
  private sent = 0;
  private inFlight = 0;
  private startedAt = 0;
  private stoppedAt = 0;
  /** Time spent paused, ms: not counted in the rates. */
  private pausedMs = 0;
  private pausedAt?: number;
  private timer?: NodeJS.Timeout;
  private window = { acknowledged: 0, failures: 0, at: 0, pausedMs: 0, latencies: new Latencies() };

  constructor(url: string) {
    this.target = new URL('/orders', url);
  }

  start(): void {
    this.startedAt = this.window.at = performance.now();
    this.schedule();
  }

  /** Sends no more until `resume()`, and resolves once every request sent was answered or failed. */
  async pause(): Promise<void> {
    clearInterval(this.timer);
    this.pausedAt = performance.now();
    while (this.inFlight > 0) await sleep(5);
  }

  /** Goes on where `pause()` stopped, without catching up. */
  resume(): void {
    this.endPause();
    this.schedule();
  }

  /** Sends no more, and resolves once every request sent was answered or failed. */
  async stop(): Promise<void> {
    clearInterval(this.timer);
    this.endPause();
    this.stoppedAt = performance.now();
    while (this.inFlight > 0) await sleep(20);
    this.agent.destroy();
  }

  private endPause(): void {
    if (this.pausedAt !== undefined) this.pausedMs += performance.now() - this.pausedAt;
    this.pausedAt = undefined;
  }

  private schedule(): void {
    this.timer = setInterval(() => {
      const due = Math.floor(((performance.now() - this.startedAt - this.pausedMs) / 1000) * RATE);
      while (this.sent < due && this.inFlight < MAX_IN_FLIGHT) this.send();
    }, 5);
  }

  get offered(): number {
    return this.sent;
  }

  /** Acknowledged requests per second over the whole load, pauses left out. */
  get achievedRate(): number {
    return this.acknowledged.size / (((this.stoppedAt || performance.now()) - this.startedAt - this.pausedMs) / 1000);
  }

  /** Seconds the load was paused. */
  get pausedSeconds(): number {
    return this.pausedMs / 1000;
  }

  /** Acknowledged per second (pauses left out), failures and the latency p99 since the previous call. */
  takeWindow(): { requestsPerSecond: number; failures: number; p99: number } {
    const now = performance.now();
    const acknowledged = this.acknowledged.size;
    const result = {
      requestsPerSecond: (acknowledged - this.window.acknowledged) / ((now - this.window.at - (this.pausedMs - this.window.pausedMs)) / 1000),
      failures: this.failures - this.window.failures,
      p99: this.window.latencies.percentile(0.99),
    };
    this.window = { acknowledged, failures: this.failures, at: now, pausedMs: this.pausedMs, latencies: new Latencies() };
    return result;
  }

  private send(): void {
    this.sent++;
    this.inFlight++;
    const sentAt = performance.now();
    let settled = false;
    const settle = (messageId: string | undefined, failure?: string) => {
      if (settled) return;
      settled = true;
      this.inFlight--;
      if (messageId) {
        this.acknowledged.add(messageId);
        const ms = performance.now() - sentAt;
        this.latencies.add(ms);
        this.window.latencies.add(ms);
      } else {
        this.failures++;
        this.firstFailure ??= failure;
      }
    };
    const request = httpRequest(this.target, { method: 'POST', agent: this.agent, headers: { 'content-length': 0 } }, (response) => {
      let body = '';
      response.setEncoding('utf8');
      response.on('data', (chunk: string) => (body += chunk));
      response.on('end', () => {
        if (response.statusCode !== 201) return settle(undefined, `HTTP ${response.statusCode}: ${body.slice(0, 200)}`);
        try {
          settle((JSON.parse(body) as { messageId: string }).messageId);
        } catch {
          settle(undefined, `unreadable answer: ${body.slice(0, 200)}`);
        }
      });
      response.on('error', (error) => settle(undefined, error.message));
    });
    request.on('error', (error) => settle(undefined, error.message));
    request.end();
  }
}

/** Arrivals on an exchange, by message id (the messages the handler publishes). */
class Arrivals {
  readonly ids = new Set<string>();
  total = 0;
  private close?: () => Promise<void>;

  static async bind(exchange: string): Promise<Arrivals> {
    const arrivals = new Arrivals();
    const connection = await connect(AMQP_URL);
    const channel = await connection.createChannel();
    await channel.assertExchange(exchange, 'topic', { durable: false });
    const { queue } = await channel.assertQueue('', { exclusive: true });
    await channel.bindQueue(queue, exchange, '#');
    await channel.consume(
      queue,
      (message) => {
        if (!message) return;
        arrivals.total++;
        arrivals.ids.add(message.properties.messageId as string);
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

interface Outcome {
  offered: number;
  acknowledged: number;
  failures: number;
  firstFailure?: string;
  achievedRate: number;
  latency: { p50: number; p99: number; max: number };
  /** Acknowledged requests whose message's effect is not recorded. */
  lost: number;
  duplicateEffects: number;
  /** Effects of messages whose request failed (its transaction committed all the same). */
  effectsOfFailedRequests: number;
  inventoryExpected: number;
  inventoryDelivered: number;
  inventoryDuplicates: number;
  outbox: Record<string, number>;
  inbox: Record<string, number>;
  /** Outbox rows published minus rows left: what retention deleted. */
  outboxPurged: number;
  exits: number;
  stopExit: string;
  drainSeconds: number;
  pausedSeconds: number;
  /** The application's warnings and errors, by kind (ids and numbers left out), most frequent first. */
  warnings: [string, number][];
}

const database = testDatabase(SCHEMA, 'postgres');

/** Sample times in seconds from the start of the load: 0, every SAMPLE_SECONDS, the first snapshot and the end. */
function sampleTimes(): number[] {
  const end = MINUTES * 60;
  const times = new Set([0, FIRST_SNAPSHOT_MINUTES * 60, end]);
  for (let at = SAMPLE_SECONDS; at < end; at += SAMPLE_SECONDS) times.add(at);
  return [...times].sort((a, b) => a - b);
}

async function backlogs(): Promise<{ outbox: number; inbox: number }> {
  // Counted through the partial indexes of unfinished rows, not by scanning hours of DONE rows.
  const unfinished = `status IN ('PENDING', 'FAILED') OR status = 'PROCESSING'`;
  const [row] = await database.sql<{ outbox: string; inbox: string }>(
    `SELECT (SELECT count(*) FROM {outbox_message} WHERE ${unfinished}) AS outbox, (SELECT count(*) FROM {inbox_message} WHERE ${unfinished}) AS inbox`,
  );
  return { outbox: Number(row.outbox), inbox: Number(row.inbox) };
}

async function effectCounts(): Promise<Map<string, number>> {
  const rows = await database.sql<{ message_id: string; n: string }>(
    `SELECT message_id, count(*) AS n FROM {test_effect} WHERE consumer = '${CONSUMER}' GROUP BY message_id`,
  );
  return new Map(rows.map((row) => [row.message_id, Number(row.n)]));
}

async function main(): Promise<void> {
  const snapshots = process.env.SOAK_SNAPSHOT_DIR ?? mkdtempSync(join(tmpdir(), `${PREFIX}soak-memory-`));
  mkdirSync(snapshots, { recursive: true });
  log(`heap snapshots and the application's log go to ${snapshots}`);
  process.env.CHILD_NODE_FLAGS = `${process.env.CHILD_NODE_FLAGS ?? ''} --expose-gc`.trim();

  await database.reset();
  const inbox: InboxFixtureConfig = {
    exchange: `${PREFIX}soak.memory.orders`,
    routingKey: 'order.paid',
    outExchange: `${PREFIX}soak.memory.inventory`,
    deadLetterExchange: `${PREFIX}soak.memory.dead`,
    consumers: [{ name: CONSUMER, queue: `${PREFIX}soak.memory.inventory-in` }],
  };
  const connection = await connect(AMQP_URL);
  await prepareInboxBroker(await connection.createChannel(), inbox);
  await connection.close();
  // The handler's messages need a queue: the library publishes `mandatory`.
  const inventory = await Arrivals.bind(inbox.outExchange);
  const samples: Sample[] = [];
  const snapshotFiles: string[] = [];
  let app: ChildApp | undefined;
  let load: SteadyRequests | undefined;
  let runError: string | undefined;
  try {
    app = await ChildApp.start('soak-memory', {
      database: { kind: 'postgres', name: SCHEMA },
      outbox: { retentionMs: RETENTION_MINUTES * 60_000 },
      ordersRoute: { exchange: inbox.exchange },
      inbox,
      memoryReports: true,
    });
    load = new SteadyRequests(app.url);
    const firstSnapshotAt = FIRST_SNAPSHOT_MINUTES * 60;
    const endAt = MINUTES * 60;
    let cpuBefore = statCpuMicros(`/proc/${app.pid}/stat`, false) ?? 0;
    let cpuAt = performance.now();
    let startedAt = 0;
    for (const at of sampleTimes()) {
      if (at === 0) {
        startedAt = Date.now();
        load.start();
      } else {
        // In minutes of load: the pauses for snapshots move the later samples on.
        await Promise.race([sleep(Math.max(0, startedAt + (at + load.pausedSeconds) * 1000 - Date.now())), app.exited]);
      }
      if (!app.isRunning) throw new Error(`the application exited${app.diagnostics()}`);
      const window = load.takeWindow();
      const cpuNow = statCpuMicros(`/proc/${app.pid}/stat`, false) ?? cpuBefore;
      const cpu = ((cpuNow - cpuBefore) / 1000 / Math.max(1, performance.now() - cpuAt)) * 100;
      [cpuBefore, cpuAt] = [cpuNow, performance.now()];
      const snapshot = at > 0 && (at === firstSnapshotAt || at === endAt) ? join(snapshots, `${Math.round(at / 60)}min.heapsnapshot`) : undefined;
      if (snapshot) await load.pause();
      const memory = await app.memory(snapshot, MEMORY_TIMEOUT_MS);
      if (snapshot && at < endAt) load.resume();
      if (memory.snapshot) snapshotFiles.push(memory.snapshot);
      const { outbox, inbox: inboxBacklog } = await backlogs();
      const sample: Sample = { at, memory, ...window, outboxBacklog: outbox, inboxBacklog, cpu, load: loadavg()[0] };
      samples.push(sample);
      log(
        `${(at / 60).toFixed(1)} min: retained ${mb(memory.usedHeapSize)} MB, RSS ${mb(memory.rss)} MB, ` +
          `${window.requestsPerSecond.toFixed(1)} req/s, p99 ${window.p99} ms, backlog ${outbox}/${inboxBacklog}, CPU ${cpu.toFixed(0)}%` +
          `, GC ${memory.collectMs} ms` +
          (memory.snapshot ? `, snapshot ${memory.snapshot} in ${((memory.snapshotMs ?? 0) / 1000).toFixed(1)} s` : ''),
      );
    }
  } catch (error) {
    runError = (error as Error).stack ?? String(error);
    log(`the run stopped early: ${runError}`);
  }
  try {
    await load?.stop();
    const outcome = app ? await finish(app, load!, inventory) : undefined;
    if (app) writeFileSync(join(snapshots, 'app.log'), `${app.stdout}\n${app.stderr}`);
    const comparison = snapshotFiles.length === 2 ? compareSnapshots(snapshotFiles[0], snapshotFiles[1]) : undefined;
    const text = report(samples, outcome, comparison, snapshots, runError);
    mkdirSync(resolve(RESULT, '..'), { recursive: true });
    writeFileSync(RESULT, text);
    process.stdout.write(text);
    log(`written to ${RESULT}`);
  } finally {
    await killAllChildren();
    await inventory.stop();
  }
  if (runError) process.exitCode = 1;
}

/** Waits until everything acknowledged was handled and sent on, then counts. */
async function finish(app: ChildApp, load: SteadyRequests, inventory: Arrivals): Promise<Outcome> {
  const drainStart = Date.now();
  let effects = new Map<string, number>();
  for (;;) {
    const { outbox, inbox } = await backlogs();
    effects = await effectCounts();
    const settled = outbox === 0 && inbox === 0 && [...load.acknowledged].every((id) => effects.has(id)) && inventory.ids.size >= 2 * effects.size;
    if (settled || Date.now() - drainStart > DRAIN_TIMEOUT_MS || !app.isRunning) break;
    await sleep(1_000);
  }
  const drainSeconds = (Date.now() - drainStart) / 1000;
  // A moment for deliveries of the last messages to show as duplicates, if any.
  await sleep(2_000);
  effects = await effectCounts();
  const outbox = await database.statusCounts('outbox_message');
  const inbox = await database.statusCounts('inbox_message');
  const exits = app.isRunning ? 0 : 1;
  const stopped = await app.stop();
  let duplicateEffects = 0;
  let effectsOfFailedRequests = 0;
  for (const [id, count] of effects) {
    duplicateEffects += count - 1;
    if (!load.acknowledged.has(id)) effectsOfFailedRequests++;
  }
  const orderMessages = load.acknowledged.size + effectsOfFailedRequests;
  const rowsLeft = Object.values(outbox).reduce((sum, n) => sum + n, 0);
  return {
    offered: load.offered,
    acknowledged: load.acknowledged.size,
    failures: load.failures,
    firstFailure: load.firstFailure,
    achievedRate: load.achievedRate,
    latency: { p50: load.latencies.percentile(0.5), p99: load.latencies.percentile(0.99), max: load.latencies.max },
    lost: [...load.acknowledged].filter((id) => !effects.has(id)).length,
    duplicateEffects,
    effectsOfFailedRequests,
    inventoryExpected: 2 * effects.size,
    inventoryDelivered: inventory.ids.size,
    inventoryDuplicates: inventory.total - inventory.ids.size,
    outbox,
    inbox,
    outboxPurged: orderMessages + 2 * effects.size - rowsLeft,
    exits,
    stopExit: stopped.signal ? `signal ${stopped.signal}` : `code ${stopped.code}`,
    drainSeconds,
    pausedSeconds: load.pausedSeconds,
    warnings: warningKinds(`${app.stdout}\n${app.stderr}`),
  };
}

/** Nest's WARN and ERROR lines by logger and message, with ids and numbers replaced by `#`. */
function warningKinds(output: string): [string, number][] {
  const kinds = new Map<string, number>();
  // Nest colours its lines.
  for (const line of output.replace(/\x1b\[[0-9;]*m/g, '').split('\n')) {
    const match = /\b(WARN|ERROR) \[([^\]]+)\] (.*)$/.exec(line);
    if (!match) continue;
    const message = match[3]
      .replace(/[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/g, '#')
      .replace(/\d+/g, '#')
      .slice(0, 120);
    const kind = `${match[1]} [${match[2]}] ${message}`;
    kinds.set(kind, (kinds.get(kind) ?? 0) + 1);
  }
  return [...kinds].sort((a, b) => b[1] - a[1]);
}

interface SnapshotComparison {
  growth: KindGrowth[];
  /** The two files' sizes. */
  sizes: number[];
}

function compareSnapshots(first: string, last: string): SnapshotComparison | undefined {
  try {
    // One at a time: each takes several times its file's size once read.
    const earlier = HeapSnapshot.read(first);
    const before = { totals: earlier.totals(), ids: earlier.ids() };
    return { growth: HeapSnapshot.read(last).growthSince(before, 15), sizes: [statSync(first).size, statSync(last).size] };
  } catch (error) {
    log(`could not compare the snapshots: ${(error as Error).message}`);
    return undefined;
  }
}

/** Least-squares slope of the retained heap over the samples from the first snapshot on, MB per hour. */
function slopePerHour(samples: Sample[]): number {
  const points = samples.filter((s) => s.at >= FIRST_SNAPSHOT_MINUTES * 60).map((s) => [s.at / 3600, s.memory.usedHeapSize / MB]);
  if (points.length < 2) return NaN;
  const meanX = points.reduce((sum, [x]) => sum + x, 0) / points.length;
  const meanY = points.reduce((sum, [, y]) => sum + y, 0) / points.length;
  const sxy = points.reduce((sum, [x, y]) => sum + (x - meanX) * (y - meanY), 0);
  const sxx = points.reduce((sum, [x]) => sum + (x - meanX) ** 2, 0);
  return sxy / sxx;
}

function report(
  samples: Sample[],
  outcome: Outcome | undefined,
  comparison: SnapshotComparison | undefined,
  snapshots: string,
  runError: string | undefined,
): string {
  const row = (cells: unknown[]) => `| ${cells.join(' | ')} |`;
  const first = samples.find((s) => s.at === FIRST_SNAPSHOT_MINUTES * 60);
  const last = samples.find((s) => s.at === MINUTES * 60);
  const grew = first && last ? (last.memory.usedHeapSize - first.memory.usedHeapSize) / MB : undefined;
  const notDone = (counts: Record<string, number>) =>
    Object.entries(counts)
      .filter(([status]) => status !== 'DONE')
      .map(([status, n]) => `${status} ${n}`)
      .join(', ') || '0';
  const lines = [
    '# Memory over hours (`npm run soak:memory`)',
    '',
    `${new Date().toISOString().slice(0, 10)}, this machine (2 cores, shared with other work: see the load column). One application`,
    'process (Node ' + `${process.version}, \`--expose-gc\`): OutboxModule on PostgreSQL with the dispatcher, and a transactional`,
    '`@InboxHandler` consuming the `order.paid` messages it publishes, recording an effect row and publishing two messages',
    `of its own. It took ${RATE} HTTP requests/s offered on \`POST /orders\` (a business row and \`publish()\` in one transaction)`,
    `for ${MINUTES} min: ${RATE} outbox messages/s from requests, ${2 * RATE}/s from the handler, ${RATE} inbox messages/s.`,
    `Library defaults except \`retentionMs\`: ${RETENTION_MINUTES} min (the default, 7 days, deletes nothing in a run of hours;`,
    'the hourly purge then deletes about an hour of rows, as in a steady state).',
    `Every ${SAMPLE_SECONDS} s the process collected its garbage (\`gc()\` twice) and reported V8's \`used_heap_size\` (the retained`,
    `heap), RSS and external memory; at ${FIRST_SNAPSHOT_MINUTES} min and at the end, under load, it also wrote a heap snapshot`,
    `(${snapshots}).`,
    '',
  ];
  if (runError) lines.push('**The run stopped early:**', '', '```', runError.split('\n').slice(0, 20).join('\n'), '```', '');
  lines.push('## Retained heap', '');
  if (first && last && grew !== undefined) {
    lines.push(
      row(['at', 'retained heap', 'RSS', 'external (of which array buffers)', 'GC / snapshot stopped the process']),
      row(Array(5).fill('---')),
      ...[first, last].map((s) =>
        row([
          `${s.at / 60} min`,
          `${mb(s.memory.usedHeapSize)} MB`,
          `${mb(s.memory.rss)} MB`,
          `${mb(s.memory.external)} (${mb(s.memory.arrayBuffers)}) MB`,
          `${s.memory.collectMs} ms / ${((s.memory.snapshotMs ?? 0) / 1000).toFixed(1)} s`,
        ]),
      ),
      '',
      `Growth from ${FIRST_SNAPSHOT_MINUTES} min to the end: **${grew >= 0 ? '+' : ''}${grew.toFixed(1)} MB** (goal ≤ +${GROWTH_GOAL_MB} MB: ` +
        `${grew <= GROWTH_GOAL_MB ? 'met' : 'not met'}); least-squares slope over the samples since then ${slopePerHour(samples).toFixed(2)} MB/h.`,
      '',
    );
  } else lines.push('No growth figure: the run did not reach both snapshots.', '');
  if (outcome) {
    lines.push(
      '## Correctness and rate',
      '',
      row(['figure', 'value']),
      row(['---', '---']),
      row(['requests offered / acknowledged (201) / failed', `${outcome.offered} / ${outcome.acknowledged} / ${outcome.failures}`]),
      ...(outcome.firstFailure ? [row(['first failure', outcome.firstFailure.replace(/\|/g, '\\|')])] : []),
      row([
        'achieved rate (acknowledged over the load, snapshot pauses left out)',
        `${outcome.achievedRate.toFixed(1)} req/s of ${RATE} offered (paused ${outcome.pausedSeconds.toFixed(0)} s)`,
      ]),
      row(['request latency p50 / p99 / max', `${outcome.latency.p50} / ${outcome.latency.p99} / ${outcome.latency.max} ms`]),
      row(['acknowledged requests whose effect is missing (lost)', outcome.lost]),
      row(['duplicate effects', outcome.duplicateEffects]),
      row(['effects of failed requests (committed, answer lost)', outcome.effectsOfFailedRequests]),
      row([
        "handler's messages delivered / expected (duplicate deliveries)",
        `${outcome.inventoryDelivered} / ${outcome.inventoryExpected} (${outcome.inventoryDuplicates})`,
      ]),
      row(['outbox rows left: DONE / not DONE', `${outcome.outbox.DONE ?? 0} / ${notDone(outcome.outbox)}`]),
      row(['outbox rows deleted by retention', outcome.outboxPurged]),
      row(['inbox rows left: DONE / not DONE', `${outcome.inbox.DONE ?? 0} / ${notDone(outcome.inbox)}`]),
      row(['application exits during the run', outcome.exits]),
      row(['graceful stop at the end', outcome.stopExit]),
      row(['drain after the load stopped', `${outcome.drainSeconds.toFixed(0)} s`]),
      '',
    );
    if (outcome.warnings.length > 0) {
      lines.push(
        "The application's warnings and errors, by kind (its full output is app.log beside the snapshots):",
        '',
        row(['count', 'line']),
        row(['---', '---']),
        ...outcome.warnings.slice(0, 12).map(([kind, n]) => row([n, kind.replace(/\|/g, '\\|')])),
        '',
      );
    } else lines.push('The application logged no warning or error.', '');
  }
  lines.push(
    '## Samples',
    '',
    'After a full garbage collection. Rate, failures and p99 are over the interval before the sample, pauses left out; the',
    'load pauses while the process writes a snapshot, which stops it for seconds (longer than its broker heartbeat and',
    'statement deadlines: the warnings above). Writing a snapshot takes memory outside the heap that the process does not all',
    'give back, so RSS steps up after the first one: compare RSS among the later samples. Backlog: outbox / inbox rows not finished.',
    '',
    row(['min', 'retained heap MB', 'RSS MB', 'external MB', 'req/s', 'failed', 'p99 ms', 'backlog', 'app CPU', 'load avg']),
    row(Array(10).fill('---')),
    ...samples.map((s) =>
      row([
        (s.at / 60).toFixed(1),
        mb(s.memory.usedHeapSize),
        mb(s.memory.rss),
        mb(s.memory.external),
        s.at === 0 ? '–' : s.requestsPerSecond.toFixed(1),
        s.at === 0 ? '–' : s.failures,
        s.at === 0 || Number.isNaN(s.p99) ? '–' : s.p99,
        `${s.outboxBacklog} / ${s.inboxBacklog}`,
        `${s.cpu.toFixed(0)}%`,
        s.load.toFixed(2),
      ]),
    ),
    '',
  );
  if (comparison) {
    const kind = (name: string) => `\`${name.replace(/\|/g, '\\|').slice(0, 80)}\``;
    lines.push(
      `## What grew between the snapshots (${mb(comparison.sizes[0])} MB and ${mb(comparison.sizes[1])} MB files)`,
      '',
      "Own (shallow) sizes by constructor, as DevTools' comparison view shows them (closures by function name), largest",
      'growth first; "new" counts the objects of the end snapshot that the first did not have (V8 keeps ids across snapshots).',
      "The application runs from TypeScript (ts-node): `TraceMap` and the arrays it holds (`_decoded`) are ts-node's source maps,",
      'decoded once per file the first time a stack trace passes through it.',
      '',
      row(['constructor', 'count at the end', 'count change', 'new objects', 'own size at the end', 'own size change']),
      row(Array(6).fill('---')),
      ...comparison.growth.map((g) =>
        row([kind(g.kind), g.count, signed(g.countChange), g.newObjects, `${kb(g.selfSize)} KB`, `${signed(Math.round(g.selfSizeChange / 1024))} KB`]),
      ),
      '',
      'What holds the new objects of the five kinds that grew most (each object by its first retainer that is not weak, four',
      'steps up, nearest first; the commonest chains):',
      '',
      ...comparison.growth
        .slice(0, 5)
        .filter((g) => g.newObjects > 0)
        .flatMap((g) => [
          `- ${kind(g.kind)}: ${g.newObjects} new`,
          ...g.retainers.map((r) => `  - ${r.objects}: ${r.chain.replace(/\|/g, '\\|').slice(0, 300)}`),
        ]),
      '',
    );
  }
  return lines.join('\n');
}

const mb = (bytes: number) => (bytes / MB).toFixed(1);
const kb = (bytes: number) => Math.round(bytes / 1024);
const signed = (n: number) => (n > 0 ? `+${n}` : String(n));

function log(line: string): void {
  process.stdout.write(`[soak:memory ${new Date().toISOString()}] ${line}\n`);
}

main().then(
  () => process.exit(),
  (error) => {
    process.stderr.write(`${(error as Error).stack ?? String(error)}\n`);
    process.exit(1);
  },
);
