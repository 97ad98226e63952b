import { randomUUID } from 'node:crypto';
import { DataSource } from 'typeorm';
import { OutboxDialect } from '../lib/dialects/outbox-dialect';
import { qualifiedTable, resolveDialect } from '../lib/dialects/resolve-dialect';
import { CLAIMABLE_SQL, orderingRule } from '../lib/dialects/status-sql';
import { freshSchema, namespaced, sql, testDatabase } from '../test/support/database';
import { createTestApp } from '../test/support/test-app';
import { BENCH_BODY } from './support/broker';
import { statCpuMicros } from './support/proc-stat';
import { summarise } from './support/stats';

/** Prefixed as the test app prefixes it (`TEST_NAMESPACE_PREFIX`), so the raw SQL and the app meet. */
const SCHEMA = namespaced('bench_rewrites');
const ROWS = Number(process.env.BENCH_REWRITES_ROWS ?? 40_000);
const RUNS = Number(process.env.BENCH_RUNS ?? 3);
const BATCH = 500;
/**
 * Claims held before the oldest is settled: 1 claims and settles in turn; the library's 4 loops
 * keep about 4 in flight, which a claim that leaves claimed rows in the claimable index (the
 * claim-table shape) must pass over.
 */
const IN_FLIGHT = Number(process.env.BENCH_REWRITES_IN_FLIGHT ?? 1);
/** How long the lease shape's claim holds a row: far beyond a run, so no claimed row is due again. */
const LEASE_SECONDS = 600;

export interface RowRewritesRow {
  shape: string;
  claimCpuPerRow: string;
  settleCpuPerRow: string;
  ratio: string;
  walPerRow: string;
  hotUpdates: string;
  heapMiB: string;
}

/**
 * What a claim and its settle cost the database a row, by the shape of the outbox table: the
 * library's table as it creates it; the same with half of each page left free
 * (`fillfactor = 50`), so that a row's new version lands on its own page; and, on such pages, a
 * claim that changes no indexed column, which PostgreSQL can make a HOT update (no index entry
 * written). The last is not the library's state machine: its claim leaves `status` PENDING and
 * leases the row through `next_attempt_at`, without the index on `claimed_at` the stuck detector
 * reads. It measures what such a change would buy before anyone makes it.
 *
 * Serial claims of 500 and their settles on one connection, over a 1 KB backlog of `ROWS` rows;
 * the backend's CPU from /proc, the WAL from `pg_current_wal_lsn()`. The first two shapes run the
 * library's own statements (`dialect.claim`, `dialect.settleDone`).
 */
export async function benchRowRewrites(): Promise<RowRewritesRow[]> {
  await freshSchema(SCHEMA);
  const shapes: Shape[] = [
    { name: "the library's table (outbox schema version 3)", table: 'outbox_message', fillfactor: null, claim: 'status' },
    { name: 'the same with fillfactor 50', table: 'outbox_room', fillfactor: 50, claim: 'status' },
    { name: 'fillfactor 50, a claim that changes no indexed column (lease; not the state machine)', table: 'outbox_lease', fillfactor: 50, claim: 'lease' },
    {
      name: 'claims in a table of their own, the row untouched until its settle (not the state machine)',
      table: 'outbox_claimed',
      fillfactor: null,
      claim: 'claims-table',
    },
  ];
  for (const shape of shapes) {
    // The library creates each table (synchronize) as it creates its default one.
    const maker = await createTestApp({ schema: SCHEMA, outbox: { dispatcherEnabled: false, notifyEnabled: false }, statics: { tableName: shape.table } });
    await maker.close();
    if (shape.fillfactor !== null) await sql(`ALTER TABLE ${quotedTable(shape)} SET (fillfactor = ${shape.fillfactor})`);
    if (shape.claim !== 'status') await sql(`DROP INDEX "${SCHEMA}"."IDX_${shape.table}_processing"`);
    if (shape.claim === 'claims-table') {
      // Only claimed rows, a few thousand at most: the stuck detector would read it whole.
      await sql(`CREATE TABLE ${claimsTable(shape)} (
        id bigint PRIMARY KEY, claim_token uuid NOT NULL, claimed_at timestamptz NOT NULL, claimed_by varchar(200))`);
    }
  }
  const dataSource = new DataSource(testDatabase(SCHEMA, 'postgres').dataSourceOptions({ poolSize: 1, sessionName: 'bench-rewrites' }));
  await dataSource.initialize();
  try {
    const dialect = await resolveDialect(dataSource);
    const backend: number = (await dataSource.query('SELECT pg_backend_pid() AS pid'))[0].pid;
    const measured = new Map<Shape, Measure[]>(shapes.map((shape) => [shape, []]));
    for (let run = 0; run < RUNS; run++) {
      for (const shape of shapes) {
        const outbox = dialect.outbox(qualifiedTable(dataSource, shape.table));
        measured.get(shape)!.push(await drain(dataSource, backend, shape, outbox));
      }
    }
    const total = (m: Measure) => m.claimCpu + m.settleCpu;
    const baseline = summarise(measured.get(shapes[0])!.map(total)).median;
    return shapes.map((shape) => {
      const runs = measured.get(shape)!;
      const perRow = (values: number[]) => {
        const s = summarise(values.map((v) => v / ROWS));
        return `${s.median.toFixed(1)} µs (${s.min.toFixed(1)}–${s.max.toFixed(1)})`;
      };
      const last = runs[runs.length - 1];
      return {
        shape: shape.name,
        claimCpuPerRow: perRow(runs.map((m) => m.claimCpu)),
        settleCpuPerRow: perRow(runs.map((m) => m.settleCpu)),
        ratio: (summarise(runs.map(total)).median / baseline).toFixed(2),
        walPerRow: `${Math.round(summarise(runs.map((m) => m.walBytes / ROWS)).median).toLocaleString('en-US')} B`,
        hotUpdates: `${Math.round((100 * last.hotUpdates) / Math.max(1, last.updates))} %`,
        heapMiB: `${last.heapBefore.toFixed(0)} → ${last.heapAfter.toFixed(0)}`,
      };
    });
  } finally {
    await dataSource.destroy();
    await sql(`DROP SCHEMA IF EXISTS "${SCHEMA}" CASCADE`).catch(() => undefined);
  }
}

interface Shape {
  name: string;
  table: string;
  fillfactor: number | null;
  /** What a claim writes: the row's status (the library), a lease on the row, or a row of a claims table. */
  claim: 'status' | 'lease' | 'claims-table';
}

/** The shape's outbox table, qualified and quoted. */
function quotedTable(shape: Shape): string {
  return `"${SCHEMA}"."${shape.table}"`;
}

/** The claims table of the claims-table shape. */
function claimsTable(shape: Shape): string {
  return `"${SCHEMA}"."${shape.table}_claims"`;
}

interface Measure {
  claimCpu: number;
  settleCpu: number;
  walBytes: number;
  updates: number;
  hotUpdates: number;
  heapBefore: number;
  heapAfter: number;
}

/** Seeds the backlog afresh and claims and settles all of it, 500 rows at a time. */
async function drain(dataSource: DataSource, backend: number, shape: Shape, outbox: OutboxDialect): Promise<Measure> {
  const table = quotedTable(shape);
  await sql(`TRUNCATE ${table}`);
  if (shape.claim === 'claims-table') await sql(`TRUNCATE ${claimsTable(shape)}`);
  // Flushed before the seed, as a backlog written since the last checkpoint is: its pages are
  // logged whole once, by the inserts, not again by the claims.
  await sql('CHECKPOINT').catch(() => undefined);
  await sql(
    `INSERT INTO ${table} (message_id, message_type, biz_key, ordering_key, exchange, routing_key, destination, payload, headers, status, max_attempts)
     SELECT gen_random_uuid(), 'bench.rewritten', 'rewrite-' || g, NULL, 'bench_rewrites', 'bench.rewritten', 'bench_rewrites',
            json_build_object('n', g, 'blob', $1::text), '{}', 'PENDING', 10
     FROM generate_series(1, $2::int) AS g`,
    [BENCH_BODY.blob, ROWS],
  );
  await sql(`VACUUM ANALYZE ${table}`);
  const before = await tableState(dataSource, table);
  const cpu = () => {
    const micros = statCpuMicros(`/proc/${backend}/stat`, false);
    // A backend this machine cannot see (a remote server) would read as free: refuse instead.
    if (micros === undefined) throw new Error(`row-rewrites reads the server backend's CPU from /proc/${backend}: run it on the database's machine`);
    return micros;
  };
  let claimCpu = 0;
  let settleCpu = 0;
  let settled = 0;
  const held: { ids: string[]; token: string }[] = [];
  const settleOldest = async () => {
    const { ids, token } = held.shift()!;
    const started = cpu();
    settled += await settle(dataSource, shape, outbox, ids, token);
    settleCpu += cpu() - started;
  };
  for (;;) {
    const token = randomUUID();
    const started = cpu();
    const ids = await claim(dataSource, shape, outbox, token);
    claimCpu += cpu() - started;
    if (ids.length === 0 && held.length === 0) break;
    if (ids.length > 0) held.push({ ids, token });
    if (held.length >= IN_FLIGHT || ids.length === 0) await settleOldest();
  }
  if (settled !== ROWS) throw new Error(`${shape.name}: settled ${settled} of ${ROWS} rows`);
  const after = await tableState(dataSource, table);
  return {
    claimCpu,
    settleCpu,
    walBytes: Number(after.wal) - Number(before.wal),
    updates: after.updates - before.updates,
    hotUpdates: after.hotUpdates - before.hotUpdates,
    heapBefore: before.heapMiB,
    heapAfter: after.heapMiB,
  };
}

async function claim(dataSource: DataSource, shape: Shape, outbox: OutboxDialect, token: string): Promise<string[]> {
  const table = quotedTable(shape);
  if (shape.claim === 'lease') return leaseClaim(dataSource, table, token);
  if (shape.claim === 'claims-table') return claimsTableClaim(dataSource, shape, token);
  return (await outbox.claim(dataSource, BATCH, token, 'bench-rewrites')).map((row) => row.id);
}

async function settle(dataSource: DataSource, shape: Shape, outbox: OutboxDialect, ids: string[], token: string): Promise<number> {
  const table = quotedTable(shape);
  if (shape.claim === 'lease') return leaseSettle(dataSource, table, ids, token);
  if (shape.claim === 'claims-table') return claimsTableSettle(dataSource, shape, ids, token);
  return outbox.settleDone(
    dataSource,
    ids.map((id) => ({ id, claimToken: token })),
  );
}

/**
 * The library's claim, except that the rows stay as they are and the claim is a row of the claims
 * table each: the rows are locked (SKIP LOCKED) while chosen, and a claim another connection
 * committed meanwhile is a key conflict that drops the row from this one.
 */
async function claimsTableClaim(dataSource: DataSource, shape: Shape, token: string): Promise<string[]> {
  const table = quotedTable(shape);
  const claims = claimsTable(shape);
  const rows: { id: string }[] = await dataSource.query(
    `WITH chosen AS MATERIALIZED (
       SELECT c.id FROM ${table} AS c
       WHERE c.transport = 'default' AND c.${CLAIMABLE_SQL} AND c.next_attempt_at <= now() AND ${orderingRule(table, '')}
         AND NOT EXISTS (SELECT 1 FROM ${claims} AS k WHERE k.id = c.id)
       ORDER BY c.id LIMIT $3
       FOR UPDATE OF c SKIP LOCKED),
     taken AS (
       INSERT INTO ${claims} (id, claim_token, claimed_at, claimed_by) SELECT id, $1, now(), $2 FROM chosen
       ON CONFLICT DO NOTHING RETURNING id)
     SELECT t.id, message_id, message_type, exchange, routing_key, destination, payload::text AS payload,
            headers::text AS headers, attempts, max_attempts, ordering_key,
            floor(extract(epoch FROM created_at) * 1000)::float8 AS created_at_ms
     FROM ${table} AS t JOIN taken USING (id)`,
    [token, 'bench-rewrites', BATCH],
  );
  return rows.map((row) => String(row.id));
}

/**
 * DONE, fenced by the claim's row: only rows whose claim is under `token` change, and then their
 * claims are deleted. The rows first, as a relay with several loops must (see
 * `support/relay-stores.ts`): deleting the claims first deadlocks with a claim that chose a row
 * under an older snapshot.
 */
async function claimsTableSettle(dataSource: DataSource, shape: Shape, ids: string[], token: string): Promise<number> {
  const claims = claimsTable(shape);
  const [rows] = await dataSource.query(
    `WITH done AS (
       UPDATE ${quotedTable(shape)} AS t SET status = 'DONE', processed_at = now(), last_error = NULL
       FROM ${claims} AS k WHERE k.id = t.id AND k.claim_token = $2 AND t.id = ANY($1::bigint[]) AND t.${CLAIMABLE_SQL}
       RETURNING t.id)
     DELETE FROM ${claims} WHERE id IN (SELECT id FROM done)
     RETURNING id`,
    [ids, token],
  );
  return (rows as unknown[]).length;
}

/** The library's claim statement, except that the row stays PENDING under a lease instead of becoming PROCESSING. */
async function leaseClaim(dataSource: DataSource, table: string, token: string): Promise<string[]> {
  // An UPDATE … RETURNING through TypeORM's PostgreSQL driver gives [rows, affected].
  const [rows]: [{ id: string }[], number] = await dataSource.query(
    `UPDATE ${table} SET claim_token = $1, claimed_at = now(), claimed_by = $2, next_attempt_at = now() + ${LEASE_SECONDS} * interval '1 second'
     WHERE id IN (
       SELECT c.id FROM ${table} AS c
       WHERE c.transport = 'default' AND c.${CLAIMABLE_SQL} AND c.next_attempt_at <= now() AND ${orderingRule(table, '')}
       ORDER BY c.id LIMIT $3
       FOR UPDATE OF c SKIP LOCKED)
     RETURNING id, message_id, message_type, exchange, routing_key, destination, payload::text AS payload,
               headers::text AS headers, attempts, max_attempts, ordering_key,
               floor(extract(epoch FROM created_at) * 1000)::float8 AS created_at_ms`,
    [token, 'bench-rewrites', BATCH],
  );
  return rows.map((row) => String(row.id));
}

/** The library's settle of one claim's rows, fenced by the lease's token instead of the PROCESSING status. */
async function leaseSettle(dataSource: DataSource, table: string, ids: string[], token: string): Promise<number> {
  const [rows] = await dataSource.query(
    `UPDATE ${table} SET status = 'DONE', processed_at = now(), claim_token = NULL, last_error = NULL
     WHERE id = ANY($1::bigint[]) AND claim_token = $2 AND ${CLAIMABLE_SQL}
     RETURNING id`,
    [ids, token],
  );
  return (rows as unknown[]).length;
}

/** The WAL position, the table's update counters (flushed to the statistics first) and its heap's size. */
async function tableState(dataSource: DataSource, table: string): Promise<{ wal: string; updates: number; hotUpdates: number; heapMiB: number }> {
  await dataSource.query('SELECT pg_stat_force_next_flush()');
  const [row] = await dataSource.query(
    `SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), '0/0')::text AS wal, s.n_tup_upd::int AS updates, s.n_tup_hot_upd::int AS hot,
            pg_relation_size(s.relid)::float8 / 1048576 AS heap
     FROM pg_stat_user_tables AS s WHERE s.relid = $1::regclass`,
    [table],
  );
  return { wal: row.wal, updates: row.updates, hotUpdates: row.hot, heapMiB: row.heap };
}
