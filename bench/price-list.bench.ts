import { ChildApp } from '../test/support/child-app';
import { TestDatabase, testDatabase } from '../test/support/database';
import { benchDatabases, databaseLabel } from './support/bench-databases';
import { BenchQueue } from './support/broker';
import { LeanDestination, LeanRelay, LeanRelayCosts } from './support/lean-relay';
import { openOutboxBacklog } from './support/outbox-backlog';
import { CpuMeter, SERVER_COMMANDS } from './support/process-cpu';

const NAMESPACE = 'bench_price_list';
const LIBRARY_NAMESPACE = 'bench_price_list_library';
const DESTINATION: LeanDestination = { exchange: 'bench_price_list', queue: 'bench_price_list' };
/** Rows of each drain: modest, so that the whole list runs in minutes. */
const MESSAGES = Number(process.env.BENCH_PRICE_LIST_MESSAGES ?? 20_000);
/** A drain of this many rows before each measured one, unrecorded: JIT, caches and pools warmed alike for every row. */
const WARM_UP = Math.max(1, Math.round(MESSAGES / 10));
/** Drains of each row; the median is shown. */
const RUNS = Number(process.env.BENCH_PRICE_LIST_RUNS ?? 1);
const DRAIN_TIMEOUT_MS = 120_000;

/** The same broker work as the library's: a topic exchange, `mandatory`. */
const SAME_BROKER_WORK: LeanRelayCosts = { topic: true, mandatory: true };

/** Every cost of the list but the state indexes, at the library's batch and window. */
const ALL_COSTS: LeanRelayCosts = {
  ...SAME_BROKER_WORK,
  headers: true,
  messageIdIndex: true,
  bizKeyIndex: true,
  laneIndex: true,
  claimToken: true,
  extraColumns: true,
  batch: 500,
};

/** One row of the list: the lean relay with `costs`, or the library with `options` over its defaults. */
interface PriceListRow {
  key: string;
  name: string;
  costs?: LeanRelayCosts;
  options?: LibraryOptions;
}

type LibraryOptions = NonNullable<Parameters<typeof ChildApp.start>[1]['outbox']>;

const ROWS: PriceListRow[] = [
  { key: 'lean', name: 'lean relay (default exchange → durable queue, batch 250, window 2,000)', costs: {} },
  { key: 'topic', name: '+ topic exchange', costs: { topic: true } },
  { key: 'mandatory', name: '+ mandatory', costs: { mandatory: true } },
  { key: 'headers', name: "+ the library's headers (type, contentType, attempt, published-at)", costs: { headers: true } },
  { key: 'properties', name: '+ type and contentType only', costs: { headers: 'properties' } },
  { key: 'attempt-header', name: '+ type, contentType and the attempt header', costs: { headers: 'attempt' } },
  { key: 'published-at-header', name: '+ type, contentType and the published-at header', costs: { headers: 'published-at' } },
  { key: 'message-id-index', name: '+ unique message-id index', costs: { messageIdIndex: true } },
  { key: 'bizkey-index', name: '+ unique (bizKey, type) index, every row with a bizKey', costs: { bizKeyIndex: true } },
  { key: 'lane-index', name: '+ lane index (transport leads the claim index)', costs: { laneIndex: true } },
  { key: 'claim-token', name: '+ claim token (claim writes it, settle checks it)', costs: { claimToken: true } },
  { key: 'extra-columns', name: '+ the extra columns (and claim/settle times)', costs: { extraColumns: true } },
  { key: 'state-indexes', name: '+ the extra columns with the processing and ordering indexes', costs: { extraColumns: true, stateIndexes: true } },
  { key: 'batch-500', name: 'batch 500, window 2,000 (4 loops, the library default)', costs: { batch: 500 } },
  { key: 'batch-100', name: 'batch 100, window 2,000', costs: { batch: 100 } },
  { key: 'window-1000', name: 'batch 250, window 1,000', costs: { window: 1_000 } },
  { key: 'same-broker-work', name: 'lean + topic + mandatory (the same broker work as the library)', costs: SAME_BROKER_WORK },
  {
    key: 'all',
    name: 'lean + all of the above (batch 500 × 4)',
    costs: ALL_COSTS,
  },
  { key: 'all-state-indexes', name: 'lean + all of the above + the processing and ordering indexes', costs: { ...ALL_COSTS, stateIndexes: true } },
  { key: 'all-processing-index', name: 'lean + all of the above + the processing index', costs: { ...ALL_COSTS, stateIndexes: 'processing' } },
  { key: 'all-ordering-index', name: 'lean + all of the above + the ordering index', costs: { ...ALL_COSTS, stateIndexes: 'ordering' } },
  { key: 'library', name: 'library, defaults (1 dispatcher process)', options: {} },
  { key: 'library-no-delivery-headers', name: 'library, deliveryHeaders: false', options: { deliveryHeaders: false } },
  // The library's own batch and window curve: its defaults (batch 500 × 4 loops) against the neighbours.
  { key: 'library-250x8', name: 'library, batchSize 250, dispatchConcurrency 8 (window 2,000)', options: { batchSize: 250, dispatchConcurrency: 8 } },
  { key: 'library-1000x2', name: 'library, batchSize 1,000, dispatchConcurrency 2 (window 2,000)', options: { batchSize: 1_000, dispatchConcurrency: 2 } },
  { key: 'library-250x4', name: 'library, batchSize 250, dispatchConcurrency 4 (window 1,000)', options: { batchSize: 250, dispatchConcurrency: 4 } },
  { key: 'library-500x8', name: 'library, batchSize 500, dispatchConcurrency 8 (window 4,000)', options: { batchSize: 500, dispatchConcurrency: 8 } },
];

/** The library's batch and window curve: left out of the list unless named in `BENCH_PRICE_LIST_ROWS`. */
const CURVE_ROWS = ['library-250x8', 'library-1000x2', 'library-250x4', 'library-500x8'];
/** `BENCH_PRICE_LIST_ROWS=lean,same-broker-work,library`: only the rows of those keys, in the list's order. */
const SELECTED_ROWS = selectedRows(process.env.BENCH_PRICE_LIST_ROWS);

function selectedRows(keys: string | undefined): typeof ROWS {
  if (!keys) return ROWS.filter((row) => !CURVE_ROWS.includes(row.key));
  const wanted = keys.split(',').map((key) => key.trim());
  const unknown = wanted.filter((key) => !ROWS.some((row) => row.key === key));
  if (unknown.length > 0) throw new Error(`BENCH_PRICE_LIST_ROWS: no row ${unknown.join(', ')}; the rows are ${ROWS.map((row) => row.key).join(', ')}`);
  return ROWS.filter((row) => wanted.includes(row.key));
}

export interface PriceRow {
  database: string;
  variant: string;
  messagesPerSecond: string;
  /** Against the lean relay's first row in the same run. */
  ofLean: string;
  /** CPU µs per message: the sending process, the database server, the broker (from /proc). */
  cpuPerMessage: string;
}

interface Measured {
  rate: number;
  sender?: number;
  database?: number;
  broker?: number;
}

/**
 * The price list: a lean relay (`support/lean-relay.ts`), then the same relay with one of the
 * library's costs at a time, then the library itself on the same backlog, each a drain of
 * `MESSAGES` rows of ~1 KB to one durable queue, on PostgreSQL and MariaDB. msg/s from the
 * backlog's COMMIT until the last row is settled, and each side's CPU per message.
 */
export async function benchPriceList(): Promise<PriceRow[]> {
  const queue = await BenchQueue.declare(DESTINATION.exchange, DESTINATION.queue);
  const rows: PriceRow[] = [];
  try {
    for (const kind of benchDatabases()) {
      const database = testDatabase(NAMESPACE, kind);
      await database.reset();
      const meters = {
        database: CpuMeter.ofCommand(SERVER_COMMANDS[kind as keyof typeof SERVER_COMMANDS]),
        broker: CpuMeter.ofCommand(SERVER_COMMANDS.rabbitmq),
      };
      const measured: { key: string; name: string; result: Measured }[] = [];
      for (const row of SELECTED_ROWS) {
        const results: Measured[] = [];
        for (let run = 0; run < RUNS; run++) {
          results.push(
            row.costs
              ? await leanDrain(database, row.costs, queue, meters)
              : await libraryDrain(testDatabase(LIBRARY_NAMESPACE, kind), row.options ?? {}, queue, meters),
          );
        }
        measured.push({ key: row.key, name: row.name, result: median(results) });
        console.log(`price-list ${kind}: ${row.name}: ${Math.round(median(results).rate)} msg/s`);
      }
      const lean = measured.find((m) => m.key === 'lean')?.result.rate;
      for (const { name, result } of measured) {
        rows.push({
          database: databaseLabel(kind),
          variant: name,
          messagesPerSecond: Math.round(result.rate).toLocaleString('en-US'),
          ofLean: lean === undefined ? '–' : (result.rate / lean).toFixed(2),
          cpuPerMessage: `${micros(result.sender)} / ${micros(result.database)} / ${micros(result.broker)} µs`,
        });
      }
      const sameBrokerWork = measured.find((m) => m.key === 'same-broker-work')?.result;
      for (const [key, label] of [
        ['library', 'library'],
        ['library-no-delivery-headers', 'library without delivery headers'],
      ]) {
        const library = measured.find((m) => m.key === key)?.result;
        if (!sameBrokerWork || !library) continue;
        rows.push({
          database: databaseLabel(kind),
          variant: `**${label} ÷ lean with the same broker work**`,
          messagesPerSecond: (library.rate / sameBrokerWork.rate).toFixed(2),
          ofLean: '–',
          cpuPerMessage: `database CPU ${ratio(library.database, sameBrokerWork.database)}×, sender ${ratio(library.sender, sameBrokerWork.sender)}×, broker ${ratio(library.broker, sameBrokerWork.broker)}×`,
        });
      }
    }
  } finally {
    await queue.close();
  }
  return rows;
}

type Meters = { database: CpuMeter; broker: CpuMeter };

async function leanDrain(database: TestDatabase, costs: LeanRelayCosts, queue: BenchQueue, meters: Meters): Promise<Measured> {
  const relay = await LeanRelay.start(database, costs, DESTINATION);
  try {
    await relay.seed(WARM_UP);
    while (relay.done < WARM_UP) await new Promise((resolve) => setTimeout(resolve, 5));
    await queue.purge();
    const before = process.cpuUsage();
    const started = await relay.seed(MESSAGES);
    const [databaseUsed, brokerUsed] = [meters.database.start(), meters.broker.start()];
    const deadline = started + DRAIN_TIMEOUT_MS;
    while (relay.done < MESSAGES) {
      if (performance.now() > deadline) throw new Error(`lean relay: ${relay.done} of ${MESSAGES} settled within ${DRAIN_TIMEOUT_MS} ms`);
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
    const elapsed = (performance.now() - started) / 1000;
    const own = process.cpuUsage(before);
    const measured = perMessage(MESSAGES / elapsed, own.user + own.system, databaseUsed(), brokerUsed());
    const left = await relay.unfinished();
    if (left !== 0) throw new Error(`lean relay: ${left} rows not DONE`);
    const queued = await queue.messageCount();
    if (queued < MESSAGES) throw new Error(`lean relay: expected ${MESSAGES} messages on ${DESTINATION.queue}, found ${queued}`);
    return measured;
  } finally {
    await relay.stop();
  }
}

async function libraryDrain(database: TestDatabase, options: LibraryOptions, queue: BenchQueue, meters: Meters): Promise<Measured> {
  await database.reset();
  const backlog = await openOutboxBacklog(database, 'bench-price-list');
  const child = await ChildApp.start('bench-price-list-1', { database, outbox: options });
  try {
    await backlog.seed(DESTINATION.exchange, WARM_UP);
    while (await backlog.busy()) await new Promise((resolve) => setTimeout(resolve, 20));
    await backlog.clear();
    await queue.purge();
    const senderUsed = CpuMeter.ofPids([child.pid]).start();
    const started = await backlog.seed(DESTINATION.exchange, MESSAGES);
    const [databaseUsed, brokerUsed] = [meters.database.start(), meters.broker.start()];
    const deadline = started + DRAIN_TIMEOUT_MS;
    while (await backlog.busy()) {
      if (performance.now() > deadline) throw new Error(`library: backlog not drained within ${DRAIN_TIMEOUT_MS} ms${child.diagnostics()}`);
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    const elapsed = (performance.now() - started) / 1000;
    const measured = perMessage(MESSAGES / elapsed, senderUsed(), databaseUsed(), brokerUsed());
    const outcome = await backlog.outcome();
    if (outcome.done !== MESSAGES) throw new Error(`library: expected ${MESSAGES} DONE rows, found ${outcome.done}`);
    return measured;
  } finally {
    await child.stop().catch(() => child.kill('SIGKILL'));
    await backlog.clear().catch(() => undefined);
    await backlog.close();
  }
}

function perMessage(rate: number, sender: number | undefined, database: number | undefined, broker: number | undefined): Measured {
  const each = (us: number | undefined) => (us === undefined ? undefined : us / MESSAGES);
  return { rate, sender: each(sender), database: each(database), broker: each(broker) };
}

/** The run with the median rate. */
function median(results: Measured[]): Measured {
  return [...results].sort((a, b) => a.rate - b.rate)[Math.floor(results.length / 2)];
}

/**
 * A server's CPU is summed over its processes as /proc lists them at each end of a drain: one
 * that started or ended in between (another client's backend, a broker helper) makes the figure
 * meaningless, at worst negative; it is shown as unknown.
 */
function micros(value: number | undefined): string {
  return value === undefined || value < 0 ? '–' : String(Math.round(value));
}

function ratio(a: number | undefined, b: number | undefined): string {
  return a === undefined || b === undefined || a < 0 || b <= 0 ? '–' : (a / b).toFixed(2);
}
