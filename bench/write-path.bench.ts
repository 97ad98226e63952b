import { INestApplicationContext } from '@nestjs/common';
import { DataSource, EntityManager } from 'typeorm';
import { OutboxModuleOptionsInput, OutboxService } from '../lib';
import { DatabaseKind, TestDatabase, testDatabase } from '../test/support/database';
import { createTestApp } from '../test/support/test-app';
import { benchDatabases, databaseLabel } from './support/bench-databases';
import { closedLoopRate } from './support/closed-loop';
import { formatRate, summarise } from './support/stats';
import { writePathStatements } from './support/write-path-statements';

const NAMESPACE = 'bench_write_path';
const PAYLOAD = { blob: 'x'.repeat(1_000) };
const RUNS = Number(process.env.BENCH_RUNS ?? 3);
const WARMUP_MS = 300;
const BASELINE = 'hand-written outbox INSERT';

export interface WritePathRow {
  database: string;
  runs: string;
  concurrency: number;
  variant: string;
  txPerSecond: string;
  ratio: string;
}

/** What is measured on one database. */
interface WritePathPlan {
  runMs: number;
  /** Also measure the business insert alone, for scale (`BENCH_WRITE_BUSINESS_ALONE=1`: not in the time budget). */
  businessAlone: boolean;
  /** The publish() variants: name → options of the outbox module that runs it (the dispatcher is off in all). */
  publishers: Record<string, OutboxModuleOptionsInput>;
}

/**
 * PostgreSQL: wake-up variants show what NOTIFY costs a writing transaction. MariaDB has no
 * NOTIFY, so one publish() variant. The business insert alone is measured only on request, to
 * keep the whole bench within its time budget.
 */
const PLANS: Partial<Record<DatabaseKind, WritePathPlan>> = {
  postgres: {
    runMs: Number(process.env.BENCH_RUN_MS ?? 2_000),
    businessAlone: process.env.BENCH_WRITE_BUSINESS_ALONE === '1',
    publishers: {
      'publish(), NOTIFY off': { notifyEnabled: false },
      'publish(), NOTIFY ≤ 1 per 250 ms (default)': {},
      'publish(), NOTIFY every transaction': { notifyMinIntervalMs: 0 },
    },
  },
  mariadb: {
    runMs: Number(process.env.BENCH_MARIADB_RUN_MS ?? 2_000),
    businessAlone: false,
    publishers: { 'publish() (no NOTIFY on MariaDB)': {} },
  },
};

/**
 * Transactions/s of "business insert + outbox message" through `OutboxService.publish()` against
 * the same transaction with the outbox row inserted by hand-written SQL, measured in the same run
 * on the same pool size, on each database in turn.
 */
export async function benchWritePath(): Promise<WritePathRow[]> {
  const rows: WritePathRow[] = [];
  for (const kind of benchDatabases()) {
    const plan = PLANS[kind];
    if (plan) rows.push(...(await measureDatabase(testDatabase(NAMESPACE, kind), plan)));
  }
  return rows;
}

async function measureDatabase(database: TestDatabase, plan: WritePathPlan): Promise<WritePathRow[]> {
  await database.reset();
  const apps: Record<string, INestApplicationContext> = {};
  for (const [name, outbox] of Object.entries(plan.publishers)) {
    apps[name] = await createTestApp({ database, outbox: { dispatcherEnabled: false, ...outbox } });
  }
  const statements = writePathStatements(database);
  const dataSource = Object.values(apps)[0].get(DataSource);
  await dataSource.query(statements.createBusinessTable);
  const business = (m: EntityManager) => m.query(...statements.businessInsert(JSON.stringify(PAYLOAD)));
  let n = 0;

  const variants: Record<string, () => Promise<unknown>> = {};
  if (plan.businessAlone) variants['business insert alone'] = () => dataSource.transaction(business);
  variants[BASELINE] = () =>
    dataSource.transaction(async (m) => {
      await business(m);
      await m.query(...statements.outboxInsert(`raw-${++n}`, JSON.stringify(PAYLOAD)));
    });
  for (const [name, app] of Object.entries(apps)) {
    const appDataSource = app.get(DataSource);
    const outbox = app.get(OutboxService);
    variants[name] = () =>
      appDataSource.transaction(async (m) => {
        await business(m);
        await outbox.publish({ type: 'bench.written', exchange: 'bench', routingKey: 'x', bizKey: `lib-${++n}`, payload: PAYLOAD }, { manager: m });
      });
  }

  const rows: WritePathRow[] = [];
  try {
    for (const concurrency of [1, 8]) {
      const results: Record<string, number[]> = {};
      // Interleave variants run by run so drift on a shared machine hits them alike.
      for (let run = 0; run < RUNS; run++) {
        for (const [name, operation] of Object.entries(variants)) {
          await closedLoopRate(concurrency, WARMUP_MS, operation);
          (results[name] ??= []).push(await closedLoopRate(concurrency, plan.runMs, operation));
        }
      }
      const baseline = summarise(results[BASELINE]).median;
      for (const [name, values] of Object.entries(results)) {
        const summary = summarise(values);
        rows.push({
          database: databaseLabel(database.kind),
          runs: `${RUNS} × ${plan.runMs / 1000} s`,
          concurrency,
          variant: name,
          txPerSecond: formatRate(summary),
          ratio: (summary.median / baseline).toFixed(2),
        });
      }
    }
  } finally {
    for (const app of Object.values(apps)) await app.close();
  }
  return rows;
}
