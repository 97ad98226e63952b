import { INestApplicationContext } from '@nestjs/common';
import { OutboxDispatcher } from '../lib/entries/admin';
import { OUTBOX_TRANSPORT } from '../lib/naming/injection-tokens';
import { CapturingOutboxTransport } from '../lib/testing';
import { Client } from 'pg';
import { freshSchema, namespaced } from '../test/support/database';
import { POSTGRES_URL } from '../test/support/environment';
import { createTestApp } from '../test/support/test-app';
import { AllocationProfile } from './support/allocation-profile';
import { BenchQueue } from './support/broker';
import { CpuMeter, SERVER_COMMANDS } from './support/process-cpu';
import { PostgresBacklog } from './support/postgres-backlog';
import { summarise } from './support/stats';

/** Prefixed as the test app prefixes it (`TEST_NAMESPACE_PREFIX`), so the raw SQL and the app meet. */
const SCHEMA = namespaced('bench_dispatch_cycle');
const EXCHANGE = 'bench_dispatch_cycle';
/** Rows per drain: enough claims of the smallest batch to average over, few enough to stay quick. */
const ROWS = Number(process.env.BENCH_CYCLE_ROWS ?? 6_000);
const RUNS = Number(process.env.BENCH_RUNS ?? 3);
/** A steady stream's claims (the latency section at 2,000 msg/s offered averaged 4–6 rows), a busier one's, a backlog's. */
const BATCH_SIZES = (process.env.BENCH_CYCLE_BATCH_SIZES ?? '6,50,500').split(',').map(Number);
const TRANSPORTS = ['RabbitMQ', 'none (test kit capturing transport)'] as const;
/**
 * `BENCH_CYCLE_ALLOCATIONS=/tmp/drain.heapprofile`: after the measured runs, one more drain with
 * the RabbitMQ transport and the largest batch size under V8's sampling heap profiler, garbage
 * included; the profile goes to the file, and the bytes per row and the call sites allocating
 * most are printed. Apart from the runs, whose CPU figures the profiler would inflate.
 */
const ALLOCATIONS_FILE = process.env.BENCH_CYCLE_ALLOCATIONS;

export interface DispatchCycleRow {
  batchSize: number;
  transport: string;
  rowsPerSecond: string;
  cpuPerRow: string;
  cpuPerClaim: string;
  /** PostgreSQL's processes, per row: the claims and settles as the server pays for them. */
  databaseCpuPerRow: string;
}

/**
 * What one claim → send → settle cycle costs the dispatcher, by batch size: the same PostgreSQL
 * backlog drained by `OutboxDispatcher.drain()` in this process (defaults otherwise, 4 loops),
 * CPU time of this process per row. With the RabbitMQ transport, and with the test kit's
 * capturing transport, which sends nowhere: the database side and the bookkeeping alone. A
 * claim's fixed cost is what makes the small batches of a steady stream dear (see
 * `bench/results/steady-rate.md`).
 */
export async function benchDispatchCycle(): Promise<DispatchCycleRow[]> {
  await freshSchema(SCHEMA);
  const queue = await BenchQueue.declare(EXCHANGE, EXCHANGE);
  const apps: INestApplicationContext[] = [];
  const backlog = await PostgresBacklog.open(SCHEMA, 'bench-dispatch-cycle');
  // A session that lives through the runs: a backend exiting as a run starts would spoil its CPU reading.
  const vacuum = new Client({ connectionString: POSTGRES_URL, application_name: 'bench-dispatch-cycle-vacuum' });
  await vacuum.connect();
  try {
    // Every app on the same table, none dispatching on its own (no polling, no wake-ups): each
    // drains only when told, so the variants can alternate run by run.
    const variants: { batchSize: number; transport: (typeof TRANSPORTS)[number]; dispatcher: OutboxDispatcher; capturing?: CapturingOutboxTransport }[] = [];
    for (const batchSize of BATCH_SIZES) {
      for (const transport of TRANSPORTS) {
        const app = await createTestApp({
          schema: SCHEMA,
          outbox: { dispatcherEnabled: false, batchSize },
          statics: transport === 'RabbitMQ' ? undefined : { transport: CapturingOutboxTransport },
        });
        apps.push(app);
        const capturing = transport === 'RabbitMQ' ? undefined : app.get<CapturingOutboxTransport>(OUTBOX_TRANSPORT);
        variants.push({ batchSize, transport, dispatcher: app.get(OutboxDispatcher), capturing });
      }
    }
    const database = CpuMeter.ofCommand(SERVER_COMMANDS.postgres);
    const cpuPerRow = new Map<string, number[]>();
    const databaseCpuPerRow = new Map<string, number[]>();
    const rates = new Map<string, number[]>();
    const key = (v: { batchSize: number; transport: string }) => `${v.batchSize}|${v.transport}`;
    for (let run = -1; run < RUNS; run++) {
      for (const variant of variants) {
        await backlog.clear();
        await backlog.seed(EXCHANGE, ROWS);
        // Dead row versions of the last drain would make this one's claims walk past them.
        await vacuum.query(`VACUUM ANALYZE "${SCHEMA}".outbox_message`);
        const databaseCpu = database.start();
        const cpuBefore = process.cpuUsage();
        const started = performance.now();
        const claimed = await variant.dispatcher.drain();
        const elapsed = performance.now() - started;
        const cpu = process.cpuUsage(cpuBefore);
        const databaseMicros = databaseCpu();
        if (claimed !== ROWS) throw new Error(`drained ${claimed} of ${ROWS} rows (batch ${variant.batchSize}, ${variant.transport})`);
        await queue.purge();
        // The capturing transport keeps every message it was given.
        variant.capturing?.clear();
        // The first round warms every variant up and is not counted.
        if (run < 0) continue;
        append(cpuPerRow, key(variant), (cpu.user + cpu.system) / ROWS);
        append(rates, key(variant), ROWS / (elapsed / 1000));
        if (databaseMicros !== undefined) append(databaseCpuPerRow, key(variant), databaseMicros / ROWS);
      }
    }
    if (ALLOCATIONS_FILE) {
      const largest = variants.filter((v) => v.transport === 'RabbitMQ').sort((a, b) => b.batchSize - a.batchSize)[0];
      await backlog.clear();
      await backlog.seed(EXCHANGE, ROWS);
      await vacuum.query(`VACUUM ANALYZE "${SCHEMA}".outbox_message`);
      const profile = await AllocationProfile.start(ALLOCATIONS_FILE);
      await largest.dispatcher.drain();
      const { bytes, sites } = await profile.stop();
      await queue.purge();
      console.log(
        `heap allocated per row, batch ${largest.batchSize}, RabbitMQ: ${Math.round(bytes / ROWS).toLocaleString('en-US')} B (profile: ${ALLOCATIONS_FILE})`,
      );
      for (const { site, bytes: siteBytes } of sites) console.log(`${String(Math.round(siteBytes / ROWS)).padStart(7)} B  ${site}`);
    }
    return variants.map((variant) => {
      const cpu = summarise(cpuPerRow.get(key(variant))!);
      const rate = summarise(rates.get(key(variant))!);
      return {
        batchSize: variant.batchSize,
        transport: variant.transport,
        rowsPerSecond: `${Math.round(rate.median).toLocaleString('en-US')} (${Math.round(rate.min)}–${Math.round(rate.max)})`,
        cpuPerRow: `${Math.round(cpu.median)} µs (${Math.round(cpu.min)}–${Math.round(cpu.max)})`,
        cpuPerClaim: `${Math.round(cpu.median * variant.batchSize).toLocaleString('en-US')} µs`,
        databaseCpuPerRow: databaseCpuPerRow.has(key(variant)) ? `${Math.round(summarise(databaseCpuPerRow.get(key(variant))!).median)} µs` : '–',
      };
    });
  } finally {
    for (const app of apps) await app.close();
    await backlog.close();
    await vacuum.end();
    await queue.close();
  }
}

function append(runs: Map<string, number[]>, key: string, value: number): void {
  const values = runs.get(key);
  if (values) values.push(value);
  else runs.set(key, [value]);
}
