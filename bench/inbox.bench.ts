import { RabbitMQModule, RabbitSubscribe } from '@golevelup/nestjs-rabbitmq';
import { ClsPluginTransactional, TransactionHost } from '@nestjs-cls/transactional';
import { TransactionalAdapterTypeOrm } from '@nestjs-cls/transactional-adapter-typeorm';
import { ConsoleLogger, Injectable, Module } from '@nestjs/common';
import { ScheduleModule } from '@nestjs/schedule';
import { Test, TestingModule } from '@nestjs/testing';
import { getDataSourceToken, TypeOrmModule } from '@nestjs/typeorm';
import type { ConsumeMessage } from 'amqplib';
import { ClsModule } from 'nestjs-cls';
import { Pool } from 'pg';
import { DataSource } from 'typeorm';
import { createInboxTableMigration, InboxHandler, OutboxModule } from '../lib';
import { freshSchema, namespaced, sql, testDatabase } from '../test/support/database';
import { AMQP_URL, POSTGRES_URL } from '../test/support/environment';
import { runExclusively } from '../test/support/exclusive-run';
import { BenchBroker, waitForCount } from './support/amqp';
import { formatRate, summarise } from './support/stats';

/** Prefixed as the test app prefixes it (`TEST_NAMESPACE_PREFIX`), so the raw SQL and the app meet. */
const SCHEMA = namespaced('bench_inbox');
const EXCHANGE = 'bench_inbox';
const LIB_QUEUE = 'bench_inbox.library';
const LIB_ROUTING_KEY = 'bench.inbox.library';
const FRAMEWORK_QUEUE = 'bench_inbox.framework';
const FRAMEWORK_ROUTING_KEY = 'bench.inbox.framework';
const RAW_QUEUE = 'bench_inbox.raw';
const RAW_ROUTING_KEY = 'bench.inbox.raw';
const CONSUMER = 'bench-inbox';
/** Messages in the backlog of each run. */
const MESSAGES = Number(process.env.BENCH_INBOX_MESSAGES ?? 10_000);
/** Unacknowledged deliveries the broker hands each consumer (golevelup's default is 10). */
const PREFETCH = Number(process.env.BENCH_INBOX_PREFETCH ?? 50);
/** Connections of the database pool, library (TypeORM `extra.max`) and baseline (`pg.Pool`) alike. */
const POOL_SIZE = Number(process.env.BENCH_INBOX_POOL ?? 10);
const RUNS = Number(process.env.BENCH_RUNS ?? 3);
/** A run that has not drained its backlog by then reports what it managed. */
const RUN_TIMEOUT_MS = Number(process.env.BENCH_INBOX_TIMEOUT_MS ?? 30_000);
const BLOB = 'x'.repeat(960);
/**
 * Adds a diagnostic variant: the hand-written consumer writing the very row the inbox writes
 * (body, headers, its unique keys), separating what the stored row costs from what the
 * framework path costs. Off by default to keep the run short.
 */
const DIAGNOSE = process.env.BENCH_INBOX_DIAGNOSE === '1';
/**
 * Runs only the variants named (`library`, `framework`, `baseline`, `libraryRow`), e.g. one alone
 * for a CPU profile of its path; ratios need `baseline`.
 */
const ONLY = process.env.BENCH_INBOX_VARIANTS?.split(',').map((name) => name.trim());

interface BenchEvent {
  orderId: number;
  blob: string;
}

export interface InboxRow {
  variant: string;
  messagesPerSecond: string;
  ratio: string;
  /** Median seconds to drain the backlog, or how far a run got before its timeout. */
  drain: string;
  /** Median CPU time of the consuming Node process per message (µs): what the 2 cores pay outside PostgreSQL and RabbitMQ. */
  nodeCpuPerMessage: string;
}

/** The handler as a user writes it: one business row through the ambient transaction. */
@Injectable()
class BenchInboxConsumer {
  constructor(private readonly txHost: TransactionHost<TransactionalAdapterTypeOrm>) {}

  @RabbitSubscribe({ exchange: EXCHANGE, routingKey: LIB_ROUTING_KEY, queue: LIB_QUEUE, queueOptions: { durable: true } })
  @InboxHandler({ consumer: CONSUMER })
  async handle(event: BenchEvent, message: ConsumeMessage): Promise<void> {
    await this.txHost.tx.query(`INSERT INTO "${SCHEMA}".bench_effect (order_id, message_id) VALUES ($1, $2)`, [event.orderId, message.properties.messageId]);
  }
}

/**
 * The same stack without the inbox: a golevelup subscriber that dedupes by hand inside a
 * nestjs-cls transaction through TypeORM. What the frameworks cost alone, so that the share of
 * the gap that is the inbox's own shows.
 */
@Injectable()
class BenchFrameworkConsumer {
  constructor(private readonly txHost: TransactionHost<TransactionalAdapterTypeOrm>) {}

  @RabbitSubscribe({ exchange: EXCHANGE, routingKey: FRAMEWORK_ROUTING_KEY, queue: FRAMEWORK_QUEUE, queueOptions: { durable: true } })
  async handle(event: BenchEvent, message: ConsumeMessage): Promise<void> {
    const { messageId } = message.properties;
    await this.txHost.withTransaction(async () => {
      const marked: unknown[] = await this.txHost.tx.query(`${DEDUPE_SQL.minimal} RETURNING message_id`, [CONSUMER, messageId]);
      if (marked.length === 1)
        await this.txHost.tx.query(`INSERT INTO "${SCHEMA}".bench_effect (order_id, message_id) VALUES ($1, $2)`, [event.orderId, messageId]);
    });
  }
}

let appCount = 0;

/**
 * The application as the README wires it (same as test/support/test-app.ts), with the prefetch
 * and pool size set explicitly. Returned compiled but not initialised: golevelup starts
 * consuming in `init()`, which the caller times.
 */
async function compileApp(consumer: typeof BenchInboxConsumer | typeof BenchFrameworkConsumer): Promise<TestingModule> {
  @Module({
    imports: [
      ClsModule.forRoot({
        global: true,
        plugins: [
          new ClsPluginTransactional({
            imports: [TypeOrmModule],
            adapter: new TransactionalAdapterTypeOrm({ dataSourceToken: getDataSourceToken() }),
          }),
        ],
      }),
      TypeOrmModule.forRoot({
        type: 'postgres',
        url: POSTGRES_URL,
        schema: SCHEMA,
        synchronize: true,
        autoLoadEntities: true,
        extra: { max: POOL_SIZE },
      }),
      ScheduleModule.forRoot(),
      RabbitMQModule.forRoot({
        name: `bench-inbox-${++appCount}`,
        uri: AMQP_URL,
        prefetchCount: PREFETCH,
        connectionInitOptions: { wait: true },
      }),
      OutboxModule.forRoot({}),
    ],
    providers: [consumer],
  })
  class BenchInboxModule {}

  return Test.createTestingModule({ imports: [BenchInboxModule] })
    .setLogger(new ConsoleLogger({ logLevels: ['error'] }))
    .compile();
}

const message = (run: number) => (n: number) => ({
  messageId: `inbox-${run}-${n}`,
  type: 'bench.inbox',
  body: { orderId: n, blob: BLOB } satisfies BenchEvent,
});

const businessRows = async () => Number((await sql<{ n: string }>(`SELECT count(*) AS n FROM "${SCHEMA}".bench_effect`))[0].n);

/** Seconds from `startedAt` (epoch ms) to the last business row, and how many rows there are. */
async function finish(startedAt: number): Promise<{ rows: number; seconds: number }> {
  const [row] = await sql<{ n: string; last: Date | null }>(`SELECT count(*) AS n, max(created_at) AS last FROM "${SCHEMA}".bench_effect`);
  return { rows: Number(row.n), seconds: ((row.last?.getTime() ?? Date.now()) - startedAt) / 1000 };
}

/** A fresh schema per run: both variants start on empty tables and indexes. */
async function prepareRun(): Promise<void> {
  await freshSchema(SCHEMA);
  // Not unique: a duplicate effect would show in the count.
  await sql(
    `CREATE TABLE "${SCHEMA}".bench_effect (id bigserial PRIMARY KEY, order_id int NOT NULL, message_id text, created_at timestamptz NOT NULL DEFAULT clock_timestamp())`,
  );
  await sql(
    `CREATE TABLE "${SCHEMA}".raw_inbox (consumer text NOT NULL, message_id text NOT NULL, processed_at timestamptz NOT NULL DEFAULT now(), PRIMARY KEY (consumer, message_id))`,
  );
}

interface RunResult {
  rate: number;
  seconds: number;
  rows: number;
  /** CPU time of this (the consuming) process per message, in µs. */
  cpuPerMessage: number;
}

const cpuMicros = () => {
  const { user, system } = process.cpuUsage();
  return user + system;
};

/** How many rows the run's dedupe table marked (the inbox's DONE rows, or the framework baseline's raw_inbox rows). */
const MARKED_SQL = {
  library: `SELECT count(*) FROM "${SCHEMA}".inbox_message WHERE status = 'DONE'`,
  framework: `SELECT count(*) FROM "${SCHEMA}".raw_inbox`,
};

/** Drains a backlog through the Nest application, with the inbox (`library`) or without it (`framework`). */
async function runApp(broker: BenchBroker, run: number, stack: 'library' | 'framework'): Promise<RunResult> {
  const [queue, routingKey] = stack === 'library' ? [LIB_QUEUE, LIB_ROUTING_KEY] : [FRAMEWORK_QUEUE, FRAMEWORK_ROUTING_KEY];
  await prepareRun();
  await broker.freshQueue(EXCHANGE, queue, routingKey);
  await broker.publishBacklog(EXCHANGE, routingKey, MESSAGES, message(run));
  // Connects and synchronises the schema; consumes nothing yet.
  const app = await compileApp(stack === 'library' ? BenchInboxConsumer : BenchFrameworkConsumer);
  try {
    const startedAt = Date.now();
    const cpuBefore = cpuMicros();
    await app.init();
    await waitForCount(businessRows, MESSAGES, RUN_TIMEOUT_MS, 100);
    const cpu = cpuMicros() - cpuBefore;
    // One statement, so one snapshot: a run cut short by the timeout goes on committing, and a
    // dedupe row commits with its business row.
    const [counts] = await sql<{ rows: string; marked: string; last: Date | null }>(
      `SELECT (SELECT count(*) FROM "${SCHEMA}".bench_effect) AS rows, (SELECT max(created_at) FROM "${SCHEMA}".bench_effect) AS last,
              (${MARKED_SQL[stack]}) AS marked`,
    );
    const rows = Number(counts.rows);
    const marked = Number(counts.marked);
    const seconds = ((counts.last?.getTime() ?? Date.now()) - startedAt) / 1000;
    if (rows > MESSAGES || marked !== rows) throw new Error(`${stack} run ${run}: ${rows} business rows, ${marked} dedupe rows for ${MESSAGES} messages`);
    return { rate: rows / seconds, seconds, rows, cpuPerMessage: cpu / rows };
  } finally {
    await app.close();
  }
}

type BaselineRow = 'minimal' | 'library-row';

/** The dedupe INSERT of the baseline; `library-row` writes what the inbox writes, into its table. */
const DEDUPE_SQL: Record<BaselineRow, string> = {
  minimal: `INSERT INTO "${SCHEMA}".raw_inbox (consumer, message_id) VALUES ($1, $2) ON CONFLICT DO NOTHING`,
  'library-row': `INSERT INTO "${SCHEMA}".inbox_message (consumer, message_id, message_type, biz_key, exchange, routing_key, payload, headers, max_attempts, status, processed_at)
    VALUES ($1, $2, $3, NULL, $4, $5, $6, $7, 10, 'DONE', now()) ON CONFLICT DO NOTHING RETURNING id`,
};

/** consume → transaction(dedupe row ON CONFLICT DO NOTHING, business row) → ack, by hand. */
async function runBaseline(broker: BenchBroker, run: number, shape: BaselineRow): Promise<RunResult> {
  await prepareRun();
  if (shape === 'library-row') {
    // The library's own inbox table, with its constraints and indexes.
    const dataSource = await new DataSource({ type: 'postgres', url: POSTGRES_URL, schema: SCHEMA, migrations: [createInboxTableMigration()] }).initialize();
    await dataSource.runMigrations();
    await dataSource.destroy();
  }
  await broker.freshQueue(EXCHANGE, RAW_QUEUE, RAW_ROUTING_KEY);
  await broker.publishBacklog(EXCHANGE, RAW_ROUTING_KEY, MESSAGES, message(run));
  const pool = new Pool({ connectionString: POSTGRES_URL, max: POOL_SIZE });
  const consumer = await BenchBroker.open();
  const failures: unknown[] = [];
  try {
    await consumer.channel.prefetch(PREFETCH);
    const startedAt = Date.now();
    const cpuBefore = cpuMicros();
    // amqplib ignores what the callback returns: a failure outside the transaction is collected too.
    await consumer.channel.consume(
      RAW_QUEUE,
      (delivery) =>
        void (async () => {
          if (!delivery) return;
          const event = JSON.parse(delivery.content.toString('utf8')) as BenchEvent;
          const client = await pool.connect();
          try {
            await client.query('BEGIN');
            const { messageId, type, headers } = delivery.properties;
            const params =
              shape === 'minimal'
                ? [CONSUMER, messageId]
                : [
                    CONSUMER,
                    messageId,
                    type ?? '',
                    delivery.fields.exchange,
                    delivery.fields.routingKey,
                    delivery.content.toString('utf8'),
                    JSON.stringify(headers ?? {}),
                  ];
            const marked = await client.query(DEDUPE_SQL[shape], params);
            if (marked.rowCount === 1) {
              await client.query(`INSERT INTO "${SCHEMA}".bench_effect (order_id, message_id) VALUES ($1, $2)`, [event.orderId, messageId]);
            }
            await client.query('COMMIT');
            consumer.channel.ack(delivery);
          } catch (error) {
            failures.push(error);
            await client.query('ROLLBACK').catch(() => undefined);
            consumer.channel.nack(delivery, false, true);
          } finally {
            client.release();
          }
        })().catch((error: unknown) => failures.push(error)),
    );
    await waitForCount(businessRows, MESSAGES, RUN_TIMEOUT_MS, 100);
    const cpu = cpuMicros() - cpuBefore;
    const { rows, seconds } = await finish(startedAt);
    if (failures.length > 0) throw new Error(`baseline run ${run}: ${failures.length} failed deliveries, first: ${String(failures[0])}`);
    if (rows > MESSAGES) throw new Error(`baseline run ${run}: ${rows} business rows for ${MESSAGES} messages`);
    return { rate: rows / seconds, seconds, rows, cpuPerMessage: cpu / rows };
  } finally {
    await consumer.close();
    await pool.end();
  }
}

/**
 * Messages/s through a transactional `@InboxHandler` that writes one business row, draining a
 * pre-published backlog of MESSAGES 1 KB JSON messages, against a hand-written amqplib + pg
 * consumer doing the same dedupe-and-write transaction with the same prefetch and pool size.
 * Runs alternate between the two (order flipped each run) on a fresh schema.
 */
export async function benchInbox(): Promise<InboxRow[]> {
  const release = await runExclusively(testDatabase(SCHEMA, 'postgres'), 120_000);
  const broker = await BenchBroker.open();
  type Variant = 'library' | 'framework' | 'baseline' | 'libraryRow';
  const all: Variant[] = ['library', 'framework', 'baseline', 'libraryRow'];
  const variants = all.filter((variant) => (ONLY ? ONLY.includes(variant) : variant !== 'libraryRow' || DIAGNOSE));
  const results: Record<Variant, RunResult[]> = { library: [], framework: [], baseline: [], libraryRow: [] };
  const runners: Record<Variant, (run: number) => Promise<RunResult>> = {
    library: (run) => runApp(broker, run, 'library'),
    framework: (run) => runApp(broker, run, 'framework'),
    baseline: (run) => runBaseline(broker, run, 'minimal'),
    libraryRow: (run) => runBaseline(broker, run, 'library-row'),
  };
  try {
    for (let run = 0; run < RUNS; run++) {
      // Order flipped every run, so drift on a shared machine hits the variants alike.
      for (const variant of run % 2 === 0 ? variants : [...variants].reverse()) results[variant].push(await runners[variant](run));
    }
  } finally {
    await broker.close([LIB_QUEUE, FRAMEWORK_QUEUE, RAW_QUEUE]);
    await sql(`DROP SCHEMA IF EXISTS "${SCHEMA}" CASCADE`).catch(() => undefined);
    await release();
  }

  const baseline = variants.includes('baseline') ? summarise(results.baseline.map((r) => r.rate)).median : NaN;
  const row = (variant: string, runs: RunResult[]): InboxRow => {
    const summary = summarise(runs.map((r) => r.rate));
    const partial = runs.filter((r) => r.rows < MESSAGES);
    const drain = `${summarise(runs.map((r) => r.seconds)).median.toFixed(1)} s`;
    return {
      variant,
      messagesPerSecond: formatRate(summary),
      ratio: (summary.median / baseline).toFixed(2),
      nodeCpuPerMessage: `${Math.round(summarise(runs.map((r) => r.cpuPerMessage)).median)} µs`,
      drain: partial.length
        ? `${drain}; ${partial.length} run(s) stopped at ${RUN_TIMEOUT_MS / 1000} s (${partial.map((r) => r.rows).join(', ')} rows)`
        : drain,
    };
  };
  const names: Record<Variant, string> = {
    library: `@InboxHandler (transactional), prefetch ${PREFETCH}, pool ${POOL_SIZE}`,
    framework: `frameworks alone: golevelup subscriber deduping by hand in a nestjs-cls transaction through TypeORM, prefetch ${PREFETCH}, pool ${POOL_SIZE}`,
    baseline: `hand-written amqplib + pg (dedupe row + business row), prefetch ${PREFETCH}, pool ${POOL_SIZE}`,
    libraryRow: 'diagnostic: hand-written, dedupe row = the inbox row (body, headers, inbox_message table)',
  };
  return variants.map((variant) => row(names[variant], results[variant]));
}

/** For the report: what each run drains. */
export const INBOX_BACKLOG = MESSAGES;
