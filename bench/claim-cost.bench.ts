import { randomUUID } from 'node:crypto';
import { Client } from 'pg';
import { DataSource } from 'typeorm';
import { qualifiedTable, resolveDialect } from '../lib/dialects/resolve-dialect';
import { OutboxDialect } from '../lib/dialects/outbox-dialect';
import { CLAIMABLE_SQL } from '../lib/dialects/status-sql';
import { freshSchema, namespaced, sql } from '../test/support/database';
import { POSTGRES_URL } from '../test/support/environment';
import { createTestApp } from '../test/support/test-app';
import { BENCH_BODY } from './support/broker';
import { summarise } from './support/stats';

/** Prefixed as the test app prefixes it (`TEST_NAMESPACE_PREFIX`), so the raw SQL and the app meet. */
const SCHEMA = namespaced('bench_claim');
/** The library's default table, with only the PENDING backlog. */
const FRESH_TABLE = 'outbox_message';
/** A second outbox table made by the library (`tableName`), with the retained history below the same backlog. */
const RETAINED_TABLE = 'outbox_retained';
const RETAINED = Number(process.env.BENCH_CLAIM_RETAINED ?? 1_000_000);
const PENDING = Number(process.env.BENCH_CLAIM_PENDING ?? 10_000);
const CLAIMS = Number(process.env.BENCH_CLAIM_CLAIMS ?? 50);
const LIMIT = 100;
const WARMUP_CLAIMS = 3;

export interface ClaimCostRow {
  history: string;
  claimMs: string;
  buffers: string;
  plan: string;
  ratio: string;
}

const qualified = (table: string) => `"${SCHEMA}"."${table}"`;

/**
 * Latency of one `dialect.claim()` of 100 rows (then released, so every claim finds the same
 * backlog) with `PENDING` rows waiting: in a table without history, and in one that also
 * retains `RETAINED` finished (DONE) rows of 1 KB below them, as retention keeps a week of
 * them. Two tables, so the claims can alternate between them and drift on a shared machine
 * hits both alike. The partial claim index should make both cost the same; the plan and the
 * buffers one claim touches show whether it does.
 */
export async function benchClaimCost(): Promise<ClaimCostRow[]> {
  await freshSchema(SCHEMA);
  const app = await createTestApp({ schema: SCHEMA, outbox: { dispatcherEnabled: false, notifyEnabled: false } });
  try {
    // The library creates the second table (synchronize) exactly as it creates its default one.
    const maker = await createTestApp({ schema: SCHEMA, outbox: { dispatcherEnabled: false, notifyEnabled: false }, statics: { tableName: RETAINED_TABLE } });
    await maker.close();

    const dataSource = app.get(DataSource);
    const dialect = await resolveDialect(dataSource);
    const fresh = dialect.outbox(qualifiedTable(dataSource, FRESH_TABLE));
    const retained = dialect.outbox(qualifiedTable(dataSource, RETAINED_TABLE));

    await seed(FRESH_TABLE, 'PENDING', PENDING);
    const seedStarted = performance.now();
    // History first: finished rows have the lower ids, as in a table that has been running.
    await seed(RETAINED_TABLE, 'DONE', RETAINED);
    const seedSeconds = (performance.now() - seedStarted) / 1000;
    await seed(RETAINED_TABLE, 'PENDING', PENDING);
    await sql(`ANALYZE ${qualified(FRESH_TABLE)}`);
    const analyzeStarted = performance.now();
    await sql(`ANALYZE ${qualified(RETAINED_TABLE)}`);
    const analyzeSeconds = (performance.now() - analyzeStarted) / 1000;

    const times: [number[], number[]] = [[], []];
    for (let i = 0; i < WARMUP_CLAIMS + CLAIMS; i++) {
      const pair = [await timeClaim(dataSource, fresh), await timeClaim(dataSource, retained)];
      if (i >= WARMUP_CLAIMS) pair.forEach((ms, k) => times[k].push(ms));
    }
    const pending = `${PENDING.toLocaleString('en-US')} PENDING`;
    const rows = [
      { history: `0 DONE rows retained, ${pending}`, summary: summarise(times[0]), ...(await explainClaim(FRESH_TABLE)) },
      {
        history: `${RETAINED.toLocaleString('en-US')} DONE rows retained (seeded in ${seedSeconds.toFixed(1)} s, ANALYZE ${analyzeSeconds.toFixed(1)} s), ${pending}`,
        summary: summarise(times[1]),
        ...(await explainClaim(RETAINED_TABLE)),
      },
    ];
    const baseline = rows[0].summary.median;
    return rows.map((r) => ({
      history: r.history,
      claimMs: `${r.summary.median.toFixed(2)} (${r.summary.min.toFixed(2)}–${r.summary.max.toFixed(2)})`,
      buffers: r.buffers,
      plan: r.plan,
      ratio: (r.summary.median / baseline).toFixed(2),
    }));
  } finally {
    await app.close();
    // The retained history is over 1 GB: do not leave it behind.
    await sql(`DROP SCHEMA IF EXISTS "${SCHEMA}" CASCADE`).catch(() => undefined);
  }
}

/** Inserts `count` rows of `status` with the columns the library's insert writes (DONE ones settled). */
async function seed(table: string, status: 'PENDING' | 'DONE', count: number): Promise<void> {
  await sql(
    `INSERT INTO ${qualified(table)} (message_id, message_type, biz_key, ordering_key, exchange, routing_key, payload, headers, status, max_attempts, processed_at)
     SELECT gen_random_uuid(), 'bench.claimed', $1 || g, NULL, 'bench_claim', 'bench.claimed',
            json_build_object('n', g, 'blob', $2::text), '{}', $3::varchar, 10, CASE WHEN $3::varchar = 'DONE' THEN now() END
     FROM generate_series(1, $4::int) AS g`,
    [`${status.toLowerCase()}-`, BENCH_BODY.blob, status, count],
  );
}

/** Milliseconds of one claim of `LIMIT` rows; the rows are released afterwards (not timed). */
async function timeClaim(dataSource: DataSource, dialect: OutboxDialect): Promise<number> {
  const started = performance.now();
  const claimed = await dialect.claim(dataSource, LIMIT, randomUUID(), 'bench-claim');
  const elapsed = performance.now() - started;
  if (claimed.length !== LIMIT) throw new Error(`claimed ${claimed.length} rows, expected ${LIMIT}`);
  if ((await dialect.release(dataSource, claimed)) !== LIMIT) throw new Error('release did not give back every claimed row');
  return elapsed;
}

/**
 * The claim's row selection as the dialect runs it (EXPLAIN ANALYZE in a transaction rolled
 * back, so nothing stays locked): the scan node and the shared buffers it touched.
 */
async function explainClaim(table: string): Promise<{ buffers: string; plan: string }> {
  const client = new Client({ connectionString: POSTGRES_URL });
  await client.connect();
  try {
    await client.query('BEGIN');
    const { rows } = await client.query(
      `EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON)
       SELECT id FROM ${qualified(table)} WHERE ${CLAIMABLE_SQL} AND next_attempt_at <= now()
       ORDER BY id LIMIT ${LIMIT} FOR UPDATE SKIP LOCKED`,
    );
    await client.query('ROLLBACK');
    const plan = rows[0]['QUERY PLAN'][0].Plan as PlanNode;
    const scan = findScan(plan);
    const blocks = (plan['Shared Hit Blocks'] ?? 0) + (plan['Shared Read Blocks'] ?? 0);
    return {
      buffers: blocks.toLocaleString('en-US'),
      plan: scan ? `${scan['Node Type']}${scan['Index Name'] ? ` using ${scan['Index Name']}` : ''}` : plan['Node Type'],
    };
  } finally {
    await client.end();
  }
}

interface PlanNode {
  'Node Type': string;
  'Index Name'?: string;
  'Shared Hit Blocks'?: number;
  'Shared Read Blocks'?: number;
  Plans?: PlanNode[];
}

function findScan(node: PlanNode): PlanNode | undefined {
  if (/Scan/.test(node['Node Type'])) return node;
  for (const child of node.Plans ?? []) {
    const found = findScan(child);
    if (found) return found;
  }
  return undefined;
}
