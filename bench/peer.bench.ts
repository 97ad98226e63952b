import { ConsumeMessage } from 'amqplib';
import { Client, Pool } from 'pg';
import {
  DatabaseSetup,
  GeneralMessageHandler,
  initializeMessageStorage,
  initializePollingMessageListener,
  PollingListenerConfig,
  StoredTransactionalMessage,
  TransactionalLogger,
} from 'pg-transactional-outbox';
import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { freshSchema, namespaced, sql, testDatabase } from '../test/support/database';
import { POSTGRES_URL } from '../test/support/environment';
import { runExclusively } from '../test/support/exclusive-run';
import { BenchBroker } from './support/amqp';
import { summarise } from './support/stats';

/** Prefixed as the test app prefixes it (`TEST_NAMESPACE_PREFIX`), so the raw SQL and the app meet. */
const SCHEMA = namespaced('bench_peer');
const TABLE = 'outbox';
const NEXT_MESSAGES_FUNCTION = 'next_outbox_messages';
const EXCHANGE = 'bench_peer';
const ROUTING_KEY = 'bench.peer.order_paid';
const SINK_QUEUE = 'bench_peer.sink';
/** Rows waiting when a drain measurement starts (PERFORMANCE.md's figures are for 100k). */
const BACKLOG = Number(process.env.BENCH_PEER_BACKLOG ?? 100_000);
/** Each drain figure is the median of this many consecutive windows after a warm-up. */
const WINDOWS = Number(process.env.BENCH_RUNS ?? 3);
const WINDOW_MS = Number(process.env.BENCH_PEER_WINDOW_MS ?? 4_000);
/**
 * Windows of the variants that move under 100 msg/s (both 'sequential' ones at 10–14 msg/s, the
 * parallel one with documented defaults at ~50): 2 s still counts 20–100 messages per window, and
 * one message more or less (1–5 %) does not move a ratio to the baseline of 0.001–0.007. The time
 * saved keeps the whole bench within its 10-minute budget.
 */
const SLOW_WINDOW_MS = Number(process.env.BENCH_PEER_SLOW_WINDOW_MS ?? 2_000);
/** Offered load and duration of the latency measurement. */
const LATENCY_RATE = Number(process.env.BENCH_PEER_RATE ?? 200);
const LATENCY_MS = Number(process.env.BENCH_PEER_LATENCY_MS ?? 5_000);
/** How long after the last commit a latency run waits for stragglers. */
const LATENCY_GRACE_MS = 3_000;
const BLOB = 'x'.repeat(960);

export interface PeerRow {
  variant: string;
  /** Messages/s relayed to RabbitMQ (broker-confirmed, seen by a consumer) from a backlog. */
  drain: string;
  ratio: string;
  /** Commit → consumed latency at LATENCY_RATE msg/s offered. */
  latency: string;
  note: string;
}

interface Variant {
  name: string;
  settings: Partial<PollingListenerConfig['settings']>;
  concurrency?: 'sequential' | 'parallel';
  /** Length of each drain window. */
  windowMs: number;
  note: string;
}

/**
 * The polling relay configured as the package's README shows for the outbox: its settings
 * object (`dbSchema`, `dbTable`, max-attempts and poisonous-message protection off, which are
 * also its documented outbox defaults) with every polling setting left at its documented
 * default (batch 5, poll 500 ms, lock 5 s), messages stored as `TransactionalMessage`s without
 * `segment`/`concurrency` (so 'sequential'); then tuned as PERFORMANCE.md did. With
 * 'sequential' messages its next-messages function hands out only the oldest unprocessed message
 * per segment, whatever the batch size, so both settings run again with messages stored as
 * `concurrency: 'parallel'`, the mode that lets the batch size apply.
 */
const DEFAULTS = { name: 'documented defaults (batch 5, poll 500 ms)', settings: {} };
const TUNED = { name: 'tuned (batch 100, poll 50 ms)', settings: { nextMessagesBatchSize: 100, nextMessagesPollingIntervalInMs: 50 } };
const VARIANTS: Variant[] = [
  { ...DEFAULTS, windowMs: SLOW_WINDOW_MS, note: "messages stored as its README does: 'sequential' (the default); its poll returns one per segment" },
  { ...TUNED, windowMs: SLOW_WINDOW_MS, note: "messages 'sequential' (the default): the batch size cannot apply" },
  { ...DEFAULTS, concurrency: 'parallel', windowMs: SLOW_WINDOW_MS, note: "messages stored with concurrency 'parallel' (gives up ordering)" },
  { ...TUNED, concurrency: 'parallel', windowMs: WINDOW_MS, note: "messages stored with concurrency 'parallel' (gives up ordering)" },
];

function listenerConfig(variant: Variant): PollingListenerConfig {
  return {
    outboxOrInbox: 'outbox',
    dbListenerConfig: { connectionString: POSTGRES_URL },
    settings: {
      dbSchema: SCHEMA,
      dbTable: TABLE,
      enableMaxAttemptsProtection: false,
      enablePoisonousMessageProtection: false,
      nextMessagesFunctionName: NEXT_MESSAGES_FUNCTION,
      // Defaults to 'public', not to dbSchema: the function lives beside the table here.
      nextMessagesFunctionSchema: SCHEMA,
      ...variant.settings,
    },
  };
}

/** The package's own DDL for a polling outbox: table, next-messages function, indexes. */
async function createPeerSchema(): Promise<void> {
  await freshSchema(SCHEMA);
  const setup = {
    outboxOrInbox: 'outbox' as const,
    database: 'test',
    schema: SCHEMA,
    table: TABLE,
    listenerRole: 'postgres',
    nextMessagesName: NEXT_MESSAGES_FUNCTION,
  };
  const client = new Client({ connectionString: POSTGRES_URL });
  await client.connect();
  try {
    // Its index DDL drops unqualified index names: scope them to this schema.
    await client.query(`SET search_path TO "${SCHEMA}"`);
    await client.query(DatabaseSetup.dropAndCreateTable(setup));
    await client.query(DatabaseSetup.createPollingFunction(setup));
    await client.query(DatabaseSetup.setupPollingIndexes(setup));
    await client.query(`CREATE TABLE "${SCHEMA}".bench_order (id bigserial PRIMARY KEY, status text NOT NULL)`);
  } finally {
    await client.end();
  }
}

/** Fills the outbox with rows as `initializeMessageStorage` writes them, in one statement. */
async function fillBacklog(count: number, concurrency: 'sequential' | 'parallel'): Promise<void> {
  await sql(`TRUNCATE "${SCHEMA}"."${TABLE}"`);
  await sql(
    `INSERT INTO "${SCHEMA}"."${TABLE}" (id, aggregate_type, aggregate_id, message_type, payload, concurrency, created_at)
     SELECT gen_random_uuid(), 'order', n::text, 'order_paid', jsonb_build_object('orderId', n, 'blob', $2::text), $3, clock_timestamp()
     FROM generate_series(1, $1::int) AS n`,
    [count, BLOB, concurrency],
  );
  await sql(`VACUUM ANALYZE "${SCHEMA}"."${TABLE}"`);
}

/** The relay's handler as its README describes a publisher: send, and return only once confirmed. */
function rabbitPublisher(broker: BenchBroker): GeneralMessageHandler {
  return {
    handle: (message: StoredTransactionalMessage) =>
      new Promise<void>((resolve, reject) => {
        broker.channel.publish(
          EXCHANGE,
          ROUTING_KEY,
          Buffer.from(JSON.stringify(message.payload)),
          { messageId: message.id, type: message.messageType, persistent: true, contentType: 'application/json' },
          (error) => (error ? reject(error) : resolve()),
        );
      }),
  };
}

/** Counts and timestamps what reaches the sink queue. */
class Sink {
  received = 0;
  readonly arrivals = new Map<string, number>();
  duplicates = 0;
  private consumerTag?: string;

  constructor(private readonly broker: BenchBroker) {}

  async start(): Promise<void> {
    await this.broker.freshQueue(EXCHANGE, SINK_QUEUE, '#', { durable: false });
    const { consumerTag } = await this.broker.channel.consume(SINK_QUEUE, (message: ConsumeMessage | null) => this.onMessage(message), { noAck: true });
    this.consumerTag = consumerTag;
  }

  private onMessage(message: ConsumeMessage | null): void {
    if (!message) return;
    this.received++;
    const id = message.properties.messageId as string;
    if (this.arrivals.has(id)) this.duplicates++;
    else this.arrivals.set(id, performance.now());
  }

  reset(): void {
    this.received = 0;
    this.duplicates = 0;
    this.arrivals.clear();
  }

  async stop(): Promise<void> {
    if (this.consumerTag) await this.broker.channel.cancel(this.consumerTag).catch(() => undefined);
  }
}

/**
 * Counts the package's warnings and errors instead of printing them (its error lines carry whole
 * payloads). Only those logged while measuring are reported: shutting a listener down fails
 * the handlers still in flight, which is not what is measured.
 */
class CountingLogger {
  warnings = 0;
  errors = 0;
  measuring = false;
  /** The first few distinct texts logged, with the cause's message where there is one. */
  readonly samples = new Set<string>();

  create(): TransactionalLogger {
    const noop = () => undefined;
    const record = (kind: 'errors' | 'warnings') => (first: unknown, text?: unknown) => {
      if (!this.measuring) return;
      this[kind]++;
      const cause = first instanceof Error ? `: ${(first as Error & { innerError?: Error }).innerError?.message ?? first.message}` : '';
      if (this.samples.size < 1) this.samples.add(`${String(text ?? '').replace(/ \S*[0-9a-f]{8}-[0-9a-f-]{27}\S*/g, '')}${cause}`.slice(0, 160));
    };
    return {
      level: 'warn',
      fatal: record('errors'),
      error: record('errors'),
      warn: record('warnings'),
      info: noop,
      debug: noop,
      trace: noop,
      silent: noop,
    };
  }

  describe(): string {
    if (!this.errors && !this.warnings) return '';
    return `; the package logged ${this.errors} error(s), ${this.warnings} warning(s), e.g. "${[...this.samples][0]}"`;
  }
}

/** Stops a listener; its shutdown does not wait for handlers in flight, so give them a moment to fail. */
async function stopListener(shutdown: () => Promise<void>, logger: CountingLogger): Promise<void> {
  logger.measuring = false;
  await shutdown();
  await sleep(300);
}

interface Latency {
  /** Messages/s that reached the consumer during the offered period (LATENCY_RATE if it kept up). */
  throughput: number;
  p50: number;
  p99: number;
  max: number;
  sent: number;
  missing: number;
  duplicates: number;
}

interface VariantResult {
  /** Messages/s in each window of the drain. */
  drain: number[];
  latency: Latency;
}

/**
 * One listener per variant, warmed up on an empty table first: the package's default batch-size
 * strategy asks for one message per poll for its first `nextMessagesBatchSize` polls (a
 * poison-message guard), which on a large backlog is a slow start of its own (reported apart,
 * see the bench's notes); warmed up, the figures are its steady state.
 * Then: BACKLOG rows committed at once, drained for WINDOWS × the variant's window; then the table emptied
 * and LATENCY_RATE transactions/s offered (business row + outbox message through the package's
 * `initializeMessageStorage`, as its README does) for LATENCY_MS, open loop, measuring COMMIT
 * returned → message consumed from RabbitMQ.
 */
async function measureVariant(variant: Variant, publisher: GeneralMessageHandler, sink: Sink, logger: CountingLogger): Promise<VariantResult> {
  const concurrency = variant.concurrency ?? 'sequential';
  const config = listenerConfig(variant);
  await sql(`TRUNCATE "${SCHEMA}"."${TABLE}", "${SCHEMA}".bench_order`);
  const [shutdown] = initializePollingMessageListener(config, publisher, logger.create());
  const pool = new Pool({ connectionString: POSTGRES_URL, max: 10 });
  try {
    // The listener is polling the empty table after two of its intervals.
    const interval = variant.settings.nextMessagesPollingIntervalInMs ?? 500;
    await sleep(interval * 2 + 500);

    // Drain: the backlog appears in one commit, as after a broker outage.
    await fillBacklog(BACKLOG, concurrency);
    await sleep(1_000);
    sink.reset();
    logger.measuring = true;
    const drain: number[] = [];
    for (let w = 0; w < WINDOWS; w++) {
      const before = sink.arrivals.size;
      const started = performance.now();
      await sleep(variant.windowMs);
      drain.push((sink.arrivals.size - before) / ((performance.now() - started) / 1000));
    }
    logger.measuring = false;

    // Latency, on an empty table, with the same (warm) listener.
    await sql(`TRUNCATE "${SCHEMA}"."${TABLE}", "${SCHEMA}".bench_order`);
    await sql(`ANALYZE "${SCHEMA}"."${TABLE}"`);
    await sleep(500); // deliveries of the drain still in flight
    sink.reset();
    logger.measuring = true;
    const latency = await offerLoad(pool, config, concurrency, sink, logger);
    return { drain, latency };
  } finally {
    await stopListener(shutdown, logger);
    await pool.end();
  }
}

async function offerLoad(
  pool: Pool,
  config: PollingListenerConfig,
  concurrency: 'sequential' | 'parallel',
  sink: Sink,
  logger: CountingLogger,
): Promise<Latency> {
  const store = initializeMessageStorage(config, logger.create());
  const committed = new Map<string, number>();
  const write = async () => {
    const client = await pool.connect();
    try {
      await client.query('BEGIN');
      const order = await client.query<{ id: string }>(`INSERT INTO "${SCHEMA}".bench_order (status) VALUES ('PAID') RETURNING id`);
      const id = randomUUID();
      const orderId = order.rows[0].id;
      await store({ id, aggregateType: 'order', aggregateId: orderId, messageType: 'order_paid', payload: { orderId, blob: BLOB }, concurrency }, client);
      await client.query('COMMIT');
      committed.set(id, performance.now());
    } catch (error) {
      await client.query('ROLLBACK').catch(() => undefined);
      throw error;
    } finally {
      client.release();
    }
  };
  const inFlight = new Set<Promise<void>>();
  const started = performance.now();
  const total = Math.round((LATENCY_RATE * LATENCY_MS) / 1000);
  for (let issued = 0; issued < total;) {
    const due = Math.min(total, Math.floor(((performance.now() - started) / 1000) * LATENCY_RATE));
    for (; issued < due; issued++) {
      const p = write().finally(() => inFlight.delete(p));
      inFlight.add(p);
    }
    await sleep(2);
  }
  await Promise.all(inFlight);
  const throughput = sink.arrivals.size / ((performance.now() - started) / 1000);
  const deadline = performance.now() + LATENCY_GRACE_MS;
  while (sink.arrivals.size < committed.size && performance.now() < deadline) await sleep(20);

  // A message never consumed counts as infinitely late, so percentiles are over all committed.
  const latencies = [...committed].map(([id, at]) => (sink.arrivals.get(id) ?? Infinity) - at).sort((a, b) => a - b);
  const pick = (q: number) => latencies[Math.min(latencies.length - 1, Math.floor(q * latencies.length))] ?? NaN;
  const missing = latencies.filter((l) => l === Infinity).length;
  return { throughput, p50: pick(0.5), p99: pick(0.99), max: pick(1), sent: committed.size, missing, duplicates: sink.duplicates };
}

/**
 * Hand-written relay over the same table, for scale: claim 250 unprocessed rows
 * (`FOR UPDATE SKIP LOCKED`, oldest first), publish them with a window of confirms, mark them
 * processed, commit; one loop, no LISTEN.
 */
async function measureBaselineDrain(broker: BenchBroker, sink: Sink): Promise<number[]> {
  await fillBacklog(BACKLOG, 'sequential');
  sink.reset();
  const client = new Client({ connectionString: POSTGRES_URL });
  await client.connect();
  const signal = { stopped: false };
  const loop = (async () => {
    while (!signal.stopped) {
      await client.query('BEGIN');
      const { rows } = await client.query<{ id: string; message_type: string; payload: unknown }>(
        `SELECT id, message_type, payload FROM "${SCHEMA}"."${TABLE}" WHERE processed_at IS NULL AND abandoned_at IS NULL
         ORDER BY created_at LIMIT 250 FOR UPDATE SKIP LOCKED`,
      );
      for (const row of rows) {
        broker.channel.publish(EXCHANGE, ROUTING_KEY, Buffer.from(JSON.stringify(row.payload)), {
          messageId: row.id,
          type: row.message_type,
          persistent: true,
          contentType: 'application/json',
        });
      }
      await broker.channel.waitForConfirms();
      await client.query(`UPDATE "${SCHEMA}"."${TABLE}" SET processed_at = clock_timestamp(), finished_attempts = finished_attempts + 1 WHERE id = ANY($1)`, [
        rows.map((r) => r.id),
      ]);
      await client.query('COMMIT');
      if (rows.length === 0) await sleep(50);
    }
  })();
  try {
    await sleep(500);
    const rates: number[] = [];
    for (let w = 0; w < WINDOWS; w++) {
      const before = sink.arrivals.size;
      const started = performance.now();
      await sleep(1_500);
      rates.push((sink.arrivals.size - before) / ((performance.now() - started) / 1000));
    }
    return rates;
  } finally {
    signal.stopped = true;
    await loop.catch(() => undefined);
    await client.end();
  }
}

const ms = (v: number) => (Number.isNaN(v) ? '–' : v === Infinity ? 'never' : `${v < 10 ? v.toFixed(1) : Math.round(v).toLocaleString('en-US')} ms`);
const rate = (values: number[]) => {
  const s = summarise(values);
  const digits = s.median < 100 ? 1 : 0;
  return `${s.median.toFixed(digits)} (${s.min.toFixed(digits)}–${s.max.toFixed(digits)})`;
};

/**
 * The peer library pg-transactional-outbox 0.5.7 (polling relay) on this machine: drain rate
 * of a BACKLOG-row outbox into RabbitMQ (publisher confirms) and commit → consume latency at
 * LATENCY_RATE msg/s, with documented defaults and tuned; a hand-written relay over the same
 * table in the same run for the ratio.
 */
export async function benchPeer(): Promise<PeerRow[]> {
  const release = await runExclusively(testDatabase(SCHEMA, 'postgres'), 120_000);
  const broker = await BenchBroker.open();
  const sink = new Sink(broker);
  const rows: PeerRow[] = [];
  try {
    await createPeerSchema();
    await sink.start();
    const publisher = rabbitPublisher(broker);
    const baseline = await measureBaselineDrain(broker, sink);
    const baselineMedian = summarise(baseline).median;
    for (const variant of VARIANTS) {
      const logger = new CountingLogger();
      const { drain, latency } = await measureVariant(variant, publisher, sink, logger);
      const kept =
        latency.throughput >= LATENCY_RATE * 0.95 ? '' : ` (fell behind: ${Math.round(latency.throughput)} msg/s consumed while ${LATENCY_RATE} were offered)`;
      const lost = latency.missing ? `; ${latency.missing} of ${latency.sent} not consumed ${LATENCY_GRACE_MS / 1000} s after the last commit ('never')` : '';
      const dup = latency.duplicates ? `; ${latency.duplicates} delivered twice` : '';
      rows.push({
        variant: `pg-transactional-outbox 0.5.7, ${variant.name}${variant.concurrency === 'parallel' ? ', parallel messages' : ''}`,
        drain: rate(drain),
        ratio: (summarise(drain).median / baselineMedian).toFixed(3),
        latency: `p50 ${ms(latency.p50)}, p99 ${ms(latency.p99)}, max ${ms(latency.max)}${kept}${lost}${dup}`,
        note: `${variant.note}; drain over ${WINDOWS} × ${variant.windowMs / 1000} s${logger.describe()}`,
      });
    }
    rows.push({
      variant: 'hand-written relay on the same table (claim 250 SKIP LOCKED, confirm window, one UPDATE)',
      drain: rate(baseline),
      ratio: '1.000',
      latency: 'not measured',
      note: 'baseline',
    });
  } finally {
    await sink.stop();
    await broker.close([SINK_QUEUE]);
    await sql(`DROP SCHEMA IF EXISTS "${SCHEMA}" CASCADE`).catch(() => undefined);
    await release();
  }
  return rows;
}
