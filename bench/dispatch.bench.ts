import type { OutboxModuleOptionsInput } from '../lib';
import { ChildApp } from '../test/support/child-app';
import { DatabaseKind, TestDatabase, testDatabase } from '../test/support/database';
import { benchDatabases, databaseLabel } from './support/bench-databases';
import { BenchQueue, publishConfirmWindow } from './support/broker';
import { openOutboxBacklog, OutboxBacklog } from './support/outbox-backlog';
import { HandWrittenRelay, RelayClaims } from './support/hand-written-relay';
import { CpuMeter, SERVER_COMMANDS } from './support/process-cpu';
import { formatRate, summarise } from './support/stats';

const NAMESPACE = 'bench_dispatch';
const EXCHANGE = 'bench_dispatch';
const QUEUE = 'bench_dispatch';
const RUNS = Number(process.env.BENCH_RUNS ?? 3);
const WINDOW = 1_000;
/**
 * An optional row with other settings, `BENCH_DISPATCH_TUNED=batchSize/dispatchConcurrency`
 * (e.g. `200/4`, the earlier default; the default 500/4 was the best of 200/4, 500/4, 1000/4,
 * 500/8, 1000/2 and 100/8 on the 2-core machine). Off by default: three more drains of the full
 * backlog do not fit the bench's time budget.
 */
const TUNED = process.env.BENCH_DISPATCH_TUNED?.split('/').map(Number) as [number, number] | undefined;
/**
 * Drains by the PostgreSQL row with an OpenTelemetry SDK registered in the dispatcher
 * (`BENCH_DISPATCH_OPENTELEMETRY_RUNS`, 0 leaves the row out): at most two, not `RUNS`, to keep
 * the whole bench within its time budget.
 */
const OPEN_TELEMETRY_RUNS = Number(process.env.BENCH_DISPATCH_OPENTELEMETRY_RUNS ?? Math.min(RUNS, 2));
const DRAIN_TIMEOUT_MS = 120_000;

export interface DispatchRow {
  database: string;
  variant: string;
  backlog: string;
  messagesPerSecond: string;
  ratio: string;
  /** Commit of the backlog → first claim of its rows: the wake-up (NOTIFY, or the next poll). */
  firstClaim: string;
  /** Messages/s from the first claim until every row is DONE: the drain without its wake-up. */
  afterFirstClaim: string;
  /** CPU µs per message of the sending processes, the database server and the broker (from /proc). */
  cpuPerMessage: string;
}

interface Variant {
  name: string;
  instances: number;
  outbox: OutboxModuleOptionsInput;
  /** Registers an OpenTelemetry SDK (metrics and traces, discarding exporters) in each dispatcher before its app starts. */
  openTelemetry?: boolean;
  /** Drains of this variant; `RUNS` unless given. */
  runs?: number;
  /** The hand-written relay (`support/hand-written-relay.ts`, in this process) instead of the library's dispatchers. */
  handWritten?: RelayClaims;
}

/** What is measured on one database. */
interface DispatchPlan {
  messages: number;
  variants: Variant[];
}

const DEFAULTS: Variant = { name: '1 instance, defaults (batchSize 500, dispatchConcurrency 4)', instances: 1, outbox: {} };
const HAND_WRITTEN: Variant = {
  name: 'hand-written relay on the same table (4 loops: claim 500 SKIP LOCKED, publish, await confirms, one UPDATE)',
  instances: 1,
  outbox: {},
  handWritten: 'in-row',
};
/** On request (`BENCH_DISPATCH_RELAY_CLAIMS_TABLE=1`): what a claim that leaves the row alone would buy a relay. */
const HAND_WRITTEN_CLAIMS_TABLE: Variant = {
  name: 'hand-written relay, claims in a table of their own (the row untouched until DONE; not the library)',
  instances: 1,
  outbox: {},
  handWritten: 'claims-table',
};
const RELAY_CLAIMS_TABLE = process.env.BENCH_DISPATCH_RELAY_CLAIMS_TABLE === '1';

/**
 * PostgreSQL: defaults, the hand-written relay, defaults with an OpenTelemetry SDK recording
 * metrics and traces, and two instances on a 100,000 backlog (`BENCH_DISPATCH_MESSAGES`), and the
 * tuned and claims-table rows when asked for. MariaDB: defaults and the hand-written relay on a
 * smaller backlog (`BENCH_DISPATCH_MARIADB_MESSAGES`), to keep the whole bench within its time
 * budget.
 */
function plans(): Partial<Record<DatabaseKind, DispatchPlan>> {
  const tuned: Variant[] = TUNED
    ? [
        {
          name: `1 instance, batchSize ${TUNED[0]}, dispatchConcurrency ${TUNED[1]}`,
          instances: 1,
          outbox: { batchSize: TUNED[0], dispatchConcurrency: TUNED[1] },
        },
      ]
    : [];
  const openTelemetry: Variant[] =
    OPEN_TELEMETRY_RUNS > 0
      ? [{ name: '1 instance, defaults, OpenTelemetry SDK (metrics + traces)', instances: 1, outbox: {}, openTelemetry: true, runs: OPEN_TELEMETRY_RUNS }]
      : [];
  return {
    postgres: {
      messages: Number(process.env.BENCH_DISPATCH_MESSAGES ?? 100_000),
      variants: [
        DEFAULTS,
        HAND_WRITTEN,
        ...(RELAY_CLAIMS_TABLE ? [HAND_WRITTEN_CLAIMS_TABLE] : []),
        ...openTelemetry,
        ...tuned,
        { name: '2 instances, defaults', instances: 2, outbox: {} },
      ],
    },
    mariadb: {
      messages: Number(process.env.BENCH_DISPATCH_MARIADB_MESSAGES ?? 15_000),
      variants: [DEFAULTS, HAND_WRITTEN],
    },
  };
}

/** Whatever drains the backlog: CPU it uses from the meter's start, and what to show when it is stuck. */
interface Senders {
  meter(): () => number | undefined;
  diagnostics(): string;
}

/** CPU µs of this process since the call. */
function ownCpu(): () => number {
  const before = process.cpuUsage();
  return () => {
    const used = process.cpuUsage(before);
    return used.user + used.system;
  };
}

/** One drain: messages/s from the backlog's commit until every row is DONE, and the wake-up delay. */
interface Drain {
  rate: number;
  firstClaimMs: number;
  /** Messages/s from the first claim on. */
  rateAfterFirstClaim: number;
  cpu: CpuPerMessage;
}

/** CPU µs per message of each side of a drain, where /proc can tell. */
interface CpuPerMessage {
  sender?: number;
  database?: number;
  broker?: number;
}

/**
 * Drains a backlog of PENDING outbox rows to RabbitMQ (durable queue, persistent messages,
 * publisher confirms, `mandatory`), timed from the commit of the backlog until every row is DONE,
 * against plain amqplib publishing as many messages through a confirm channel with at most 1,000
 * unconfirmed; on each database in turn.
 *
 * Dispatchers run as child processes (`test/fixtures/dispatcher-process.ts`): golevelup's
 * connection registry is process-wide. Each variant's processes are started once and drain
 * `RUNS` backlogs. A baseline run precedes each variant's block, and where a database has fewer
 * variants than `RUNS`, also the block's later drains, so that every ratio is against the median
 * of at least `RUNS` baseline runs taken beside that database's drains.
 */
export async function benchDispatch(): Promise<DispatchRow[]> {
  const queue = await BenchQueue.declare(EXCHANGE, QUEUE);
  const rows: DispatchRow[] = [];
  try {
    for (const kind of benchDatabases()) {
      const plan = plans()[kind];
      if (plan) rows.push(...(await measureDatabase(testDatabase(NAMESPACE, kind), plan, queue)));
    }
  } finally {
    await queue.close();
  }
  return rows;
}

async function measureDatabase(database: TestDatabase, plan: DispatchPlan, queue: BenchQueue): Promise<DispatchRow[]> {
  const baselineName = `plain amqplib, confirm window ${WINDOW.toLocaleString('en-US')}`;
  const baselines: number[] = [];
  const baselineCpu: CpuPerMessage[] = [];
  const results: Record<string, Drain[]> = {};
  const baselinesPerVariant = Math.ceil(RUNS / plan.variants.length);
  const broker = CpuMeter.ofCommand(SERVER_COMMANDS.rabbitmq);
  const server = CpuMeter.ofCommand(SERVER_COMMANDS[database.kind as keyof typeof SERVER_COMMANDS]);
  const baselineRun = async () => {
    await queue.purge();
    const [brokerUsed, ownCpu] = [broker.start(), process.cpuUsage()];
    baselines.push(await publishConfirmWindow(EXCHANGE, plan.messages, WINDOW));
    const own = process.cpuUsage(ownCpu);
    baselineCpu.push(perMessage({ sender: own.user + own.system, broker: brokerUsed() }, plan.messages));
  };

  await database.reset();
  const backlog = await openOutboxBacklog(database, 'bench-dispatch');
  let children: ChildApp[] = [];
  let relay: HandWrittenRelay | undefined;
  try {
    for (const [index, variant] of plan.variants.entries()) {
      await baselineRun();
      let senders: Senders;
      if (variant.handWritten) {
        relay = await HandWrittenRelay.start(database, variant.handWritten);
        senders = { meter: () => ownCpu(), diagnostics: () => '' };
      } else {
        children = await startDispatchers(database, variant, index === 0);
        const pids = children.map((child) => child.pid);
        senders = { meter: () => CpuMeter.ofPids(pids).start(), diagnostics: () => children.map((c) => c.diagnostics()).join('') };
      }
      for (let run = 0; run < (variant.runs ?? RUNS); run++) {
        if (run > 0 && run < baselinesPerVariant) await baselineRun();
        (results[variant.name] ??= []).push(await drainOnce(backlog, queue, senders, plan.messages, { server, broker }));
      }
      await relay?.stop();
      relay = undefined;
      await Promise.all(children.map((child) => child.stop()));
      if (variant.openTelemetry) reportOpenTelemetry(variant, children);
      children = [];
    }
  } finally {
    await relay?.stop().catch(() => undefined);
    await Promise.all(children.map((child) => child.kill('SIGKILL')));
    await backlog.clear().catch(() => undefined);
    await backlog.close();
  }

  const baseline = summarise(baselines).median;
  const row = (variant: string, rates: number[], cpu: CpuPerMessage[], drains?: Drain[]): DispatchRow => {
    const summary = summarise(rates);
    return {
      database: databaseLabel(database.kind),
      variant,
      backlog: plan.messages.toLocaleString('en-US'),
      messagesPerSecond: formatRate(summary),
      ratio: (summary.median / baseline).toFixed(2),
      firstClaim: drains ? `${formatMs(drains.map((d) => d.firstClaimMs))} (${backlog.wakeup})` : '–',
      afterFirstClaim: drains ? formatRate(summarise(drains.map((d) => d.rateAfterFirstClaim))) : '–',
      cpuPerMessage: formatCpu(cpu),
    };
  };
  return [
    row(baselineName, baselines, baselineCpu),
    ...Object.entries(results).map(([name, drains]) =>
      row(
        name,
        drains.map((d) => d.rate),
        drains.map((d) => d.cpu),
        drains,
      ),
    ),
  ];
}

/**
 * Starts a variant's dispatcher processes. The first process on a freshly reset database starts
 * alone: it creates the table (synchronize), which the others then find; later ones start together.
 */
async function startDispatchers(database: TestDatabase, variant: Variant, firstOnDatabase: boolean): Promise<ChildApp[]> {
  const start = (i: number) => ChildApp.start(`bench-dispatch-${i + 1}`, { database, outbox: variant.outbox, openTelemetry: variant.openTelemetry });
  const first = firstOnDatabase ? [await start(0)] : [];
  const rest = await Promise.all(Array.from({ length: variant.instances - first.length }, (_, i) => start(first.length + i)));
  return [...first, ...rest];
}

/**
 * Seeds `messages` PENDING rows in one transaction (which wakes the dispatchers where the
 * database can) and returns messages/s from that commit until no row is PENDING, FAILED or
 * PROCESSING.
 */
async function drainOnce(
  backlog: OutboxBacklog,
  queue: BenchQueue,
  senders: Senders,
  messages: number,
  meters: { server: CpuMeter; broker: CpuMeter },
): Promise<Drain> {
  await backlog.clear();
  await queue.purge();
  const senderUsed = senders.meter();
  const started = await backlog.seed(EXCHANGE, messages);
  // From the commit on: the seeding INSERT is not the drain's work.
  const [serverUsed, brokerUsed] = [meters.server.start(), meters.broker.start()];
  const deadline = started + DRAIN_TIMEOUT_MS;
  for (;;) {
    if (!(await backlog.busy())) break;
    if (performance.now() > deadline) {
      throw new Error(`backlog not drained within ${DRAIN_TIMEOUT_MS} ms${senders.diagnostics()}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  const elapsedMs = performance.now() - started;
  const cpu = perMessage({ sender: senderUsed(), database: serverUsed(), broker: brokerUsed() }, messages);

  const outcome = await backlog.outcome();
  if (outcome.done !== messages) throw new Error(`expected ${messages} DONE rows, found ${outcome.done} of ${outcome.total}`);
  const queued = await queue.messageCount();
  if (queued < messages) throw new Error(`expected ${messages} messages on ${QUEUE}, found ${queued}`);
  return {
    rate: messages / (elapsedMs / 1000),
    firstClaimMs: outcome.firstClaimMs,
    rateAfterFirstClaim: messages / ((elapsedMs - outcome.firstClaimMs) / 1000),
    cpu,
  };
}

function perMessage(used: CpuPerMessage, messages: number): CpuPerMessage {
  const each = (micros: number | undefined) => (micros === undefined ? undefined : micros / messages);
  return { sender: each(used.sender), database: each(used.database), broker: each(used.broker) };
}

/** Medians of each side's CPU per message, as `sender / database / broker µs`; `–` where /proc could not tell. */
function formatCpu(cpu: CpuPerMessage[]): string {
  const median = (key: keyof CpuPerMessage) => {
    const values = cpu.map((c) => c[key]).filter((v): v is number => v !== undefined);
    return values.length === 0 ? '–' : String(Math.round(summarise(values).median));
  };
  return `${median('sender')} / ${median('database')} / ${median('broker')} µs`;
}

/** Median and spread of millisecond figures. */
function formatMs(values: number[]): string {
  const s = summarise(values);
  return `${Math.round(s.median)} ms (${Math.round(s.min)}–${Math.round(s.max)})`;
}

/**
 * Fails the bench when a variant's SDK recorded no span (it would have measured an untraced
 * dispatcher), else prints what the SDK exported. Each dispatcher prints it after closing.
 */
function reportOpenTelemetry(variant: Variant, children: ChildApp[]): void {
  for (const child of children) {
    const line = /^OPENTELEMETRY (.*)$/m.exec(child.stdout)?.[1];
    const exported = line ? (JSON.parse(line) as { spans: number; metricExports: number }) : undefined;
    if (!exported || exported.spans === 0) throw new Error(`${variant.name}: ${child.name} exported no span${child.diagnostics()}`);
    console.log(`${variant.name}: ${child.name} exported ${exported.spans.toLocaleString('en-US')} spans and ${exported.metricExports} metric collections`);
  }
}
