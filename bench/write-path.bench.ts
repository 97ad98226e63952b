import { INestApplicationContext } from '@nestjs/common';
import { DataSource, EntityManager } from 'typeorm';
import { OutboxService } from '../lib';
import { freshSchema } from '../test/support/database';
import { createTestApp } from '../test/support/test-app';
import { closedLoopRate } from './support/closed-loop';
import { formatRate, summarise } from './support/stats';

const SCHEMA = 'bench_write_path';
const PAYLOAD = { blob: 'x'.repeat(1_000) };
const RUN_MS = Number(process.env.BENCH_RUN_MS ?? 3_000);
const RUNS = Number(process.env.BENCH_RUNS ?? 3);

export interface WritePathRow {
  concurrency: number;
  variant: string;
  txPerSecond: string;
  ratio: string;
}

/**
 * Transactions/s of "business insert + outbox message" through `OutboxService.publish()` against
 * the same transaction with the outbox row inserted by hand-written SQL, measured in the same run
 * on the same pool. Wake-up variants show what NOTIFY costs a writing transaction.
 */
export async function benchWritePath(): Promise<WritePathRow[]> {
  await freshSchema(SCHEMA);
  const apps: Record<string, INestApplicationContext> = {
    'publish(), NOTIFY off': await createTestApp({ schema: SCHEMA, outbox: { dispatcherEnabled: false, notifyEnabled: false } }),
    'publish(), NOTIFY ≤ 1 per 250 ms (default)': await createTestApp({ schema: SCHEMA, outbox: { dispatcherEnabled: false } }),
    'publish(), NOTIFY every transaction': await createTestApp({ schema: SCHEMA, outbox: { dispatcherEnabled: false, notifyMinIntervalMs: 0 } }),
  };
  const dataSource = Object.values(apps)[0].get(DataSource);
  await dataSource.query(`CREATE TABLE IF NOT EXISTS "${SCHEMA}".bench_order (id bigserial PRIMARY KEY, payload json NOT NULL)`);
  const business = (m: EntityManager) => m.query(`INSERT INTO "${SCHEMA}".bench_order (payload) VALUES ($1)`, [JSON.stringify(PAYLOAD)]);
  let n = 0;

  const variants: Record<string, () => Promise<unknown>> = {
    'business insert alone': () => dataSource.transaction(business),
    'hand-written outbox INSERT': () =>
      dataSource.transaction(async (m) => {
        await business(m);
        await m.query(
          `INSERT INTO "${SCHEMA}".outbox_message (message_id, message_type, biz_key, exchange, routing_key, payload, headers, status, max_attempts)
           VALUES (gen_random_uuid(), 'bench.written', $1, 'bench', 'x', $2, '{}', 'PENDING', 10)`,
          [`raw-${++n}`, JSON.stringify(PAYLOAD)],
        );
      }),
  };
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
          await closedLoopRate(concurrency, 300, operation);
          (results[name] ??= []).push(await closedLoopRate(concurrency, RUN_MS, operation));
        }
      }
      const baseline = summarise(results['hand-written outbox INSERT']).median;
      for (const [name, values] of Object.entries(results)) {
        const summary = summarise(values);
        rows.push({ concurrency, variant: name, txPerSecond: formatRate(summary), ratio: (summary.median / baseline).toFixed(2) });
      }
    }
  } finally {
    for (const app of Object.values(apps)) await app.close();
  }
  return rows;
}
