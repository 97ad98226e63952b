import { Client } from 'pg';
import { POSTGRES_URL } from '../../test/support/environment';
import { BENCH_BODY } from './broker';
import type { DrainOutcome, OutboxBacklog } from './outbox-backlog';

/** The transport of rows published without one, in the library's default configuration. */
const DEFAULT_TRANSPORT = 'default';

/** One transport's share of a backlog: `count` rows sent by `transport` to `exchange` (also their `destination`). */
export interface BacklogPart {
  transport: string;
  exchange: string;
  count: number;
}

/** Wake-up channel of the library's defaults: the seeding transaction signals it on commit. */
const NOTIFY_CHANNEL = 'nestjs_outbox';

/**
 * `BENCH_DISPATCH_BIZ_KEYS=none` seeds rows without a business key, as publish() writes them when
 * none is given; by default every row has one. PostgreSQL only: there a row without one is in one
 * index fewer (outbox schema version 3, bench/results/schema-v3.md).
 */
const WITH_BIZ_KEYS = process.env.BENCH_DISPATCH_BIZ_KEYS !== 'none';

/**
 * `BENCH_DISPATCH_FILLFACTOR=50` seeds the backlog into pages that keep that share of their room
 * free (the table's fillfactor), so that each claim and settle can put a row's new version on its
 * own page (bench/results/page-room.md); by default the table keeps the library's setting.
 */
const FILLFACTOR = readFillfactor(process.env.BENCH_DISPATCH_FILLFACTOR);

/** PostgreSQL takes 10 to 100; anything else is refused here rather than silently left out of the run. */
function readFillfactor(setting: string | undefined): number | undefined {
  if (setting === undefined || setting === '') return undefined;
  const value = Number(setting);
  if (!Number.isInteger(value) || value < 10 || value > 100)
    throw new Error(`BENCH_DISPATCH_FILLFACTOR must be an integer from 10 to 100, got ${JSON.stringify(setting)}`);
  return value;
}

/** The outbox table of a PostgreSQL schema, seeded with `generate_series`. */
export class PostgresBacklog implements OutboxBacklog {
  readonly wakeup = 'NOTIFY';
  /** The database clock just before the last seed's COMMIT (timestamptz as text). */
  private seededAt = '';

  private constructor(
    private readonly db: Client,
    private readonly table: string,
  ) {}

  static async open(schema: string, sessionName: string): Promise<PostgresBacklog> {
    const db = new Client({ connectionString: POSTGRES_URL, application_name: sessionName });
    await db.connect();
    return new PostgresBacklog(db, `"${schema}".outbox_message`);
  }

  async clear(): Promise<void> {
    await this.db.query(`TRUNCATE ${this.table}`);
  }

  /** As `OutboxBacklog.seed`, the rows for `transport` (the library's default transport unless given). */
  async seed(exchange: string, count: number, transport = DEFAULT_TRANSPORT): Promise<number> {
    return this.seedParts([{ transport, exchange, count }]);
  }

  /**
   * Seeds several transports' rows in one transaction, so that every lane finds its share at the
   * same commit. Resolves to `performance.now()` taken just before COMMIT was sent.
   */
  async seedParts(parts: BacklogPart[]): Promise<number> {
    if (FILLFACTOR !== undefined) await this.db.query(`ALTER TABLE ${this.table} SET (fillfactor = ${FILLFACTOR})`);
    await this.db.query('BEGIN');
    // The columns the library's insert writes, with what publish() would put there.
    for (const { transport, exchange, count } of parts) {
      await this.db.query(
        `INSERT INTO ${this.table} (message_id, message_type, biz_key, ordering_key, exchange, routing_key, destination, transport, payload, headers, status, max_attempts)
         SELECT gen_random_uuid(), 'bench.dispatched', CASE WHEN $6 THEN $5 || g END, NULL, $1, 'bench.dispatched', $1, $4,
                json_build_object('n', g, 'blob', $2::text), '{}', 'PENDING', 10
         FROM generate_series(1, $3::int) AS g`,
        // Business keys unique across the parts (biz_key and type are a unique pair).
        [exchange, BENCH_BODY.blob, count, transport, transport === DEFAULT_TRANSPORT ? 'bench-' : `bench-${transport}-`, WITH_BIZ_KEYS],
      );
    }
    // Inside the transaction, so the planner knows the backlog from the first claim on.
    await this.db.query(`ANALYZE ${this.table}`);
    const { rows } = await this.db.query(`SELECT pg_notify($1, ''), clock_timestamp()::text AS at`, [NOTIFY_CHANNEL]);
    this.seededAt = rows[0].at;
    const started = performance.now();
    await this.db.query('COMMIT');
    return started;
  }

  async busy(): Promise<boolean> {
    // Both probes are served by the library's partial indexes.
    const { rows } = await this.db.query(
      `SELECT EXISTS (SELECT 1 FROM ${this.table} WHERE status IN ('PENDING', 'FAILED'))
           OR EXISTS (SELECT 1 FROM ${this.table} WHERE status = 'PROCESSING') AS busy`,
    );
    return rows[0].busy;
  }

  /** Waits until no row is PENDING, FAILED or PROCESSING; fails after `timeoutMs`. */
  async untilSettled(timeoutMs: number): Promise<void> {
    const deadline = performance.now() + timeoutMs;
    while (await this.busy()) {
      if (performance.now() > deadline) throw new Error(`outbox rows of ${this.table} still unsettled after ${timeoutMs} ms`);
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  }

  async outcome(): Promise<DrainOutcome> {
    const { rows } = await this.db.query(
      `SELECT count(*) FILTER (WHERE status = 'DONE')::int AS done, count(*)::int AS total,
              extract(epoch FROM min(claimed_at) - $1::timestamptz) * 1000 AS first_claim_ms
       FROM ${this.table}`,
      [this.seededAt],
    );
    return { done: rows[0].done, total: rows[0].total, firstClaimMs: Number(rows[0].first_claim_ms) };
  }

  /**
   * Milliseconds from just before the last seed's COMMIT until each transport's last row was
   * settled DONE (database clock), by transport: when each lane finished its share.
   */
  async finishedByTransport(): Promise<Record<string, number>> {
    const { rows } = await this.db.query(
      `SELECT transport, extract(epoch FROM max(processed_at) - $1::timestamptz) * 1000 AS finished_ms
       FROM ${this.table} WHERE status = 'DONE' GROUP BY transport`,
      [this.seededAt],
    );
    return Object.fromEntries(rows.map((row) => [row.transport, Number(row.finished_ms)]));
  }

  async close(): Promise<void> {
    await this.db.end();
  }
}
